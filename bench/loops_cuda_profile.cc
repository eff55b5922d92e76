#include "bench/loops_cuda_profile.h"

#include <memory>
#include <numeric>
#include <utility>

namespace weft::bench {

StatusOr<std::vector<double>> cuda_profile_us(cuda::Executor& ex, int steps) {
  std::vector<double> us(ex.program().code.size(), 0.0);
  for (int s = 0; s < steps; ++s) {
    WEFT_ASSIGN_OR_RETURN(std::vector<double> ms, ex.profile_step());
    for (size_t i = 0; i < us.size() && i < ms.size(); ++i) us[i] += ms[i] * 1e3 / steps;
  }
  return us;
}

BodyTimeFn cuda_body_timer(std::string ptx, std::vector<std::string> symbols, int runs) {
  return [ptx = std::move(ptx), symbols = std::move(symbols), runs](const Program& body) -> StatusOr<double> {
    cuda::ExecutorOptions options;
    options.cuda_graph = false;  // timed launch by launch; no capture needed
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Executor> ex, cuda::Executor::create(body, ptx, symbols, options));
    WEFT_RETURN_IF_ERROR(ex->profile_step().status());  // a first run: module and plans warm
    WEFT_ASSIGN_OR_RETURN(std::vector<double> us, cuda_profile_us(*ex, runs));
    return std::accumulate(us.begin(), us.end(), 0.0);
  };
}

}  // namespace weft::bench

// Step times of suite models written with the builder and imported from their ONNX
// export (testing/imported_twin.h), in alternating rounds on the cpu backend:
//
//   bazel run //interop/onnx:imported_step_bench -- [MODEL...] [--rounds=N] [--steps=N]
//
// prints, per model, the median step time of each form and their ratio (bench/RESULTS.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "interop/onnx/testing/imported_twin.h"

namespace weft::onnx_io {
namespace {

using Clock = std::chrono::steady_clock;

// The mean time of `steps` steps of `t` on `batch`, in ms.
double round_ms(Trainer& t, const std::vector<Tensor>& batch, int steps) {
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) {
    if (StatusOr<double> loss = t.step(batch); !loss.ok()) {
      std::fprintf(stderr, "error: %s\n", loss.error().to_string().c_str());
      std::exit(1);
    }
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / steps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(int argc, char** argv) {
  std::vector<std::string> models;
  int rounds = 7, steps = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) rounds = std::atoi(a.c_str() + 9);
    else if (a.rfind("--steps=", 0) == 0) steps = std::atoi(a.c_str() + 8);
    else models.push_back(a);
  }
  if (models.empty()) models = {"mlp", "transformer"};
  const char* tmp = std::getenv("TMPDIR");
  for (const std::string& name : models) {
    StatusOr<Twins> t = compile_twins(name, tmp ? tmp : "/tmp");
    if (!t.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", name.c_str(), t.error().to_string().c_str());
      return 1;
    }
    const std::vector<Tensor> batch = random_batch(t->model, 7);
    round_ms(t->builder, batch, 3);  // warm-up
    round_ms(t->imported, batch, 3);
    std::vector<double> builder, imported;
    for (int r = 0; r < rounds; ++r) {
      builder.push_back(round_ms(t->builder, batch, steps));
      imported.push_back(round_ms(t->imported, batch, steps));
    }
    const double b = median(builder), i = median(imported);
    std::printf("%-12s builder %.3f ms  imported %.3f ms  imported/builder %.3f  (median of %d rounds of %d steps)\n",
                name.c_str(), b, i, i / b, rounds, steps);
  }
  return 0;
}

}  // namespace
}  // namespace weft::onnx_io

int main(int argc, char** argv) { return weft::onnx_io::run(argc, argv); }

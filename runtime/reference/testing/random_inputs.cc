#include "runtime/reference/testing/random_inputs.h"

#include <random>

namespace weft::testing {

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<Tensor> out;
  for (const Input& in : g.inputs()) {
    Tensor t(g.type(in.value));
    if (is_floating(t.dtype())) {
      for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, u(rng));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace weft::testing

#include "tools/aot/batches.h"

#include <random>

namespace weft::aot {

std::vector<Tensor> random_batch(const std::vector<driver::TensorSpec>& specs, int64_t token_range,
                                 int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<Tensor> batch;
  for (size_t k = 0; k < specs.size(); ++k) {
    Tensor t(specs[k].type);
    const bool target = k + 1 == specs.size();
    const bool integer = specs[k].type.dtype == DType::i64 || specs[k].type.dtype == DType::i32;
    const int64_t range = target ? classes : token_range;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (integer) {
        t.set_double(i, static_cast<double>(rng() % static_cast<uint64_t>(range > 0 ? range : 1)));
      } else {
        t.set_double(i, normal(rng));
      }
    }
    batch.push_back(std::move(t));
  }
  return batch;
}

}  // namespace weft::aot

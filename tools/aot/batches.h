#pragma once
// Random training batches for a compiled model's step inputs, for the NAME_test and
// NAME_benchmark targets: floats N(0, 1), integer network inputs in [0, token_range),
// class-index targets in [0, classes). Deterministic in `seed`.

#include <cstdint>
#include <vector>

#include "training/driver/trainable.h"
#include "runtime/tensor.h"

namespace weft::aot {

/// One batch for `specs` (the step inputs: the network's inputs, then the target).
/// `classes` bounds an integer target (the output's last dimension).
std::vector<Tensor> random_batch(const std::vector<driver::TensorSpec>& specs, int64_t token_range,
                                 int64_t classes, uint64_t seed);

}  // namespace weft::aot

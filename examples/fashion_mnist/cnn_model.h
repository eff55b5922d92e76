#pragma once
// The Fashion-MNIST CNN, defined once for the JIT example (cnn.cc) and the AOT training
// binary (cnn_aot_model.cc, //examples/fashion_mnist:train): two 3×3 conv + 2×2 max-pool
// stages (each with batch norm when `bn`) and a 128-unit head with dropout. Input
// f32[batch, 1, 28, 28] (NCHW), output 10 logits.

#include "frontend/flow.h"

namespace weft::examples {

StatusOr<FlowPtr> fashion_mnist_cnn(bool bn);

}  // namespace weft::examples

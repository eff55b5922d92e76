#pragma once
// The ponder classifier (ponder.cc), defined once for the JIT example and the AOT CUDA
// training binary (ponder_aot_model.cc, //examples/fashion_mnist:ponder_cuda). The state
// is [h, n]: a 128-wide estimate h and the count n of refinements it got. The encoder is
// a small CNN (two convolutions, max pooling, Linear to 128); each iteration refines
// h <- h + tanh(W·h + b) and adds 1 to n; an image halts once the classifier head, read on
// h, gives its top class a probability above 0.9 (positive condition: halt), or after 6
// iterations. Input f32[batch, 1, 28, 28] (NCHW).

#include <cstdint>

#include "frontend/flow.h"

namespace weft::examples {

inline constexpr int64_t kPonderMaxIterations = 6;

struct PonderModel {
  /// The classifier: the labelled subgraph `ponder` (the encoder and the loop), then the
  /// head on h: 10 logits.
  FlowPtr net;
  /// The same `ponder` subgraph with n as its output: the iterations each image ran.
  FlowPtr counter;
};

StatusOr<PonderModel> ponder_model();

}  // namespace weft::examples

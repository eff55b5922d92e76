#pragma once
// Figures read off a compiled training step (Trainer::step_graph()) for the suite's
// roofline and memory columns.
//
//   StepStats st = step_stats(trainer);
//   st.matmul_flops;   // 2·m·n·k summed over every GEMM of one step
//
// GEMMs: every matmul contributes [m, n, k, count] with count the number of batch
// elements of its (broadcast) batch dims (times the iterations of the loops around it); every convolution op contributes its im2col
// GEMM with count = groups:
// with y [N, O, Ho, Wo] = conv(x [N, C, H, W], w [O, C/g, kh, kw]):
//   conv                  y from (x, w)    m = N·Ho·Wo, n = O/g,        k = C/g·kh·kw
//   conv_backward_input   dx from (dy, w)  m = N·Ho·Wo, n = C/g·kh·kw,  k = O/g
//   conv_backward_weight  dw from (x, dy)  m = O/g,     n = C/g·kh·kw,  k = N·Ho·Wo
// (a ConvTranspose2d's forward is a conv_backward_input, and so on: the op decides). Over
// [D, H, W], Ho·Wo reads Do·Ho·Wo and kh·kw reads kd·kh·kw; over [W], Wo and kw.
// The graph counted is the step's as the CPU lowering writes it first: composites as
// their primitives (passes/decompose_composites.h), then common products merged (cse).
// So fuse-attention's attention and attention_grad nodes (TrainOptions::fuse_attention)
// contribute the matmuls the CPU runs for them, 2 and 4: the unfused step's contractions
// (dk as dsᵀ·q rather than the unfused gradient's qᵀ·ds, its transpose: m and n swapped).

#include <array>
#include <cstdint>
#include <vector>

#include "frontend/training.h"

namespace weft::bench {

struct StepStats {
  /// [m, n, k, count] for each distinct GEMM shape, in first-seen order, counts merged.
  std::vector<std::array<int64_t, 4>> gemm_shapes;
  /// Σ 2·m·n·k·count.
  double matmul_flops = 0;
  /// Bytes of the trainable parameters (kind param).
  int64_t param_bytes = 0;
  /// Parameters + their gradients + optimizer state (the Trainer's other values: slots,
  /// batch-norm statistics, the step's generator state).
  int64_t state_bytes = 0;
  /// Every step input (values and the batch) plus the peak of the bytes of node results
  /// alive at once when the step's nodes run in order, each freed after its last use: a
  /// bound the reference interpreter does not try to meet, and what a planner could
  /// reach without reordering. Gradients are node results, so they are counted there.
  int64_t planned_bytes = 0;
};

/// The figures of `trainer`'s current step graph.
StepStats step_stats(const Trainer& trainer);

/// The GEMMs of one graph once decomposed (see above); ops other than matmul and the
/// convolutions are ignored.
std::vector<std::array<int64_t, 4>> gemm_shapes(const Graph& g);

}  // namespace weft::bench

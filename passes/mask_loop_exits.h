#pragma once
// mask-loop-exits: a loop with an early exit (`scan` with `stop` or `active`, ir/ops.def)
// becomes one that runs every iteration, each masked: an iteration that would not run
// keeps the carries (a select on the carried value) and gives zero ys. The same values,
// with no iteration count decided while the step runs: what the CUDA lowering runs (its
// loop stays inside the step's one CUDA graph; conditional graph nodes are not used) and
// what unroll-scans unrolls. The reference interpreter and runtime/cpu exit for real.
//
//   %h, %done = scan(%h0, %d0) {carries=2, length=6, stop=1} ({
//     ^cell(%h1: f32[4], %d1: bool[]):
//       ...
//       return %h2, %d2
//   })
// becomes
//   %h, %done = scan(%h0, %d0) {carries=2, length=6} ({
//     ^cell(%h1: f32[4], %d1: bool[]):
//       ...
//       %run = not(%d1)
//       %h3 = select(%run, %h2, %h1)
//       %d3 = select(%run, %d2, %d1)
//       return %h3, %d3
//   })
//
// Bodies are rewritten from the inside out. Requires: a type-inferred graph.

#include "passes/pass.h"

namespace weft {

class MaskLoopExitsPass : public Pass {
 public:
  std::string_view name() const override { return "mask-loop-exits"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

#pragma once
// unroll-scans: every `scan` (a loop, ir/ops.def) becomes `length` inline copies of its
// body, in iteration order: slot i of each xs is sliced out (`slice`, `reshape`), the
// carries flow from one copy into the next, and the ys are stacked with `concat`.
//
//   %h, %hs = scan(%w, %h0) {length=2, carries=1, consts=1} : f32[4], f32[2,4] ({
//     ^body(%w1: f32[4], %h1: f32[4]):
//       %h2 = mul(%h1, %w1) : f32[4]
//       return %h2, %h2
//   })
// becomes
//   %0 = mul(%h0, %w) : f32[4]
//   %1 = reshape(%0) {shape=[1,4]} : f32[1,4]
//   %2 = mul(%0, %w) : f32[4]
//   %3 = reshape(%2) {shape=[1,4]} : f32[1,4]
//   %hs = concat(%1, %3) {axis=0} : f32[2,4]     # %h is %2
//
// The CPU and CUDA lowerings run it with LowerOptions::unroll_loops
// (TrainOptions::unroll_loops; for comparison: bench/loops); by default both make each
// loop one loop invocation over a body Program instead (runtime/program.h). Nested loops
// unroll too.
//
// After unrolling it runs cse and dce: the copies of a loop-invariant computation (a
// weight's transpose in every iteration of a gradient loop) become one, and slices or
// stacks that nothing reads go.
//
// Requires: a type-inferred graph. Guarantees: the same values as the reference
// interpreter's scan, and no `scan` node left.

#include "passes/pass.h"

namespace weft {

class UnrollScansPass : public Pass {
 public:
  std::string_view name() const override { return "unroll-scans"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

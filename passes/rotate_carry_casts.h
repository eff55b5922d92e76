#pragma once
// rotate-carry-casts: a loop body that casts one of its carries at the start of every
// iteration (autocast's f32 carry h read in bf16 by h·W_hh) gets the cast copy as one more
// carry: the loop casts the initial value once, before it, and the body casts the carry's
// new value at its end, and reads the copy from its parameter. The body's cast of the
// carry's new value joins, as one more result, the kernel that computes that value
// (fuse-elementwise; a body's carries are assigned in place when it is lowered,
// codegen/lower.cc), so no cast kernel runs per iteration where one ran before. The
// forward values are the same bits: the cast at the end of iteration i is the one that
// iteration i + 1 made at its start.
//
//   %h = scan(%w, %h0) {consts=1, carries=1, length=5} : f32[2,4] ({
//     ^cell(%w1: bf16[4,4], %h1: f32[2,4]):
//       %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
//       %m = matmul(%0, %w1) : bf16[2,4]
//       %n = tanh(%m) : bf16[2,4]
//       %2 = cast(%n) {dtype=f32} : f32[2,4]
//       return %2
//   })
// becomes
//   %l0 = cast(%h0) {dtype=bf16} : bf16[2,4]
//   %h, %l = scan(%w, %h0, %l0) {consts=1, carries=2, length=5} : f32[2,4], bf16[2,4] ({
//     ^cell(%w1: bf16[4,4], %h1: f32[2,4], %0: bf16[2,4]):
//       %m = matmul(%0, %w1) : bf16[2,4]
//       %n = tanh(%m) : bf16[2,4]
//       %2 = cast(%n) {dtype=f32} : f32[2,4]
//       %3 = cast(%2) {dtype=bf16} : bf16[2,4]
//       return %2, %3
//   })
//
// Every cast of a carry parameter, to any dtype, in any loop (forward or reversed, with
// `stop` or `active`: an iteration that does not run keeps both carries), nested loops
// from the inside out. The new carries come after the loop's own (its `stop` index is
// unchanged), their last values are results after the loop's own last carries: a cast
// of a last carry to that dtype after the loop (gru_seq's final h for its output layer)
// is that result, and goes; a ys of a carry's new value that is read only cast to that
// dtype (lstm_seq's first layer's h for the second's input projection) stacks the new
// low carry (autodiff adds the ys's and the low carry's cotangents in f32 and passes the
// sum to the f32 carry unrounded: autodiff/grad.h). Run after autocast and before
// autodiff (frontend/training.cc), so the gradient
// loop is derived from the rotated one: it reads the saved low copies the forward made
// (no narrowing of the saved f32 carry for the weight's gradient GEMM), and the low copy's
// cotangent is a low carry of the gradient loop (the product's gradient passed on as it
// is, widened where the previous iteration adds it to the f32 carry's cotangent, inside
// that addition's kernel). The gradients are the same terms summed in another order (the
// product's term reaches the carry's cotangent through the low carry, in the previous
// iteration's body, not in its own), which f32 rounds differently (a few f32 units of the
// largest value, not bf16's: passes:rotate_carry_casts_test); and the gradient body, in
// fewer kernels, may round fewer bf16 intermediates on the backends (lstm_seq's forget
// gate σ(f), a kernel's bf16 result before, is computed in the one gradient kernel in
// f32 now: passes/round_at_stores.h).
//
// Requires: a type-inferred graph. Guarantees: the same values, bit for bit (its gradient:
// above); every value keeps its id (the loops are rewritten in place, the new casts sorted
// in); the loops' results keep their order, the new carries' last values inserted after
// their own last carries; no loop body casts a carry parameter; nodes are in topological
// order.

#include "passes/pass.h"

namespace weft {

class RotateCarryCastsPass : public Pass {
 public:
  std::string_view name() const override { return "rotate-carry-casts"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

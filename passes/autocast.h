#pragma once
// autocast: makes a forward (and loss) graph mixed-precision, as PyTorch's autocast does:
// each op runs in the dtype its autocast class (ir/ops.def's autocast table) chooses.
// Contractions (Low) take their f32 operands cast to the low precision (bf16 or f16) and
// give a low result; accumulations, exp/log, norms and losses (F32) take low operands
// cast back to f32; movement, relu, tanh... (Follow) run in their operand's dtype;
// elementwise ops with several float operands (Promote) cast them to the widest.
// Run on the forward graph before autodiff (frontend/training.cc, TrainOptions::precision):
// the gradient of each inserted cast is a cast back, so the parameters (f32 master copies)
// get f32 gradients.
//
//   graph @f(%x: f32[8,4], %w: f32[3,4] {param}, %b: f32[3] {param}) {
//     %wt = transpose(%w) {perm=[1,0]} : f32[4,3]
//     %h = matmul(%x, %wt) : f32[8,3]
//     %y = add(%h, %b) : f32[8,3]
//     %r = relu(%y) : f32[8,3]
//     %s = sum(%r) : f32[]
//     return %s
//   }
// becomes, with AutocastPass(DType::bf16),
//   graph @f(%x: f32[8,4], %w: f32[3,4] {param}, %b: f32[3] {param}) -> (f32[]) {
//     %0 = cast(%x) {dtype=bf16} : bf16[8,4]
//     %1 = cast(%w) {dtype=bf16} : bf16[3,4]
//     %wt = transpose(%1) {perm=[1, 0]} : bf16[4,3]
//     %h = matmul(%0, %wt) : bf16[8,3]
//     %2 = cast(%b) {dtype=bf16} : bf16[3]
//     %y = add(%h, %2) : bf16[8,3]
//     %r = relu(%y) : bf16[8,3]
//     %3 = cast(%r) {dtype=f32} : f32[8,3]
//     %s = sum(%3) : f32[]
//     return %s
//   }
//
// The rules beyond the table:
//  - One cast per value and dtype: a weight used twice is cast once.
//  - A cast of a value that a movement op (transpose, reshape...) made for this one use
//    is moved above it, so the weight itself is cast and fold-transpose still sees the
//    transpose (the movement then moves the cast value).
//  - A contraction's bias: an add of a Low op's low result and a smaller f32 value
//    broadcast onto it (the bias of a linear or a convolution) runs in low, the bias
//    cast, as PyTorch's addmm and conv take their bias in the low dtype.
//  - A value made by a creation op (a `full` constant, a dropout mask) mixed with a low
//    tensor follows the tensor (PyTorch's rule for Python scalars and 0-d tensors).
//  - Ops of class None (integer and bool ops, cast, assign) and the graph's outputs see
//    each value in the dtype it had before the pass (cast back if needed): the loss and
//    collected metrics stay f32.
//
// Loops (`scan`): the body is autocast by the same rules, as a graph of its own whose
// parameters and results keep the types the loop's signature gives them, as the top
// graph's inputs and outputs do; nested loops likewise, from the inside out. Then:
//  - Consts are cast once, outside: a const the body casts to low (a weight, a bias) is
//    passed in low, cast before the loop with the one cast per value the graph already
//    has (the forward's own cast of that weight; weight-copies then makes it the step's
//    copy), its body parameter typed low, instead of a cast in every iteration. A const
//    the body also reads in its own dtype keeps its parameter, and its low copy is a new
//    const after the others.
//  - Carries keep their types (f32): a carry that accumulates (an LSTM's c, a counter)
//    would round at every iteration in bf16, and one computed in low anyway (a tanh
//    RNN's h) loses nothing by the widening; a product reads the carry cast to low (a
//    cast in the body; the Trainer then makes it a low carry, cast once per iteration
//    inside the kernel that computes the carry: passes/rotate_carry_casts.h). PyTorch's
//    cuDNN RNN under autocast keeps h and c in the low dtype instead; measured on the
//    suite's lstm_seq, bf16 carries put its loss after 100 steps 19% above f32's, f32
//    carries 3.5% (bench/RESULTS.md, #30 inside loop bodies). gru_seq and lstm_seq
//    trained 30 steps in bf16 stay within 3% of their f32 loss
//    (passes:autocast_loops_test).
//  - Xs follow their producer: an xs the pass made low (the input projection x·W_ih
//    that the GRU and LSTM modules compute before the loop) goes in low, its body
//    parameter typed low, so the gates' sum runs in low as PyTorch's does, and the
//    [length, ...] tensor is not widened to f32 for the loop; other xs keep their types.
// autodiff/scan_grad.cc sums a low const's gradient over the iterations in f32.
//
//   %h = scan(%w, %h0) {carries=1, consts=1, length=5} : f32[2,4] ({
//     ^cell(%w1: f32[4,4], %h1: f32[2,4]):
//       %m = matmul(%h1, %w1) : f32[2,4]
//       %n = tanh(%m) : f32[2,4]
//       return %n
//   })
// becomes
//   %0 = cast(%w) {dtype=bf16} : bf16[4,4]
//   %h = scan(%0, %h0) {carries=1, consts=1, length=5} : f32[2,4] ({
//     ^cell(%w1: bf16[4,4], %h1: f32[2,4]):
//       %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
//       %m = matmul(%0, %w1) : bf16[2,4]
//       %n = tanh(%m) : bf16[2,4]
//       %2 = cast(%n) {dtype=f32} : f32[2,4]
//       return %2
//   })
//
// Requires: a type-inferred graph. Guarantees: a type-inferred graph computing the same
// function up to the rounding of the low precision; graph inputs and outputs keep their
// types, loops their results' types; nodes are in topological order. Reports no change
// for a graph with no float op (in it or in a loop body) that the table sends to another
// dtype.

#include "ir/dtype.h"
#include "passes/pass.h"

namespace weft {

class AutocastPass : public Pass {
 public:
  /// `low` is DType::bf16 or DType::f16.
  explicit AutocastPass(DType low);
  std::string_view name() const override { return "autocast"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  DType low_;
};

}  // namespace weft

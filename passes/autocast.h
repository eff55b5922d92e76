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
//  - Ops of class None (integer and bool ops, cast, assign, loops) and the graph's
//    outputs see each value in the dtype it had before the pass (cast back if needed):
//    the loss and collected metrics stay f32, and a loop body keeps its types.
//
// Requires: a type-inferred graph. Guarantees: a type-inferred graph computing the same
// function up to the rounding of the low precision; graph inputs and outputs keep their
// types; nodes are in topological order. Reports no change for a graph with no float op
// that the table sends to another dtype.

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

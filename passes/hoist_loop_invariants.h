#pragma once
// hoist-loop-invariants: body nodes of a loop (`scan`) whose operands are the loop's
// consts or other such nodes (a weight's transpose, a constant, a bias broadcast) are
// computed once, before the loop, and passed in as consts: a loop invocation then does
// not redo them in every iteration. Gradient loops are full of them (autodiff recomputes
// the forward values that depend on the consts alone rather than saving them).
//
//   %h = scan(%w, %h0) {length=50, carries=1, consts=1} : f32[4,8] ({
//     ^body(%w1: f32[8,8], %h1: f32[4,8]):
//       %wt = transpose(%w1) {perm=[1,0]} : f32[8,8]
//       %h2 = matmul(%h1, %wt) : f32[4,8]
//       return %h2
//   })
// becomes
//   %wt = transpose(%w) {perm=[1,0]} : f32[8,8]
//   %h = scan(%w, %wt, %h0) {length=50, carries=1, consts=2} : f32[4,8] ({
//     ^body(%w1: f32[8,8], %wt1: f32[8,8], %h1: f32[4,8]):
//       %h2 = matmul(%h1, %wt1) : f32[4,8]
//       return %h2
//   })
//
// Each body is first simplified like the outer graph (canonicalize, fold-constants, dce,
// cse: a gradient loop's body comes straight from autodiff). Nested loops are hoisted
// from the inside out; a loop whose own operands are all
// invariant moves out whole. Random draws are left in place (hoisting one would not
// change its values, but keeps its cost visible where the user wrote it).
//
// Requires: a type-inferred graph. Guarantees: the same values; bodies keep their
// carries and xs in order, the consts grow at the end of the consts.

#include "passes/pass.h"

namespace weft {

class HoistLoopInvariantsPass : public Pass {
 public:
  std::string_view name() const override { return "hoist-loop-invariants"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

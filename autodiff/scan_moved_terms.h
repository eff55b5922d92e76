#pragma once
// Internal: a loop's const gradient terms moved after the loop (steps 6 and 11 of
// autodiff/scan_grad.cc, JAX's split transpose). A const's gradient is a sum over the
// iterations; a term of it that is a product of two per-iteration values (a weight's
// xᵀ·g) or a reduction of one (a bias's column sum of g), possibly reshaped or
// transposed, is not summed in the loop: its operands are stacked ([length, ...] each:
// most are already, as saved values, xs or cotangents) and one product over every
// iteration's rows, or one reduction, follows the loop. One large GEMM instead of
// `length` small ones and an accumulator carried through the loop.
//
//   loop body:     %p = matmul(%x, %w); %h' = tanh(add(%p, %b))   (%x [B, I] an x, %w, %b consts)
//   %w's gradient: matmul(transpose(%x), %g)   (%g [B, H], the cotangent of %p)
//     moved term:  core matmul, operands %x (transposed) and %g, stacked X [T, B, I], G [T, B, H]
//     after loop:  matmul(transpose(reshape(X, [T·B, I])), reshape(G, [T·B, H]))   [I, H]
//   %b's gradient: sum(%g, axes=[0])  ->  after the loop: sum(G, axes=[0, 1])
//
// The other terms (those reading a const, or of another op) are summed in the loop.

#include <optional>
#include <vector>

#include "autodiff/grad.h"
#include "autodiff/scan_body.h"
#include "ir/graph.h"

namespace weft::grad_rules {

/// A const's gradient term moved out of the loop: a product of two per-iteration values
/// (a weight's xᵀ·g) or a reduction of one (a bias's column sum of g), possibly reshaped
/// or transposed. The loop stacks its operands; one product over all iterations' rows (or
/// one reduction) follows it.
struct MovedTerm {
  int constant;                     ///< The body input it is a gradient term of.
  std::vector<const Node*> peeled;  ///< Reshapes and transposes around the core, outermost first.
  const Node* core;                 ///< matmul or sum.
  std::vector<ValueId> operands;    ///< Per iteration: the core's operands (transposes peeled).
  std::vector<bool> transposed;     ///< Whether each was transposed (matmul: [1,0]).
  std::vector<ValueId> stacked;     ///< Each operand stacked over the iterations, in the outer graph.
};

/// Const `constant`'s gradient `v` (a value of body.graph) split into its terms, the
/// operands of adds of its type, recursively: each movable one appended to `moved` (its
/// `stacked` left empty, for the caller to fill), each other one to `kept`.
/// `per_iteration[v]`: whether value v varies per iteration.
void split_const_gradient(const BodyGradient& body, const std::vector<bool>& per_iteration, int constant,
                          ValueId v, std::vector<MovedTerm>& moved, std::vector<ValueId>& kept);

/// Moved term `m` summed over every iteration at once, built by `outer` from m.stacked:
/// the product of the slots side by side (or the sum over the slots too), then the
/// reshapes and transposes peeled from around it. Of the term's type in `grad`, the
/// graph `m` was split from.
ValueId summed_over_iterations(GradBuilder& outer, const Graph& grad, const MovedTerm& m);

}  // namespace weft::grad_rules

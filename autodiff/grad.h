#pragma once
// Reverse-mode differentiation as a graph-to-graph transform.
//
// The gradient is an ordinary graph: appended to the forward graph (for a training
// step) or extracted as a graph of its own (`weftc grad`), then verified, optimized and
// run like any other — and differentiated again (Hessian-vector products).
//
//   graph @f(%x: f32[3], %w: f32[3] {param}) -> (f32[]) {
//     %p = mul(%x, %w)
//     %l = sum(%p)
//     return %l
//   }
//
// gradient_graph(f, /*output=*/0, {"w"}) is
//
//   graph @f_grad(%x: f32[3], %w: f32[3] {param}) -> (f32[3]) {
//     %0 = full() {shape=[], value=1.0} : f32[]          # d l / d l
//     %1 = broadcast_to(%0) {shape=[3]} : f32[3]        # sum's rule
//     %2 = mul(%1, %x) : f32[3]                         # mul's rule, for %w
//     return %2
//   }
//
// One rule per op (autodiff/rules_*.cc) returns a gradient per operand; the driver
// walks the nodes in reverse, accumulates gradients with `add`, and sums each back to
// its operand's shape where the op broadcast it. A half (f16, bf16) value's several
// contributions are added in f32 and rounded to its dtype once (PyTorch's autograd adds
// them in the half dtype, rounding at every add); a contribution that is an f32 value
// narrowed is added as that f32 value, and a cast from f32 passes the f32 sum on to its
// operand unrounded. Ops that have no gradient say why
// ("argmax: integer result"); reaching one on a path that needs a gradient is a user
// error naming the op and its location.

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

/// What a gradient rule emits through: ops appended to the graph being differentiated,
/// typed at once, located at the forward node they differentiate.
class GradBuilder {
 public:
  GradBuilder(Graph& g, Location loc) : graph_(g), loc_(std::move(loc)) {}

  /// Appends a node; its type is inferred immediately. A rule that builds an ill-typed
  /// node is a bug in weft (internal error).
  ValueId op(Op op, std::vector<ValueId> operands, Attrs attrs = {});
  ValueId add(ValueId a, ValueId b) { return op(Op::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(Op::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(Op::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(Op::Div, {a, b}); }
  ValueId neg(ValueId a) { return op(Op::Neg, {a}); }
  /// A scalar of `dtype`.
  ValueId constant(double value, DType dtype);
  ValueId zeros(const Type& type);
  /// Sums `g` (whose shape `x` was broadcast to) back to `target`'s shape: NumPy
  /// broadcasting undone (leading axes summed away, size-1 axes summed with keepdims).
  /// Shapes are taken by value: a reference into the graph (`graph().type(v).shape`)
  /// would dangle once a node is appended.
  ValueId sum_to_shape(ValueId g, Shape target);
  /// Broadcasts `g` to `shape` (NumPy rules).
  ValueId broadcast_to(ValueId g, Shape shape);

  Type type(ValueId v) const { return graph_.type(v); }
  Shape shape(ValueId v) const { return graph_.type(v).shape; }
  Graph& graph() { return graph_; }
  const Location& loc() const { return loc_; }
  void set_loc(Location loc) { loc_ = std::move(loc); }

 private:
  Graph& graph_;
  Location loc_;
};

/// A gradient rule: given the forward node and the gradient of its result, returns one
/// gradient per operand, each of the operand's shape, or kNoValue where there is none
/// (an integer operand, or a zero gradient the rule knows of).
using GradRule = std::vector<ValueId> (*)(GradBuilder& b, const Node& node, ValueId grad);

/// An op's entry in the gradient table: a rule, or the reason it has none.
struct GradEntry {
  GradRule rule = nullptr;
  const char* not_differentiable = nullptr;
};

/// The table entry for `op`; both fields null when the op has no entry at all (the
/// completeness test fails on that).
const GradEntry& grad_entry(Op op);

/// Appends to `g` the nodes computing d output / d wrt[i] for each i (kNoValue results
/// never occur: an independent input gets zeros). `output` must be a float scalar unless
/// `seed` is given: a value of output's type holding its cotangent. Only nodes before
/// the point of call are differentiated.
StatusOr<std::vector<ValueId>> append_gradients(Graph& g, ValueId output,
                                                const std::vector<ValueId>& wrt,
                                                ValueId seed = kNoValue);

/// append_gradients for several outputs at once: each (output, seed) pair gives an
/// output and its cotangent (a value of the output's type). Used for loop bodies, whose
/// next carries and per-iteration outputs all receive cotangents.
StatusOr<std::vector<ValueId>> append_gradients(
    Graph& g, const std::vector<std::pair<ValueId, ValueId>>& seeds,
    const std::vector<ValueId>& wrt);

/// The gradient as a graph of its own (`weftc grad`): the same inputs as `g` in the same
/// order (plus an input `seed_name` holding output `output`'s cotangent, appended last,
/// when `seed_name` is not empty), returning the gradients w.r.t. the inputs named in
/// `wrt`, in that order. `g` must be type-inferred. Assign statements are dropped.
StatusOr<Graph> gradient_graph(const Graph& g, int output, const std::vector<std::string>& wrt,
                               const std::string& seed_name = "");

}  // namespace weft

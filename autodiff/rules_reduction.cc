// Gradient rules of the reductions.
#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

using Grads = std::vector<ValueId>;

/// The reduced axes of a reduction node (all axes when `axes` is absent), normalized.
std::vector<int> reduced_axes(const Node& n, int rank) {
  std::vector<int> axes;
  const Attribute* a = n.attr("axes");
  if (a == nullptr) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t axis : std::get<IntList>(*a)) axes.push_back(*normalize_axis(axis, rank));
  return axes;
}

/// `v` (of the reduction's result shape) reshaped to keep the reduced axes as size 1.
ValueId keep_dims(GradBuilder& b, const Node& n, ValueId v) {
  Shape kept = b.shape(n.operands[0]);
  for (int axis : reduced_axes(n, kept.rank())) kept.dims[axis] = 1;
  if (b.shape(v) == kept) return v;
  return b.op(Op::Reshape, {v}, {{"shape", kept.dims}});
}

/// `g` (the reduction's result gradient) broadcast back to the operand's shape.
ValueId unreduce(GradBuilder& b, const Node& n, ValueId g) {
  return b.broadcast_to(keep_dims(b, n, g), b.shape(n.operands[0]));
}

Grads sum(GradBuilder& b, const Node& n, ValueId g) { return {unreduce(b, n, g)}; }

Grads mean(GradBuilder& b, const Node& n, ValueId g) {
  const Shape x = b.shape(n.operands[0]);
  double count = 1;
  for (int axis : reduced_axes(n, x.rank())) count *= static_cast<double>(x[axis]);
  // Scaled before it is broadcast (the same products): the broadcast then feeds the
  // elementwise ops that use it, which canonicalize lets broadcast it themselves.
  return {b.broadcast_to(b.mul(keep_dims(b, n, g), b.constant(1 / count, b.type(g).dtype)), x)};
}

/// max and min: the gradient is shared evenly among the elements equal to the extremum
/// (PyTorch's amax/amin convention; a single extremum takes it all). The tie mask is a
/// constant of the graph (piecewise constant in x), so second derivatives flow through
/// g alone.
Grads reduced_extremum(GradBuilder& b, const Node& n, ValueId g) {
  const Type x = b.type(n.operands[0]);
  ValueId hit = b.op(Op::Eq, {n.operands[0], keep_dims(b, n, n.result())});
  ValueId mask = b.op(Op::Cast, {hit}, {{"dtype", x.dtype}});
  IntList axes;
  for (int axis : reduced_axes(n, x.shape.rank())) axes.push_back(axis);
  ValueId count = b.op(Op::Sum, {mask}, {{"axes", axes}, {"keepdims", true}});
  return {b.mul(b.div(mask, count), keep_dims(b, n, g))};
}

}  // namespace

void add_reduction(Table& t) {
  t[static_cast<int>(Op::Sum)].rule = sum;
  t[static_cast<int>(Op::Mean)].rule = mean;
  t[static_cast<int>(Op::Max)].rule = reduced_extremum;
  t[static_cast<int>(Op::Min)].rule = reduced_extremum;
  t[static_cast<int>(Op::Argmax)].not_differentiable = "integer result";
}

}  // namespace weft::grad_rules

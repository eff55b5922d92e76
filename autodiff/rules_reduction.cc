// Gradient rules of the reductions.
#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

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

/// `g` (the reduction's result gradient) reshaped to keep the reduced axes as size 1,
/// then broadcast back to the operand's shape.
ValueId unreduce(GradBuilder& b, const Node& n, ValueId g) {
  Shape x = b.shape(n.operands[0]);
  Shape kept = x;
  for (int axis : reduced_axes(n, x.rank())) kept.dims[axis] = 1;
  ValueId r = b.op(Op::Reshape, {g}, {{"shape", kept.dims}});
  return b.broadcast_to(r, x);
}

std::vector<ValueId> sum(GradBuilder& b, const Node& n, ValueId g) { return {unreduce(b, n, g)}; }

}  // namespace

void add_reduction(Table& t) { t[static_cast<int>(Op::Sum)].rule = sum; }

}  // namespace weft::grad_rules

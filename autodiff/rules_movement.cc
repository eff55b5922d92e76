// Gradient rules of the movement ops, gather and scatter_add. Each is the adjoint
// movement: reshape back, the inverse permutation, a sum over broadcast axes, pad for
// a slice and slice for a pad, scatter_add for gather and gather for scatter_add.
#include <algorithm>

#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

using Grads = std::vector<ValueId>;

Grads reshape(GradBuilder& b, const Node& n, ValueId g) {
  return {b.op(Op::Reshape, {g}, {{"shape", b.shape(n.operands[0]).dims}})};
}

Grads transpose(GradBuilder& b, const Node& n, ValueId g) {
  const IntList& perm = n.ints_attr("perm");
  IntList inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return {b.op(Op::Transpose, {g}, {{"perm", inverse}})};
}

Grads broadcast_to(GradBuilder& b, const Node& n, ValueId g) {
  return {b.sum_to_shape(g, b.shape(n.operands[0]))};
}

/// `len` indices start, start + step, ... as i64[len].
ValueId strided_index(GradBuilder& b, int64_t start, int64_t step, int64_t len) {
  ValueId i = b.op(Op::Iota, {}, {{"shape", IntList{len}}, {"axis", int64_t{0}}});
  i = b.mul(i, b.constant(static_cast<double>(step), DType::i64));
  return b.add(i, b.constant(static_cast<double>(start), DType::i64));
}

Grads slice(GradBuilder& b, const Node& n, ValueId g) {
  // g is placed back where the slice read: one pad for the unit-step axes, then, axis by
  // axis, a scatter_add into zeros at iota * step + start for the strided ones.
  const Type x = b.type(n.operands[0]);
  const int rank = x.shape.rank();
  const IntList& start = n.ints_attr("start");
  const IntList step = n.has_attr("step") ? n.ints_attr("step") : IntList(rank, 1);
  const Shape y = b.shape(g);
  IntList lo(rank, 0), hi(rank, 0), first(rank);
  std::vector<int> strided;
  bool padded = false;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = x.shape[i];
    auto clamp = [d](int64_t v) { return v < 0 ? std::max<int64_t>(v + d, 0) : std::min(v, d); };
    first[i] = clamp(start[i]);  // The result dim y[i] already encodes the clamped stop.
    if (step[i] == 1 || y[i] <= 1) {
      lo[i] = y[i] == 0 ? 0 : first[i];
      hi[i] = d - lo[i] - y[i];
      padded = padded || lo[i] != 0 || hi[i] != 0;
    } else {
      strided.push_back(i);
    }
  }
  ValueId r = g;
  if (padded) r = b.op(Op::Pad, {r}, {{"low", lo}, {"high", hi}});
  for (int axis : strided) {
    Shape base = b.shape(r);
    base.dims[axis] = x.shape[axis];
    ValueId idx = strided_index(b, first[axis], step[axis], y[axis]);
    r = b.op(Op::ScatterAdd, {b.zeros(Type{x.dtype, base}), idx, r}, {{"axis", int64_t{axis}}});
  }
  return {r};
}

Grads concat(GradBuilder& b, const Node& n, ValueId g) {
  const Shape y = b.shape(g);
  const int axis = *normalize_axis(n.int_attr("axis"), y.rank());
  Grads out;
  int64_t offset = 0;
  for (ValueId operand : n.operands) {
    IntList start(y.rank(), 0), stop = y.dims;
    start[axis] = offset;
    offset += b.shape(operand)[axis];
    stop[axis] = offset;
    out.push_back(b.op(Op::Slice, {g}, {{"start", start}, {"stop", stop}}));
  }
  return out;
}

Grads pad(GradBuilder& b, const Node& n, ValueId g) {
  // The fill value is an attribute: nothing to differentiate.
  const Shape x = b.shape(n.operands[0]);
  IntList start = n.ints_attr("low"), stop(x.rank());
  for (int i = 0; i < x.rank(); ++i) stop[i] = start[i] + x[i];
  return {b.op(Op::Slice, {g}, {{"start", start}, {"stop", stop}})};
}

Grads gather(GradBuilder& b, const Node& n, ValueId g) {
  // Rows read several times accumulate; indices: integer, no gradient.
  ValueId zeros = b.zeros(b.type(n.operands[0]));
  return {b.op(Op::ScatterAdd, {zeros, n.operands[1], g}, {{"axis", n.int_attr("axis")}}),
          kNoValue};
}

Grads scatter_add(GradBuilder& b, const Node& n, ValueId g) {
  // base passes through; src reads the rows it was added to; indices: no gradient.
  return {g, kNoValue, b.op(Op::Gather, {g, n.operands[1]}, {{"axis", n.int_attr("axis")}})};
}

}  // namespace

void add_movement(Table& t) {
  auto rule = [&](Op op, GradRule r) { t[static_cast<int>(op)].rule = r; };
  rule(Op::Reshape, reshape);
  rule(Op::Transpose, transpose);
  rule(Op::BroadcastTo, broadcast_to);
  rule(Op::Slice, slice);
  rule(Op::Concat, concat);
  rule(Op::Pad, pad);
  rule(Op::Gather, gather);  // idx: integer, no gradient
  t[static_cast<int>(Op::OneHot)].not_differentiable =
      "no differentiable operand (integer indices)";
  rule(Op::ScatterAdd, scatter_add);  // idx: integer, no gradient
}

}  // namespace weft::grad_rules

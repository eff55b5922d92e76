#include "passes/canonicalize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace weft {
namespace {

/// The node producing `v`, or nullptr for a graph input.
const Node* producer(const Graph& g, ValueId v) {
  int i = g.value(v).node;
  return i < 0 ? nullptr : &g.node(i);
}

bool same_type(const Graph& g, ValueId a, ValueId b) {
  const auto& ta = g.value(a).type;
  const auto& tb = g.value(b).type;
  return ta && tb && *ta == *tb;
}

/// True when `v` is a `full` whose elements hold exactly `target` (bitwise, -0.0 apart
/// from +0.0 for floats). f16/bf16 and integer fills compare the attribute itself, which
/// is conservative: a value that only rounds to `target` is not recognized.
bool is_fill_of(const Graph& g, ValueId v, double target) {
  const Node* n = producer(g, v);
  if (!n || n->op != Op::Full) return false;
  const double value = n->float_attr("value");
  switch (n->dtype_attr("dtype")) {
    case DType::f32:
      return std::bit_cast<uint32_t>(static_cast<float>(value)) ==
             std::bit_cast<uint32_t>(static_cast<float>(target));
    case DType::f64:
    case DType::f16:
    case DType::bf16:
      return std::bit_cast<uint64_t>(value) == std::bit_cast<uint64_t>(target);
    default:
      return value == target;  // integers and bool: -0.0 and +0.0 are both 0
  }
}

bool is_float_value(const Graph& g, ValueId v) {
  return g.value(v).type && is_floating(g.value(v).type->dtype);
}

/// The additive identity that `x + z` may drop: -0.0 for floats, 0 for integers.
bool is_add_identity(const Graph& g, ValueId x, ValueId z) {
  return is_fill_of(g, z, is_float_value(g, x) ? -0.0 : 0.0);
}

/// An elementwise op broadcasts its operands itself: an operand that is a broadcast_to's
/// result becomes that broadcast's operand where the op's result keeps its shape, so the
/// broadcast is never materialized (a batch norm's per-channel statistics in its
/// backward). The same values, bit for bit.
void drop_broadcasts(const Graph& g, Node& node) {
  const Shape& result = g.value(node.result()).type->shape;
  for (size_t k = 0; k < node.operands.size(); ++k) {
    const Node* p = producer(g, node.operands[k]);
    if (!p || p->op != Op::BroadcastTo) continue;
    std::vector<ValueId> operands = node.operands;
    operands[k] = p->operands[0];
    std::optional<Shape> shape = g.value(operands[0]).type->shape;
    for (size_t j = 1; j < operands.size() && shape; ++j) {
      shape = broadcast_shapes(*shape, g.value(operands[j]).type->shape);
    }
    if (shape && *shape == result) node.operands = std::move(operands);
  }
}

/// A slice that reads whole operands of a concat, side by side along its axis, and all
/// of every other axis: those operands, one (returned) or several (the node becomes
/// their concat).
std::optional<ValueId> slice_of_concat(const Graph& g, Node& node, const Node& concat) {
  const Shape& x = g.value(concat.result()).type->shape;
  const Shape& y = g.value(node.result()).type->shape;
  const std::optional<int> axis = normalize_axis(concat.int_attr("axis"), x.rank());
  const IntList& start = node.ints_attr("start");
  if (!axis || static_cast<int>(start.size()) != x.rank()) return std::nullopt;
  if (node.has_attr("step")) {
    for (int64_t step : node.ints_attr("step")) if (step != 1) return std::nullopt;
  }
  int64_t first = 0;
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t v = start[static_cast<size_t>(d)];
    const int64_t at = v < 0 ? std::max<int64_t>(v + x[d], 0) : std::min(v, x[d]);
    if (d == *axis) first = at;
    else if (at != 0 || y[d] != x[d]) return std::nullopt;
  }
  std::vector<ValueId> read;
  int64_t offset = 0;
  for (ValueId v : concat.operands) {
    const int64_t len = g.value(v).type->shape[*axis];
    if (offset >= first && offset + len <= first + y[*axis] && len > 0) read.push_back(v);
    else if (offset < first + y[*axis] && offset + len > first && len > 0) return std::nullopt;
    offset += len;
  }
  if (read.empty()) return std::nullopt;
  if (read.size() == 1) return same_type(g, node.result(), read[0]) ? std::optional(read[0]) : std::nullopt;
  node.op = Op::Concat;
  node.operands = std::move(read);
  node.attrs = {{"axis", int64_t{*axis}}};
  return std::nullopt;
}

/// What the node computes, when it is one of its operands unchanged; may first rewrite
/// the node in place into a simpler equivalent (stacked movement ops, an elementwise op's
/// broadcast operands, a slice of a concat).
std::optional<ValueId> simplify(const Graph& g, Node& node) {
  const ValueId r = node.result();
  auto operand_if_same = [&](ValueId x) -> std::optional<ValueId> {
    if (same_type(g, r, x)) return x;
    return std::nullopt;
  };
  if (node.operands.empty() || r == kNoValue) return std::nullopt;
  if (node.info().category == OpCategory::Elementwise && node.operands.size() >= 2) {
    drop_broadcasts(g, node);
  }
  const ValueId x = node.operands[0];
  const Node* xp = producer(g, x);
  switch (node.op) {
    case Op::Mul:
      if (is_fill_of(g, node.operands[1], 1.0)) return operand_if_same(x);
      if (is_fill_of(g, x, 1.0)) return operand_if_same(node.operands[1]);
      return std::nullopt;
    case Op::Div:
      if (is_fill_of(g, node.operands[1], 1.0)) return operand_if_same(x);
      return std::nullopt;
    case Op::Add:
      if (is_add_identity(g, x, node.operands[1])) return operand_if_same(x);
      if (is_add_identity(g, node.operands[1], x)) return operand_if_same(node.operands[1]);
      return std::nullopt;
    case Op::Sub:
      if (is_fill_of(g, node.operands[1], 0.0)) return operand_if_same(x);
      return std::nullopt;
    case Op::Neg:
    case Op::Not:
      if (xp && xp->op == node.op) return operand_if_same(xp->operands[0]);
      return std::nullopt;
    case Op::Transpose: {
      if (xp && xp->op == Op::Transpose) {
        // y = transpose(x, p): y dim i = x dim p[i]; z = transpose(y, q): z dim i =
        // x dim p[q[i]].
        const IntList& p = xp->ints_attr("perm");
        const IntList& q = node.ints_attr("perm");
        IntList composed(q.size());
        for (size_t i = 0; i < q.size(); ++i) composed[i] = p[static_cast<size_t>(q[i])];
        node.operands[0] = xp->operands[0];
        node.attrs["perm"] = composed;
      }
      // Only the identity permutation is a no-op: a square matrix's transpose has its
      // operand's type but not its values.
      const IntList& perm = node.ints_attr("perm");
      for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] != static_cast<int64_t>(i)) return std::nullopt;
      }
      return operand_if_same(node.operands[0]);
    }
    case Op::Reshape:
    case Op::BroadcastTo:
      // The outer shape attribute is kept: it alone determines the result.
      if (xp && xp->op == node.op) node.operands[0] = xp->operands[0];
      return operand_if_same(node.operands[0]);
    case Op::Cast:
    case Op::Concat:
      if (node.operands.size() == 1) return operand_if_same(x);
      return std::nullopt;
    case Op::Slice: {
      if (xp && xp->op == Op::Concat) return slice_of_concat(g, node, *xp);
      if (!same_type(g, r, x)) return std::nullopt;
      const Shape& shape = g.value(x).type->shape;
      if (node.has_attr("step")) {
        const IntList& step = node.ints_attr("step");
        for (int d = 0; d < shape.rank(); ++d) {
          if (shape[d] > 1 && step[static_cast<size_t>(d)] != 1) return std::nullopt;
        }
      }
      return x;  // equal dims with step 1 means start 0 after clamping
    }
    case Op::Pad:
      for (int64_t v : node.ints_attr("low")) if (v != 0) return std::nullopt;
      for (int64_t v : node.ints_attr("high")) if (v != 0) return std::nullopt;
      return operand_if_same(x);
    case Op::Max:
    case Op::Min:
    case Op::Sum:
      if (!node.has_attr("axes") || !node.ints_attr("axes").empty()) return std::nullopt;
      if (node.op == Op::Sum && is_float_value(g, x)) return std::nullopt;
      return operand_if_same(x);
    case Op::Select: {
      if (!xp || xp->op != Op::Full) return std::nullopt;
      return operand_if_same(node.operands[xp->float_attr("value") != 0 ? 1 : 2]);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

StatusOr<bool> CanonicalizePass::run(Graph& g) {
  // replacement[v] is the value that stands for v after the rewrites so far.
  std::vector<ValueId> replacement(g.num_values());
  for (ValueId v = 0; v < g.num_values(); ++v) replacement[v] = v;
  std::vector<bool> keep(g.nodes().size(), true);
  bool changed = false;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& node = g.node(static_cast<int>(i));
    for (ValueId& o : node.operands) o = replacement[o];
    const Node before = node;
    std::optional<ValueId> same = simplify(g, node);
    changed = changed || node.operands != before.operands || node.attrs != before.attrs;
    if (!same) continue;
    replacement[node.result()] = *same;
    keep[i] = false;
    changed = true;
  }
  if (!changed) return false;
  for (ValueId& o : g.mutable_outputs()) o = replacement[o];
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft

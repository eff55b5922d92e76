#include "passes/decompose_composites.h"

#include <string>
#include <vector>

namespace weft {
namespace {

/// The reduced axes when they are the trailing ones of `rank` (normalized), else empty.
IntList trailing_axes(const IntList& axes, int rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    std::optional<int> n = normalize_axis(a, rank);
    if (!n || seen[*n]) return {};
    seen[*n] = true;
  }
  const int first = rank - static_cast<int>(axes.size());
  for (int j = 0; j < rank; ++j) {
    if (seen[j] != (j >= first)) return {};
  }
  IntList out;
  for (int j = first; j < rank; ++j) out.push_back(j);
  return out;
}

/// Appends the primitive ops of composite node `i` but the last, which node `i` becomes
/// (keeping its result, name and location); false when the node is left alone.
bool decompose(Graph& g, int i) {
  const Node n = g.node(i);  // A copy: appending nodes may move the vector.
  if (n.results.size() != 1 || n.operands.empty()) return false;
  const Type t = g.type(n.operands[0]);
  if (t.dtype != DType::f32 && t.dtype != DType::f64) return false;
  const int rank = t.shape.rank();
  IntList axes;
  if (n.op == Op::Softmax || n.op == Op::LogSoftmax) {
    axes = trailing_axes(IntList{n.int_attr("axis")}, rank);
  } else if (n.op == Op::LayerNorm) {
    axes = trailing_axes(n.ints_attr("axes"), rank);
  } else {
    return false;
  }
  if (axes.empty() || g.type(n.result()) != t) return false;
  Type row = t;
  for (int64_t a : axes) row.shape.dims[a] = 1;
  auto op = [&](Op o, std::vector<ValueId> in, const Type& type, Attrs attrs = {}) {
    return g.add_node(o, std::move(in), std::move(attrs), n.loc, type);
  };
  auto last = [&](Op o, std::vector<ValueId> in) {
    Node& node = g.node(i);
    node.op = o;
    node.operands = std::move(in);
    node.attrs = {};
    return true;
  };
  const Attrs over_row = {{"axes", axes}, {"keepdims", true}};
  const ValueId x = n.operands[0];
  if (n.op == Op::LayerNorm) {
    const ValueId mean = op(Op::Mean, {x}, row, over_row);
    const ValueId xc = op(Op::Sub, {x, mean}, t);
    const ValueId var = op(Op::Mean, {op(Op::Mul, {xc, xc}, t)}, row, over_row);
    const ValueId eps = op(Op::Full, {}, Type{t.dtype, Shape{}},
                           {{"shape", IntList{}}, {"value", n.float_attr("eps")}, {"dtype", t.dtype}});
    const ValueId rstd = op(Op::Rsqrt, {op(Op::Add, {var, eps}, row)}, row);
    const ValueId scaled = op(Op::Mul, {op(Op::Mul, {xc, rstd}, t), n.operands[1]}, t);
    return last(Op::Add, {scaled, n.operands[2]});
  }
  const ValueId d = op(Op::Sub, {x, op(Op::Max, {x}, row, over_row)}, t);
  const ValueId e = op(Op::Exp, {d}, t);
  const ValueId s = op(Op::Sum, {e}, row, over_row);
  if (n.op == Op::LogSoftmax) return last(Op::Sub, {d, op(Op::Log, {s}, row)});
  return last(Op::Div, {e, s});
}

}  // namespace

StatusOr<bool> DecomposeCompositesPass::run(Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<std::pair<int, int>> appended(n, {0, 0});  // [begin, end) of each node's primitives
  bool changed = false;
  for (int i = 0; i < n; ++i) {
    if (g.node(i).info().category != OpCategory::Composite) continue;
    for (ValueId r : g.node(i).results) {
      if (!g.value(r).type) {
        return Error{"decompose-composites: %" + g.value(r).name + " has no type; run infer-types first",
                     g.node(i).loc};
      }
    }
    const int begin = static_cast<int>(g.nodes().size());
    if (!decompose(g, i)) continue;
    appended[i] = {begin, static_cast<int>(g.nodes().size())};
    changed = true;
  }
  if (!changed) return false;
  // The primitives were appended: move them to just before the node they replace, so
  // the rest of the order (which the memory schedule starts from) stays as it was.
  std::vector<Node>& nodes = g.mutable_nodes();
  std::vector<Node> order;
  order.reserve(nodes.size());
  for (int i = 0; i < n; ++i) {
    for (int k = appended[i].first; k < appended[i].second; ++k) order.push_back(std::move(nodes[k]));
    order.push_back(std::move(nodes[i]));
  }
  nodes = std::move(order);
  g.remove_nodes(std::vector<bool>(nodes.size(), true));  // Renumbers the producers.
  return true;
}

}  // namespace weft

#include "passes/decompose_composites.h"

#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <string>
#include <utility>
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

/// Emits the primitives of composite node `i` before it: each appended to the graph, the
/// last one's op, operands and attributes written into node `i` itself (keeping its
/// result, name and location).
class Emitter {
 public:
  Emitter(Graph& g, int i) : g_(g), i_(i), n_(g.node(i)) {}

  /// The composite node (a copy: appending nodes may move the graph's vector).
  const Node& node() const { return n_; }
  const Type& type(ValueId v) const { return g_.type(v); }
  ValueId op(Op o, std::vector<ValueId> in, const Type& type, Attrs attrs = {}) {
    return g_.add_node(o, std::move(in), std::move(attrs), n_.loc, type);
  }
  ValueId scalar(double value, DType dtype) {
    return op(Op::Full, {}, Type{dtype, Shape{}},
              {{"shape", IntList{}}, {"value", value}, {"dtype", dtype}});
  }
  /// matmul(a, b) with the transpose flags: the operands' batch dims are equal.
  ValueId matmul(ValueId a, ValueId b, bool ta, bool tb) {
    const Type ta_type = type(a);
    const Shape& sb = type(b).shape;
    const int r = ta_type.shape.rank();
    Shape out = ta_type.shape;
    out.dims[r - 2] = ta_type.shape.dims[ta ? r - 1 : r - 2];
    out.dims[r - 1] = sb.dims[tb ? r - 2 : r - 1];
    return op(Op::Matmul, {a, b}, Type{ta_type.dtype, out}, matmul_flags(ta, tb));
  }
  static Attrs matmul_flags(bool ta, bool tb) { return {{"transpose_a", ta}, {"transpose_b", tb}}; }
  /// Appends `o(in) {attrs}` producing result `k` (> 0) of the composite, which keeps its
  /// name and type: a several-result composite's further results (attention_grad's dk, dv).
  void result(size_t k, Op o, std::vector<ValueId> in, Attrs attrs = {}) {
    const ValueId r = n_.results[k];
    g_.mutable_nodes().push_back(Node{o, std::move(in), std::move(attrs), {r}, n_.loc});
    g_.mutable_value(r).node = static_cast<int>(g_.nodes().size()) - 1;
  }
  /// Writes the last primitive into node `i`, which keeps its result 0 (the others were
  /// given to their own nodes by `result`).
  bool last(Op o, std::vector<ValueId> in, Attrs attrs = {}) {
    Node& node = g_.node(i_);
    node.op = o;
    node.operands = std::move(in);
    node.attrs = std::move(attrs);
    node.results.resize(1);
    return true;
  }

 private:
  Graph& g_;
  int i_;
  Node n_;
};

/// `t` with its `axes` of size 1: a per-row statistic's type.
Type row_type(Type t, const IntList& axes) {
  for (int64_t a : axes) t.shape.dims[a] = 1;
  return t;
}

/// softmax's primitives over the (trailing) `axes` of `x`: x - max, its exp and their sum.
struct SoftmaxParts {
  ValueId shifted, exp, sum;
};
SoftmaxParts softmax_parts(Emitter& e, ValueId x, const IntList& axes) {
  const Type t = e.type(x);
  const Type row = row_type(t, axes);
  const Attrs over_row = {{"axes", axes}, {"keepdims", true}};
  const ValueId d = e.op(Op::Sub, {x, e.op(Op::Max, {x}, row, over_row)}, t);
  const ValueId ex = e.op(Op::Exp, {d}, t);
  return {d, ex, e.op(Op::Sum, {ex}, row, over_row)};
}

bool decompose_rows(Emitter& e, const IntList& axes) {
  const Node& n = e.node();
  const ValueId x = n.operands[0];
  const Type t = e.type(x);
  if (n.op == Op::LayerNorm) {
    const Type row = row_type(t, axes);
    const Attrs over_row = {{"axes", axes}, {"keepdims", true}};
    const ValueId mean = e.op(Op::Mean, {x}, row, over_row);
    const ValueId xc = e.op(Op::Sub, {x, mean}, t);
    const ValueId var = e.op(Op::Mean, {e.op(Op::Mul, {xc, xc}, t)}, row, over_row);
    const ValueId eps = e.scalar(n.float_attr("eps"), t.dtype);
    const ValueId rstd = e.op(Op::Rsqrt, {e.op(Op::Add, {var, eps}, row)}, row);
    const ValueId scaled = e.op(Op::Mul, {e.op(Op::Mul, {xc, rstd}, t), n.operands[1]}, t);
    return e.last(Op::Add, {scaled, n.operands[2]});
  }
  const SoftmaxParts sm = softmax_parts(e, x, axes);
  if (n.op == Op::LogSoftmax) return e.last(Op::Sub, {sm.shifted, e.op(Op::Log, {sm.sum}, row_type(t, axes))});
  return e.last(Op::Div, {sm.exp, sm.sum});
}

/// What the attention and attention_grad nodes of one problem (the same q, k, v, mask,
/// scale and causal) share once decomposed: the scale, the scaled q and the
/// probabilities, and for each dy the dS of the q and k gradients (one attention_grad
/// node reads it twice; two with the same dy, as a hand-written graph may hold, share it). A step's gradients
/// then read the forward's probabilities, as the primitives' own gradient does.
struct AttentionValues {
  ValueId scale = kNoValue, q_scaled = kNoValue, p = kNoValue;
  std::map<ValueId, ValueId> ds;  // by dy
};
using AttentionKey = std::tuple<ValueId, ValueId, ValueId, ValueId, double, bool>;
using SharedAttention = std::map<AttentionKey, AttentionValues>;

/// The probabilities softmax(select(masked, -inf, (q·scale)·kᵀ)) in the module's order
/// (frontend/modules/attention.cc), emitted once per problem.
AttentionValues& probabilities(Emitter& e, SharedAttention& shared) {
  const Node& n = e.node();
  const size_t mask_at = n.op == Op::AttentionGrad ? 5 : 3;
  const ValueId q = n.operands[0], k = n.operands[1];
  const ValueId mask = n.operands.size() > mask_at ? n.operands[mask_at] : kNoValue;
  AttentionValues& a = shared[{q, k, n.operands[2], mask, n.float_attr("scale"), n.bool_attr("causal")}];
  if (a.p != kNoValue) return a;
  const DType dtype = e.type(q).dtype;
  const int rank = e.type(q).shape.rank();
  Shape scores = e.type(q).shape;
  scores.dims[rank - 1] = e.type(k).shape.dims[rank - 2];
  const Type st{dtype, scores};
  a.scale = e.scalar(n.float_attr("scale"), dtype);
  a.q_scaled = e.op(Op::Mul, {q, a.scale}, e.type(q));
  ValueId s = e.matmul(a.q_scaled, k, /*ta=*/false, /*tb=*/true);
  const ValueId neg_inf = e.scalar(-std::numeric_limits<double>::infinity(), dtype);
  if (n.bool_attr("causal")) {
    const int64_t sq = scores.dims[rank - 2], sk = scores.dims[rank - 1];
    const Shape square({sq, sk});
    auto iota = [&](int64_t axis) {
      return e.op(Op::Iota, {}, Type{DType::i64, square},
                  {{"shape", IntList{sq, sk}}, {"axis", axis}, {"dtype", DType::i64}});
    };
    const ValueId later = e.op(Op::Gt, {iota(1), iota(0)}, Type{DType::boolean, square});
    s = e.op(Op::Select, {later, neg_inf, s}, st);
  }
  if (mask != kNoValue) s = e.op(Op::Select, {mask, neg_inf, s}, st);
  const SoftmaxParts sm = softmax_parts(e, s, IntList{rank - 1});
  a.p = e.op(Op::Div, {sm.exp, sm.sum}, st);
  return a;
}

/// attention's and attention_grad's primitives: the probabilities P, then y = P·v, or
/// for the gradient what autodiff makes of that order: (dS·k)·scale (dq), dSᵀ·(q·scale)
/// (dk) and Pᵀ·dy (dv), with dS = P (dP - rowsum(dP P)) and dP = dy·vᵀ. The gradient's
/// y operand is not read (the primitives' gradient has no use for it).
bool decompose_attention(Emitter& e, SharedAttention& shared) {
  const Node& n = e.node();
  AttentionValues& a = probabilities(e, shared);
  if (n.op == Op::Attention) {
    return e.last(Op::Matmul, {a.p, n.operands[2]}, Emitter::matmul_flags(false, false));
  }
  const ValueId dy = n.operands[4];
  auto [at, fresh] = a.ds.try_emplace(dy, kNoValue);
  ValueId& ds = at->second;
  if (fresh) {
    const Type st = e.type(a.p);
    const int rank = st.shape.rank();
    const ValueId dp = e.matmul(dy, n.operands[2], /*ta=*/false, /*tb=*/true);
    const ValueId delta = e.op(Op::Sum, {e.op(Op::Mul, {dp, a.p}, st)}, row_type(st, {rank - 1}),
                               {{"axes", IntList{rank - 1}}, {"keepdims", true}});
    ds = e.op(Op::Mul, {a.p, e.op(Op::Sub, {dp, delta}, st)}, st);
  }
  const ValueId ds_k = e.matmul(ds, n.operands[1], /*ta=*/false, /*tb=*/false);
  e.result(1, Op::Matmul, {ds, a.q_scaled}, Emitter::matmul_flags(true, false));  // dk
  e.result(2, Op::Matmul, {a.p, dy}, Emitter::matmul_flags(true, false));         // dv
  return e.last(Op::Mul, {ds_k, a.scale});                                        // dq
}

/// Appends the primitive ops of composite node `i` but the last, which node `i` becomes;
/// false when the node is left alone.
bool decompose(Graph& g, int i, SharedAttention& shared) {
  const Node& n = g.node(i);
  if (n.results.size() != static_cast<size_t>(n.info().results) || n.operands.empty()) return false;
  const Type t = g.type(n.operands[0]);
  if (t.dtype != DType::f32 && t.dtype != DType::f64) return false;
  if (n.op == Op::Attention || n.op == Op::AttentionGrad) {
    Emitter e(g, i);
    return decompose_attention(e, shared);
  }
  const int rank = t.shape.rank();
  IntList axes;
  if (n.op == Op::Softmax || n.op == Op::LogSoftmax) {
    axes = trailing_axes(IntList{n.int_attr("axis")}, rank);
  } else if (n.op == Op::LayerNorm) {
    axes = trailing_axes(n.ints_attr("axes"), rank);
  } else {
    return false;
  }
  if (g.type(n.result()) != t) return false;
  Emitter e(g, i);
  if (t.shape.numel() == 0) {
    // An empty value (rows of length 0, or no rows) has nothing to compute: a `full` of
    // its type, which every backend runs. Its primitives would take the max of empty
    // rows, which is refused.
    return e.last(Op::Full, {}, {{"shape", t.shape.dims}, {"value", 0.0}, {"dtype", t.dtype}});
  }
  if (axes.empty()) return false;
  return decompose_rows(e, axes);
}

}  // namespace

StatusOr<bool> DecomposeCompositesPass::run(Graph& g) {
  bool changed = false;
  // Loop bodies first, so that what a decomposition makes there (layer norm's eps) is in
  // the body while the outer graph's pipeline can still hoist it (hoist-loop-invariants
  // runs after this pass, codegen/lower.h's add_lowering_passes).
  for (Node& node : g.mutable_nodes()) {
    if (node.op != Op::Scan || !node.body) continue;
    Graph body = *node.body;
    WEFT_ASSIGN_OR_RETURN(bool body_changed, run(body));
    if (!body_changed) continue;
    node.body = std::make_shared<const Graph>(std::move(body));
    changed = true;
  }
  const int n = static_cast<int>(g.nodes().size());
  std::vector<std::pair<int, int>> appended(n, {0, 0});  // [begin, end) of each node's primitives
  bool decomposed = false;
  SharedAttention shared;
  for (int i = 0; i < n; ++i) {
    if (g.node(i).info().category != OpCategory::Composite) continue;
    if (keep_ && keep_(g, g.node(i))) continue;
    for (ValueId r : g.node(i).results) {
      if (!g.value(r).type) {
        return Error{"decompose-composites: %" + g.value(r).name + " has no type; run infer-types first",
                     g.node(i).loc};
      }
    }
    const int begin = static_cast<int>(g.nodes().size());
    if (!decompose(g, i, shared)) continue;
    appended[i] = {begin, static_cast<int>(g.nodes().size())};
    decomposed = true;
  }
  if (!decomposed) return changed;
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

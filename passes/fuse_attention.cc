#include "passes/fuse_attention.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "ir/shape_rules.h"

namespace weft {
namespace {

/// One attention pattern found, ending at node `product` (y = matmul(p, v)).
struct Match {
  ValueId q = kNoValue, k = kNoValue, v = kNoValue, mask = kNoValue;
  double scale = 1;
  bool causal = false;
  /// A transpose to rewrite into k (its swap of the last two axes undone), or -1.
  int k_transpose = -1;
  IntList k_perm;
  std::vector<int> dead;  ///< The intermediates, used by the pattern alone.
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), uses_(g.use_counts()) {}

  std::optional<Match> match(int product) const {
    const Node& y = g_.node(product);
    if (y.op != Op::Matmul || y.bool_attr("transpose_a") || y.bool_attr("transpose_b")) {
      return std::nullopt;
    }
    Match m;
    m.v = y.operands[1];
    const int softmax = only_use(y.operands[0], Op::Softmax);
    if (softmax < 0) return std::nullopt;
    const int rank = g_.type(y.operands[0]).shape.rank();
    const int64_t axis = g_.node(softmax).int_attr("axis");
    if (axis != -1 && axis != rank - 1) return std::nullopt;
    m.dead.push_back(softmax);
    ValueId s = g_.node(softmax).operands[0];
    for (int select = only_use(s, Op::Select); select >= 0; select = only_use(s, Op::Select)) {
      const Node& n = g_.node(select);
      if (!is_full(n.operands[1], -std::numeric_limits<double>::infinity())) return std::nullopt;
      if (!m.causal && is_causal(n.operands[0], g_.type(s).shape)) {
        m.causal = true;
      } else if (m.mask == kNoValue && g_.type(n.operands[0]).dtype == DType::boolean) {
        m.mask = n.operands[0];
      } else {
        return std::nullopt;
      }
      m.dead.push_back(select);
      s = n.operands[2];
    }
    const int scores = only_use(s, Op::Matmul);
    if (scores < 0 || g_.node(scores).bool_attr("transpose_a")) return std::nullopt;
    m.dead.push_back(scores);
    const Node& qk = g_.node(scores);
    if (!match_k(qk, m) || !match_q(qk.operands[0], m)) return std::nullopt;
    return typed(m) ? std::optional<Match>(m) : std::nullopt;
  }

 private:
  /// The producer of `v` when it is an `op` node whose result only the pattern reads.
  int only_use(ValueId v, Op op) const {
    const int p = g_.value(v).node;
    if (p < 0 || g_.node(p).op != op || uses_[v] != 1) return -1;
    return p;
  }
  /// Whether `v` is a `full` of `value` with every dim 1 (a broadcast scalar).
  bool is_full(ValueId v, double value) const { return full_value(v) == value; }
  std::optional<double> full_value(ValueId v) const {
    const int p = g_.value(v).node;
    if (p < 0 || g_.node(p).op != Op::Full || g_.type(v).shape.numel() != 1) return std::nullopt;
    return g_.node(p).float_attr("value");
  }
  /// iota {axis} over exactly [Sq, Sk].
  bool is_iota(ValueId v, int64_t axis, const Shape& square) const {
    const int p = g_.value(v).node;
    return p >= 0 && g_.node(p).op == Op::Iota && g_.node(p).int_attr("axis") == axis &&
           g_.type(v).shape == square;
  }
  /// gt(iota col, iota row) or lt(iota row, iota col) over the scores' last two dims.
  bool is_causal(ValueId cond, const Shape& scores) const {
    const int p = g_.value(cond).node;
    if (p < 0) return false;
    const Node& n = g_.node(p);
    const int r = scores.rank();
    const Shape square({scores.dims[r - 2], scores.dims[r - 1]});
    if (n.op == Op::Gt) return is_iota(n.operands[0], 1, square) && is_iota(n.operands[1], 0, square);
    if (n.op == Op::Lt) return is_iota(n.operands[0], 0, square) && is_iota(n.operands[1], 1, square);
    return false;
  }
  /// k from the scores' product: its transpose_b operand, or a transpose swapping the last
  /// two axes of k's own layout.
  bool match_k(const Node& qk, Match& m) const {
    if (qk.bool_attr("transpose_b")) {
      m.k = qk.operands[1];
      return true;
    }
    const int t = only_use(qk.operands[1], Op::Transpose);
    if (t < 0) return false;
    IntList perm = g_.node(t).ints_attr("perm");
    const size_t r = perm.size();
    std::swap(perm[r - 2], perm[r - 1]);
    bool identity = true;
    for (size_t d = 0; d < r; ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
    if (identity) {
      m.k = g_.node(t).operands[0];
      m.dead.push_back(t);
    } else {
      m.k = qk.operands[1];  // The transpose's result, retyped.
      m.k_transpose = t;
      m.k_perm = std::move(perm);
    }
    return true;
  }
  /// q and the scale from the product's left operand.
  bool match_q(ValueId a, Match& m) const {
    const int mul = only_use(a, Op::Mul);
    if (mul >= 0) {
      const Node& n = g_.node(mul);
      for (int c = 0; c < 2; ++c) {
        std::optional<double> scale = full_value(n.operands[c]);
        if (scale && g_.type(n.operands[c]).shape.rank() == 0 && std::isfinite(*scale)) {
          m.scale = *scale;
          m.q = n.operands[1 - c];
          m.dead.push_back(mul);
          return true;
        }
      }
    }
    m.q = a;
    return true;
  }
  /// q, k, v of one float dtype that decompose-composites writes back, and shapes the
  /// attention shape rule accepts.
  bool typed(const Match& m) const {
    const DType d = g_.type(m.q).dtype;
    if (d != DType::f32 && d != DType::f64) return false;
    Type k = g_.type(m.k);
    if (m.k_transpose >= 0) {
      const int r = k.shape.rank();
      std::swap(k.shape.dims[r - 2], k.shape.dims[r - 1]);
    }
    std::vector<Type> operands = {g_.type(m.q), k, g_.type(m.v)};
    if (m.mask != kNoValue) operands.push_back(g_.type(m.mask));
    const Node probe{Op::Attention, {}, {{"scale", m.scale}, {"causal", m.causal}}, {}, {}};
    return infer_node_type(probe, operands).ok();
  }

  const Graph& g_;
  const std::vector<int> uses_;
};

/// Removes the nodes in `dead` and, transitively, the producers nothing reads any more
/// once they are gone (the iotas, the -inf constants, a mask's reshape).
void remove_dead(Graph& g, const std::vector<int>& dead) {
  std::vector<int> uses = g.use_counts();
  std::vector<bool> keep(g.nodes().size(), true);
  std::vector<int> work = dead;
  while (!work.empty()) {
    const int i = work.back();
    work.pop_back();
    if (!keep[i]) continue;
    keep[i] = false;
    for (ValueId v : g.node(i).operands) {
      const int p = g.value(v).node;
      if (--uses[v] == 0 && p >= 0 && g.node(p).results.size() == 1) work.push_back(p);
    }
  }
  g.remove_nodes(keep);
}

}  // namespace

StatusOr<bool> FuseAttentionPass::run(Graph& g) {
  std::vector<int> dead;
  bool changed = false;
  // Matches never share a node (each intermediate has one user), so the use counts taken
  // before the first rewrite hold for the rest.
  const Matcher matcher(g);
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    if (g.node(i).op != Op::Matmul) continue;
    for (ValueId r : g.node(i).results) {
      if (!g.value(r).type) {
        return Error{"fuse-attention: %" + g.value(r).name + " has no type; run infer-types first",
                     g.node(i).loc};
      }
    }
    std::optional<Match> m = matcher.match(i);
    if (!m) continue;
    if (m->k_transpose >= 0) {
      Node& t = g.node(m->k_transpose);
      t.attrs["perm"] = m->k_perm;
      Type k = g.type(m->k);
      const int r = k.shape.rank();
      std::swap(k.shape.dims[r - 2], k.shape.dims[r - 1]);
      g.mutable_value(m->k).type = k;
    }
    Node& y = g.node(i);
    y.op = Op::Attention;
    y.operands = {m->q, m->k, m->v};
    if (m->mask != kNoValue) y.operands.push_back(m->mask);
    y.attrs = {{"scale", m->scale}, {"causal", m->causal}};
    dead.insert(dead.end(), m->dead.begin(), m->dead.end());
    changed = true;
  }
  if (changed) remove_dead(g, dead);
  return changed;
}

}  // namespace weft

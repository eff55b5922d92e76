#include "passes/fold_batch_matmul.h"

#include <vector>

namespace weft {
namespace {

// The sum's axes (normalized) are exactly 0 .. batch_rank-1 and keepdims is off.
bool sums_batch_axes(const Node& sum, int rank, int batch_rank) {
  if (sum.op != Op::Sum || !sum.has_attr("axes")) return false;
  const IntList& axes = sum.ints_attr("axes");
  if (static_cast<int>(axes.size()) != batch_rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    const int64_t d = a < 0 ? a + rank : a;
    if (d < 0 || d >= batch_rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// A transpose {perm=[1,0]} of a 2-D value: the folded product can absorb it.
bool transposes_2d(const Node& n) {
  if (n.op != Op::Transpose) return false;
  const IntList& perm = n.ints_attr("perm");
  return perm.size() == 2 && perm[0] == 1 && perm[1] == 0;
}

}  // namespace

StatusOr<bool> FoldBatchMatmulPass::run(Graph& g) {
  // The single user of each value (node index), or -1.
  std::vector<int> only_user(g.num_values(), -1);
  {
    const std::vector<int> count = g.use_counts();
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
      for (ValueId v : g.node(i).operands) {
        if (count[v] == 1) only_user[v] = i;
      }
    }
  }
  const std::vector<int> uses = g.use_counts();
  bool changed = false;
  const int n = static_cast<int>(g.nodes().size());
  for (int i = 0; i < n; ++i) {
    const Node& sum = g.node(i);
    if (sum.op != Op::Sum) continue;
    const int p = g.value(sum.operands[0]).node;
    if (p < 0 || uses[sum.operands[0]] != 1) continue;
    const Node& mm = g.node(p);
    if (mm.op != Op::Matmul || !mm.bool_attr("transpose_a") || mm.bool_attr("transpose_b")) {
      continue;
    }
    const Type a = g.type(mm.operands[0]), b = g.type(mm.operands[1]);
    const int rank = a.shape.rank(), batch_rank = rank - 2;
    if (batch_rank < 1 || b.shape.rank() != rank ||
        !sums_batch_axes(sum, g.type(mm.result()).shape.rank(), batch_rank)) {
      continue;
    }
    int64_t batch = 1;
    bool same = true;
    for (int d = 0; d < batch_rank; ++d) {
      same = same && a.shape[d] == b.shape[d];
      batch *= a.shape[d];
    }
    if (!same) continue;
    const int64_t k = a.shape[rank - 2], m = a.shape[rank - 1], n = b.shape[rank - 1];
    // The folded product is appended; sort_topologically() puts it back in order.
    ValueId old = sum.result();
    if (sum.bool_attr("keepdims")) {
      // [1, ..., M, N] reshaped to [M, N] (how autodiff sums a broadcast away): the
      // reshape's result is the value the folded product replaces.
      const int r = only_user[old];
      if (r < 0 || g.node(r).op != Op::Reshape ||
          !(g.type(g.node(r).result()).shape == Shape{m, n})) {
        continue;
      }
      old = g.node(r).result();
    }
    const ValueId a_in = mm.operands[0], b_in = mm.operands[1];
    const Location loc = sum.loc, mm_loc = mm.loc;
    const Type result = g.type(old);
    ValueId a2 = g.add_node(Op::Reshape, {a_in}, {{"shape", IntList{batch * k, m}}}, mm_loc,
                            Type{a.dtype, Shape{batch * k, m}});
    ValueId b2 = g.add_node(Op::Reshape, {b_in}, {{"shape", IntList{batch * k, n}}}, mm_loc,
                            Type{b.dtype, Shape{batch * k, n}});
    // transpose(Σ a_bᵀ·b_b) = Σ b_bᵀ·a_b: a transpose of the sum (a weight gradient
    // brought to the weight's [out, in] layout) is absorbed by swapping the operands.
    const int t = only_user[old];
    if (t >= 0 && transposes_2d(g.node(t))) {
      const ValueId transposed = g.node(t).result();
      const Type t_type = g.type(transposed);
      ValueId folded = g.add_node(Op::Matmul, {b2, a2}, {{"transpose_a", true}}, loc, t_type);
      g.replace_all_uses(transposed, folded);
    } else {
      ValueId folded = g.add_node(Op::Matmul, {a2, b2}, {{"transpose_a", true}}, loc, result);
      g.replace_all_uses(old, folded);
    }
    changed = true;
  }
  if (!changed) return false;
  // The sums are unused now, and with them their products: drop both.
  std::vector<int> count = g.use_counts();
  std::vector<bool> keep(g.nodes().size(), true);
  for (int i = static_cast<int>(g.nodes().size()) - 1; i >= 0; --i) {
    const Node& node = g.node(i);
    if (node.results.empty() || count[node.result()] > 0) continue;
    if (node.op != Op::Sum && node.op != Op::Matmul && node.op != Op::Transpose &&
        node.op != Op::Reshape) {
      continue;
    }
    keep[i] = false;
    for (ValueId o : node.operands) --count[o];
  }
  g.remove_nodes(keep);
  g.sort_topologically();
  return true;
}

}  // namespace weft

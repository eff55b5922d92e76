#include "passes/fold_transpose.h"

#include <vector>

namespace weft {
namespace {

// True for transpose {perm=[0, 1, ..., r-1, r-2]}: a swap of the last two dimensions.
bool swaps_last_two(const Node& n) {
  if (n.op != Op::Transpose) return false;
  const IntList& perm = n.ints_attr("perm");
  const int64_t r = static_cast<int64_t>(perm.size());
  if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2) return false;
  for (int64_t d = 0; d + 2 < r; ++d) {
    if (perm[d] != d) return false;
  }
  return true;
}

}  // namespace

StatusOr<bool> FoldTransposePass::run(Graph& g) {
  bool changed = false;
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> keep(n, true);
  // transpose(op(a)·op(b)) = op(b)ᵀ·op(a)ᵀ: one GEMM with the operands swapped (the
  // weight gradients of linear layers come out this way).
  {
    const std::vector<int> uses = g.use_counts();
    for (int i = 0; i < n; ++i) {
      Node& t = g.node(i);
      if (!swaps_last_two(t)) continue;
      const int p = g.value(t.operands[0]).node;
      if (p < 0 || g.node(p).op != Op::Matmul || uses[t.operands[0]] != 1) continue;
      const Node& mm = g.node(p);
      const bool ta = mm.bool_attr("transpose_a"), tb = mm.bool_attr("transpose_b");
      Attrs attrs;
      if (!tb) attrs["transpose_a"] = true;
      if (!ta) attrs["transpose_b"] = true;
      t.op = Op::Matmul;
      t.operands = {mm.operands[1], mm.operands[0]};
      t.attrs = std::move(attrs);
      keep[p] = false;
      changed = true;
    }
  }
  for (int i = 0; i < n; ++i) {
    Node& node = g.node(i);
    if (node.op != Op::Matmul) continue;
    for (int k = 0; k < 2; ++k) {
      const char* flag = k == 0 ? "transpose_a" : "transpose_b";
      const int p = g.value(node.operands[k]).node;
      if (p < 0 || !swaps_last_two(g.node(p))) continue;
      // op(transpose(x)) with the flag set is x itself: the flags toggle.
      node.operands[k] = g.node(p).operands[0];
      if (node.bool_attr(flag)) node.attrs.erase(flag);
      else node.attrs[flag] = true;
      changed = true;
    }
  }
  if (!changed) return false;
  // Drop the transposes nothing uses any more (and the folded matmuls).
  std::vector<int> uses = g.use_counts();
  for (int i = 0; i < n; ++i) {
    if (!keep[i]) {
      for (ValueId v : g.node(i).operands) --uses[v];
    }
  }
  for (int i = 0; i < n; ++i) {
    if (swaps_last_two(g.node(i)) && uses[g.node(i).result()] == 0) keep[i] = false;
  }
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft

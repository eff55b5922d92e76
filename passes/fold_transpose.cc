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
  for (int i = 0; i < n; ++i) {
    Node& node = g.node(i);
    if (node.op != Op::Matmul) continue;
    for (int k = 0; k < 2; ++k) {
      const char* flag = k == 0 ? "transpose_a" : "transpose_b";
      const int p = g.value(node.operands[k]).node;
      if (p < 0 || !swaps_last_two(g.node(p)) || node.bool_attr(flag)) continue;
      node.operands[k] = g.node(p).operands[0];
      node.attrs[flag] = true;
      changed = true;
    }
  }
  if (!changed) return false;
  // Drop the transposes nothing uses any more.
  const std::vector<int> uses = g.use_counts();
  std::vector<bool> keep(n, true);
  for (int i = 0; i < n; ++i) {
    if (swaps_last_two(g.node(i)) && uses[g.node(i).result()] == 0) keep[i] = false;
  }
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft

#include "passes/dce.h"

namespace weft {

StatusOr<bool> DcePass::run(Graph& g) {
  // Walk backwards from the roots (outputs and statements), marking what they use.
  std::vector<bool> used(g.num_values(), false);
  for (ValueId v : g.outputs()) used[v] = true;
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> keep(n, false);
  bool removed_any = false;
  for (int i = n - 1; i >= 0; --i) {
    const Node& node = g.node(i);
    bool live = node.results.empty();  // a statement (assign) is a root
    for (ValueId r : node.results) live = live || used[r];
    keep[i] = live;
    removed_any = removed_any || !live;
    if (live) {
      for (ValueId o : node.operands) used[o] = true;
    }
  }
  if (removed_any) g.remove_nodes(keep);
  return removed_any;
}

}  // namespace weft

#include "passes/split_reductions.h"

#include <algorithm>
#include <vector>

namespace weft {

StatusOr<bool> SplitReductionsPass::run(Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> replaced(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    const Node node = g.node(i);  // a copy: add_node may move the node vector
    // The reductions that split into parts: sum, max and min are associative, and a mean
    // of equal-sized groups' means is the mean. Named, not taken from the op table's
    // category: a future reduction (a variance) would not split this way.
    if (node.op != Op::Sum && node.op != Op::Mean && node.op != Op::Max && node.op != Op::Min) {
      continue;
    }
    const Type x = g.type(node.operands[0]);
    const Type result = g.type(node.result());
    if (!is_floating(x.dtype) || result.dtype != x.dtype) continue;
    const int rank = x.shape.rank();
    if (rank == 0) continue;  // a scalar's reduction has no axis to split (nor to index)
    std::vector<bool> reduced(static_cast<size_t>(rank), !node.has_attr("axes"));
    if (node.has_attr("axes")) {
      for (int64_t a : node.ints_attr("axes")) {
        const std::optional<int> axis = normalize_axis(a, rank);
        if (!axis) return Error{"split-reductions: axis out of range", node.loc};
        reduced[static_cast<size_t>(*axis)] = true;
      }
    }
    // The first part: the run of reduced axes at the end, when a kept axis lies before it
    // with a reduced axis further out (batch-norm statistics); or, when the innermost axis
    // is kept, the last reduced axis alone, when another is reduced too (a bias gradient
    // summed over batch and sequence).
    std::vector<int> first_part;
    if (reduced[static_cast<size_t>(rank - 1)]) {
      int first_inner = rank;
      while (first_inner > 0 && reduced[static_cast<size_t>(first_inner - 1)]) --first_inner;
      if (first_inner == 0) continue;
      for (int d = first_inner; d < rank; ++d) first_part.push_back(d);
    } else {
      int last = rank - 1;
      while (last >= 0 && !reduced[static_cast<size_t>(last)]) --last;
      if (last < 0) continue;
      first_part.push_back(last);
    }
    bool outer_reduced = false;
    for (int d = 0; d < first_part[0]; ++d) {
      outer_reduced = outer_reduced || (reduced[static_cast<size_t>(d)] && x.shape[d] > 1);
    }
    if (!outer_reduced) continue;
    int64_t inner = 1;
    for (int d : first_part) inner *= x.shape[d];
    if (inner < options_.min_inner || result.numel() >= options_.max_results) continue;

    IntList inner_axes, all_axes;
    Shape partial = x.shape;
    for (int d = 0; d < rank; ++d) {
      if (std::find(first_part.begin(), first_part.end(), d) != first_part.end()) {
        inner_axes.push_back(d);
        partial.dims[static_cast<size_t>(d)] = 1;
      }
      if (reduced[static_cast<size_t>(d)]) all_axes.push_back(d);
    }
    const ValueId part =
        g.add_node(node.op, {node.operands[0]}, {{"axes", inner_axes}, {"keepdims", true}},
                   node.loc, Type{x.dtype, partial});
    Attrs attrs = node.attrs;
    attrs["axes"] = all_axes;
    const ValueId whole = g.add_node(node.op, {part}, attrs, node.loc, result);
    g.replace_all_uses(node.result(), whole);
    replaced[static_cast<size_t>(i)] = true;
  }
  if (std::find(replaced.begin(), replaced.end(), true) == replaced.end()) return false;
  // The two parts take the place of the reduction they replace (appended, they would
  // run last and keep their operands alive to the end of the step); the replaced one,
  // unused now, goes.
  std::vector<Node>& nodes = g.mutable_nodes();
  std::vector<Node> order;
  std::vector<bool> keep;
  size_t added = static_cast<size_t>(n);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (replaced[i]) {
      for (int k = 0; k < 2; ++k) {
        order.push_back(std::move(nodes[added++]));
        keep.push_back(true);
      }
    }
    order.push_back(std::move(nodes[i]));
    keep.push_back(!replaced[i]);
  }
  nodes = std::move(order);
  g.remove_nodes(keep);  // and renumbers the producers
  return true;
}

}  // namespace weft

#include "passes/split_gradients.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "passes/schedule.h"

namespace weft {
namespace {

bool swaps_two(const Node& n) {
  return n.op == Op::Transpose && n.ints_attr("perm") == IntList{1, 0};
}

// The GEMM computing an all_reduce's operand, and whether the operand is its transpose;
// nullopt where the all_reduce is not one to split (the conditions in the header).
struct Producer {
  int matmul = -1;
  int transpose = -1;  ///< -1: the operand is the matmul's result itself.
};
std::optional<Producer> splittable(const Graph& g, const Node& reduce, const std::vector<int>& uses,
                                   const SplitGradientsOptions& options) {
  if (reduce.operands.size() != 1) return std::nullopt;
  const ValueId x = reduce.operands[0];
  const Type& type = g.type(x);
  if (type.shape.rank() != 2 || type.shape[0] < options.blocks) return std::nullopt;
  if (static_cast<int64_t>(type.bytes()) < options.min_bytes || uses[x] != 1) return std::nullopt;
  Producer p;
  int node = g.value(x).node;
  if (node >= 0 && swaps_two(g.node(node))) {
    const ValueId m = g.node(node).operands[0];
    if (uses[m] != 1) return std::nullopt;
    p.transpose = node;
    node = g.value(m).node;
  }
  if (node < 0 || g.node(node).op != Op::Matmul) return std::nullopt;
  for (ValueId v : g.node(node).operands) {
    if (g.type(v).shape.rank() != 2) return std::nullopt;
  }
  p.matmul = node;
  return p;
}

// A name for a new value: `name` where it is free, else a fresh one.
std::string free_name(const Graph& g, std::string name) {
  return g.find_value(name) ? std::string() : name;
}

// Rows [r0, r1) of the all_reduce's operand (matmul(a, b), or its transpose), reduced.
ValueId reduced_block(Graph& g, const Node& reduce, const Producer& p, int64_t r0, int64_t r1,
                      const std::string& name) {
  const Node mm = g.node(p.matmul);  // a copy: add_node may move the node list
  const bool transposed = p.transpose >= 0;
  // Rows of op(a)·op(b) are rows of op(a); rows of its transpose are columns of op(b).
  const int k = transposed ? 1 : 0;
  const bool flag = mm.bool_attr(k == 0 ? "transpose_a" : "transpose_b");
  const int axis = (k == 0) == flag ? 1 : 0;
  const ValueId source = mm.operands[static_cast<size_t>(k)];
  Type sliced = g.type(source);
  IntList start(2, 0), stop = {sliced.shape[0], sliced.shape[1]};
  start[static_cast<size_t>(axis)] = r0;
  stop[static_cast<size_t>(axis)] = r1;
  sliced.shape.dims[static_cast<size_t>(axis)] = r1 - r0;
  const ValueId slice = g.add_node(Op::Slice, {source}, {{"start", start}, {"stop", stop}}, mm.loc, sliced,
                                   free_name(g, name + ".in"));
  std::vector<ValueId> operands = mm.operands;
  operands[static_cast<size_t>(k)] = slice;
  const Type& whole = g.type(reduce.result());
  Type block = whole;
  block.shape.dims[0] = r1 - r0;
  ValueId rows;
  if (transposed) {
    const Type product{block.dtype, Shape({whole.shape[1], r1 - r0})};
    const ValueId m = g.add_node(Op::Matmul, operands, mm.attrs, mm.loc, product, free_name(g, name + ".t"));
    rows = g.add_node(Op::Transpose, {m}, {{"perm", IntList{1, 0}}}, mm.loc, block, free_name(g, name));
  } else {
    rows = g.add_node(Op::Matmul, operands, mm.attrs, mm.loc, block, free_name(g, name));
  }
  return g.add_node(Op::AllReduce, {rows}, reduce.attrs, reduce.loc, block, free_name(g, name + ".all_reduce"));
}

}  // namespace

StatusOr<bool> SplitGradientsPass::run(Graph& g) {
  if (options_.min_bytes <= 0 || options_.blocks < 2) return false;
  const int n = static_cast<int>(g.nodes().size());
  const std::vector<int> uses = g.use_counts();
  std::vector<bool> dead(static_cast<size_t>(n), false);
  std::vector<std::vector<int>> placed(static_cast<size_t>(n));  // new nodes, by the all_reduce they replace
  for (int i = 0; i < n; ++i) {
    if (g.node(i).op != Op::AllReduce) continue;
    const std::optional<Producer> p = splittable(g, g.node(i), uses, options_);
    if (!p) continue;
    const Node reduce = g.node(i);
    const int first_new = static_cast<int>(g.nodes().size());
    const int64_t rows = g.type(reduce.result()).shape[0];
    const std::string base = g.value(reduce.operands[0]).name + ".rows";
    std::vector<ValueId> blocks;
    for (int b = 0; b < options_.blocks; ++b) {
      // As equal as the rows allow, the first blocks one row longer.
      const int64_t r0 = b * (rows / options_.blocks) + std::min<int64_t>(b, rows % options_.blocks);
      const int64_t r1 = r0 + rows / options_.blocks + (b < rows % options_.blocks ? 1 : 0);
      blocks.push_back(reduced_block(g, reduce, *p, r0, r1, base + std::to_string(b)));
    }
    const ValueId whole = g.add_node(Op::Concat, blocks, {{"axis", int64_t{0}}}, reduce.loc,
                                     g.type(reduce.result()), free_name(g, base));
    g.replace_all_uses(reduce.result(), whole);
    for (int k = first_new; k < static_cast<int>(g.nodes().size()); ++k) placed[static_cast<size_t>(i)].push_back(k);
    dead[static_cast<size_t>(i)] = dead[static_cast<size_t>(p->matmul)] = true;
    if (p->transpose >= 0) dead[static_cast<size_t>(p->transpose)] = true;
  }
  if (g.nodes().size() == static_cast<size_t>(n)) return false;
  // The new nodes where the all_reduce they replace stood; then the replaced nodes go.
  std::vector<int> order;
  std::vector<bool> keep;
  for (int i = 0; i < n; ++i) {
    for (int k : placed[static_cast<size_t>(i)]) order.push_back(k), keep.push_back(true);
    order.push_back(i);
    keep.push_back(!dead[static_cast<size_t>(i)]);
  }
  reorder_nodes(g, order);
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft

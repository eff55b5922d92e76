#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/fused_kind.h"
#include "passes/fuse_elementwise_grouping.h"

namespace weft {
namespace {

bool plain_dtype(DType d) {
  return d == DType::f32 || d == DType::f64 || d == DType::i32 || d == DType::i64 ||
         d == DType::boolean;
}

// The body of one group: its external operands become inputs (first use first), the
// members are copied in order, the root's value is the output.
std::shared_ptr<const Graph> make_body(const Graph& g, const std::vector<int>& members,
                                       const std::vector<int>& extra,
                                       std::vector<ValueId>& operands) {
  auto body = std::make_shared<Graph>("body");
  std::unordered_map<ValueId, ValueId> inner;  // outer value -> body value
  for (int m : members) inner[g.node(m).result()] = kNoValue;
  for (int m : members) {
    for (ValueId v : g.node(m).operands) {
      if (inner.count(v)) continue;
      inner[v] = body->add_input(std::to_string(operands.size()), g.type(v));
      operands.push_back(v);
    }
  }
  int next = 0;
  for (int m : members) {
    const Node& n = g.node(m);
    std::vector<ValueId> args;
    for (ValueId v : n.operands) args.push_back(inner.at(v));
    inner[n.result()] = body->add_node(n.op, std::move(args), n.attrs, n.loc, g.type(n.result()),
                                       "t" + std::to_string(next++));
  }
  body->add_output(inner.at(g.node(members.back()).result()));
  for (int p : extra) body->add_output(inner.at(g.node(p).result()));
  return body;
}
}  // namespace

bool is_row_shape(const Shape& row, const Shape& full) {
  if (row.rank() != full.rank() || row == full) return false;
  bool reducing = false;
  for (int j = 0; j < full.rank(); ++j) {
    if (row[j] != full[j] && row[j] != 1) return false;
    if (full[j] == 1) continue;
    if (row[j] == 1) reducing = true;
    else if (reducing) return false;  // A kept axis after a reduced one.
  }
  return true;
}

bool default_fusible(const Graph& g, const Node& node) {
  const OpCategory c = node.info().category;
  if (node.result() == kNoValue) return false;
  if (c == OpCategory::Reduction) {  // A float reduction keeping its dtype (not argmax).
    const DType d = g.type(node.result()).dtype;
    return node.operands.size() == 1 && g.type(node.operands[0]).dtype == d &&
           (d == DType::f32 || d == DType::f64);
  }
  if (c != OpCategory::Elementwise) return false;
  if (!plain_dtype(g.type(node.result()).dtype)) return false;
  for (ValueId v : node.operands) {
    if (!plain_dtype(g.type(v).dtype)) return false;
  }
  return true;
}

FuseElementwisePass::FuseElementwisePass(FuseOptions options) : options_(std::move(options)) {
  if (!options_.fusible) options_.fusible = default_fusible;
}

namespace {

// Every node's result must be typed: the grouping compares shapes.
Status check_typed(const Graph& g) {
  for (const Node& node : g.nodes()) {
    for (ValueId r : node.results) {
      if (!g.value(r).type) {
        return Error{"fuse-elementwise: %" + g.value(r).name + " has no type; run infer-types first",
                     node.loc};
      }
    }
  }
  return Status();
}

// One reduction computing the kernel's one result: a reduction kernel; reductions whose
// per-row values other members consume: a row kernel.
FusedKind group_kind(const FusionGrouping& grouping, const std::vector<int>& members,
                     const std::vector<int>& extra) {
  const int reductions = static_cast<int>(std::count_if(
      members.begin(), members.end(), [&](int m) { return grouping.is_reduction(m); }));
  const bool last_reduces = grouping.is_reduction(members.back()) && extra.empty();
  if (reductions > 1 || (reductions == 1 && !last_reduces)) return FusedKind::row;
  return reductions == 1 ? FusedKind::reduction : FusedKind::elementwise;
}

// The group's root becomes its `fused` node; the other members are marked in `keep`
// for removal. The extra results move from their producers to the fused node, names
// and all.
void replace_group(Graph& g, const FusionGrouping& grouping, std::vector<int>& members,
                   std::vector<int>& extra, std::vector<bool>& keep) {
  std::sort(members.begin(), members.end());  // topological: the root is last
  std::sort(extra.begin(), extra.end());
  const FusedKind kind = group_kind(grouping, members, extra);
  std::vector<ValueId> operands;
  std::shared_ptr<const Graph> body = make_body(g, members, extra, operands);
  std::vector<ValueId> results = {g.node(members.back()).result()};
  for (int p : extra) {
    results.push_back(g.node(p).result());
    g.node(p).results.clear();
  }
  Node& root = g.node(members.back());
  root.results = std::move(results);
  root.op = Op::Fused;
  root.operands = std::move(operands);
  root.attrs = {};
  set_fused_kind(root, kind);
  root.body = std::move(body);
  for (size_t k = 0; k + 1 < members.size(); ++k) keep[members[k]] = false;
}

// A cast from a float dtype to a wider one (bf16 → f32): exact, so recomputing it gives
// the same value as loading its stored result.
bool widens_exactly(const Graph& g, const Node& n) {
  if (n.info().math != MathClass::Cast) return false;
  const DType from = g.type(n.operands[0]).dtype, to = g.type(n.result()).dtype;
  return is_floating(from) && is_floating(to) && dtype_size(to) > dtype_size(from);
}

// Each node's distinct users, by value.
std::vector<std::vector<int>> node_users(const Graph& g) {
  std::vector<std::vector<int>> users(g.num_values());
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    for (ValueId v : g.node(i).operands) {
      if (users[v].empty() || users[v].back() != i) users[v].push_back(i);
    }
  }
  return users;
}

// Whether each use of `v` is an operand of a node the fuser may take (no graph output,
// assign or library op reads it), and there are several such nodes.
bool read_only_by_kernels(const Graph& g, ValueId v, const std::vector<int>& users,
                          const std::vector<int>& uses, const FuseOptions& options) {
  int operand_uses = 0;
  for (int u : users) {
    if (!may_fuse(g, g.node(u), options)) return false;
    operand_uses += static_cast<int>(std::count(g.node(u).operands.begin(), g.node(u).operands.end(), v));
  }
  return users.size() > 1 && operand_uses == uses[v];
}

// A widening cast read only by several nodes the fuser may take is replaced by a copy of
// its own for each of them, placed where it stood, so that each user's kernel loads the
// narrow value and widens it (see "Widening casts" at the top of fuse_elementwise.h).
bool copy_widening_casts(Graph& g, const FuseOptions& options) {
  const std::vector<std::vector<int>> users = node_users(g);
  const std::vector<int> uses = g.use_counts();
  const int n = static_cast<int>(g.nodes().size());
  std::vector<std::vector<int>> copies(n);  // cast node -> its copies' node indices
  for (int c = 0; c < n; ++c) {
    const ValueId v = g.node(c).result();
    if (!widens_exactly(g, g.node(c)) || !may_fuse(g, g.node(c), options) ||
        !read_only_by_kernels(g, v, users[v], uses, options)) {
      continue;
    }
    for (int u : users[v]) {
      const Node cast = g.node(c);  // add_node may move the nodes
      const ValueId copy = g.add_node(Op::Cast, cast.operands, cast.attrs, cast.loc, g.type(v));
      copies[c].push_back(static_cast<int>(g.nodes().size()) - 1);
      std::replace(g.node(u).operands.begin(), g.node(u).operands.end(), v, copy);
    }
  }
  if (std::all_of(copies.begin(), copies.end(), [](const auto& c) { return c.empty(); })) return false;
  std::vector<Node> order;
  std::vector<bool> kept;
  std::vector<Node>& nodes = g.mutable_nodes();
  for (int i = 0; i < n; ++i) {
    order.push_back(std::move(nodes[i]));
    kept.push_back(copies[i].empty());  // a copied cast has no uses left
    for (int k : copies[i]) {
      order.push_back(std::move(nodes[k]));
      kept.push_back(true);
    }
  }
  nodes = std::move(order);
  g.remove_nodes(kept);
  return true;
}

}  // namespace

StatusOr<bool> FuseElementwisePass::run(Graph& g) {
  WEFT_RETURN_IF_ERROR(check_typed(g));
  const bool copied = copy_widening_casts(g, options_);
  FusionGrouping grouping(g, options_);
  grouping.form();
  if (grouping.groups().empty()) return copied;
  std::vector<bool> keep(g.nodes().size(), true);
  for (size_t id = 0; id < grouping.groups().size(); ++id) {
    replace_group(g, grouping, grouping.groups()[id], grouping.extra()[id], keep);
  }
  g.remove_nodes(keep);
  // An assign of an extra result may stand before the fused node that now computes it.
  g.sort_topologically();
  return true;
}

}  // namespace weft

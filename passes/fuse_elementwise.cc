#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

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

StatusOr<bool> FuseElementwisePass::run(Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  for (const Node& node : g.nodes()) {
    for (ValueId r : node.results) {
      if (!g.value(r).type) {
        return Error{"fuse-elementwise: %" + g.value(r).name + " has no type; run infer-types first",
                     node.loc};
      }
    }
  }
  // A fusible node may be a root; only elementwise ones may join a group as producers.
  std::vector<char> fusible(n), reduction(n);
  for (int i = 0; i < n; ++i) {
    const OpCategory c = g.node(i).info().category;
    reduction[i] = c == OpCategory::Reduction;
    fusible[i] = (c == OpCategory::Elementwise || reduction[i]) && options_.fusible(g, g.node(i));
  }

  // Users of each value: node indices, or n for a graph output.
  std::vector<std::vector<int>> users(g.num_values());
  for (int i = 0; i < n; ++i) {
    for (ValueId v : g.node(i).operands) users[v].push_back(i);
  }
  for (ValueId v : g.outputs()) users[v].push_back(n);

  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> groups;  // member node indices, root first
  std::vector<std::vector<int>> extra;   // members whose value also leaves the kernel
  for (int root = n - 1; root >= 0; --root) {
    if (!fusible[root] || group[root] >= 0) continue;
    const int id = static_cast<int>(groups.size());
    groups.push_back({root});
    extra.emplace_back();
    group[root] = id;
    // Producers have the iteration space's shape: a reduction's input shape.
    const Node& r = g.node(root);
    const Shape& shape = g.type(reduction[root] ? r.operands[0] : r.result()).shape;
    for (size_t k = 0; k < groups[id].size(); ++k) {
      for (ValueId v : g.node(groups[id][k]).operands) {
        const int p = g.value(v).node;
        if (p < 0 || !fusible[p] || reduction[p] || group[p] >= 0) continue;
        if (!(g.type(v).shape == shape)) continue;
        // Every use inside the group — or, under an elementwise root, outside it only by
        // assigns: the value then also leaves the kernel as one more result (an
        // optimizer's new moment estimates: one kernel computes them and the parameter).
        bool inside = true, escapes = false;
        for (int u : users[v]) {
          if (u < n && group[u] == id) continue;
          const bool to_assign = u < n && g.node(u).op == Op::Assign && !reduction[root];
          escapes = escapes || to_assign;
          inside = inside && to_assign;
        }
        if (!inside) continue;
        group[p] = id;
        groups[id].push_back(p);
        if (escapes) extra[id].push_back(p);
      }
    }
    if (reduction[root] && groups[id].size() == 1) {  // Alone: the library kernel stays.
      group[root] = -1;
      groups.pop_back();
      extra.pop_back();
    }
  }
  if (groups.empty()) return false;

  std::vector<bool> keep(n, true);
  for (size_t id = 0; id < groups.size(); ++id) {
    std::vector<int>& members = groups[id];
    std::sort(members.begin(), members.end());  // topological: the root is last
    std::sort(extra[id].begin(), extra[id].end());
    std::vector<ValueId> operands;
    std::shared_ptr<const Graph> body = make_body(g, members, extra[id], operands);
    // The extra results move from their producers to the fused node, names and all.
    std::vector<ValueId> results = {g.node(members.back()).result()};
    for (int p : extra[id]) {
      results.push_back(g.node(p).result());
      g.node(p).results.clear();
    }
    Node& root = g.node(members.back());
    root.results = std::move(results);
    const bool reduces = reduction[members.back()];
    root.op = Op::Fused;
    root.operands = std::move(operands);
    root.attrs = {};
    if (reduces) root.attrs["kind"] = std::string("reduction");
    root.body = std::move(body);
    for (size_t k = 0; k + 1 < members.size(); ++k) keep[members[k]] = false;
  }
  g.remove_nodes(keep);
  // An assign of an extra result may stand before the fused node that now computes it.
  g.sort_topologically();
  return true;
}

}  // namespace weft

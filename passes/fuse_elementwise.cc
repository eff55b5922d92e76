#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
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

  // Whether node `from` reaches node `to` through users (nodes after `to` cannot).
  auto reaches = [&](int from, int to) {
    std::vector<int> stack = {from};
    std::unordered_set<int> seen = {from};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (i == to) return true;
      for (ValueId r : g.node(i).results) {
        for (int u : users[r]) {
          if (u <= to && seen.insert(u).second) stack.push_back(u);
        }
      }
    }
    return false;
  };

  std::vector<int> group;
  std::vector<std::vector<int>> groups;  // member node indices, root first
  std::vector<std::vector<int>> extra;   // members whose value also leaves the kernel
  // `relaxed`: a row group's member may also be used by a node before the root that
  // does not lead back to it (layer-norm backward's x̂ in the gain's gradient, computed
  // before the GELU backward that ends the group); `later`: an elementwise group's
  // member may also be used after the root (it leaves the kernel as an extra result);
  // the caller then checks that the groups together leave the graph acyclic.
  auto form_groups = [&](bool relaxed, bool later) {
    group.assign(n, -1);
    groups.clear();
    extra.clear();
    for (int root = n - 1; root >= 0; --root) {
      if (!fusible[root] || group[root] >= 0) continue;
      const int id = static_cast<int>(groups.size());
      groups.push_back({root});
      extra.emplace_back();
      group[root] = id;
      // Members compute `full` (a reduction root: its input's shape) or, in a row group,
      // the per-row shape `row` of its keepdims reductions.
      const Node& r = g.node(root);
      Shape full = g.type(reduction[root] ? r.operands[0] : r.result()).shape;
      std::optional<Shape> row;
      if (options_.rows && reduction[root] && is_row_shape(g.type(r.result()).shape, full)) {
        row = g.type(r.result()).shape;
      }
      // Whether a keepdims reduction of `full` to `s` computes p's value through fusible
      // per-row nodes of shape `s` not yet in a group (each node visited once).
      auto from_row_reduction = [&](int p, const Shape& s) {
        std::vector<int> stack = {p};
        std::unordered_set<int> seen = {p};
        while (!stack.empty()) {
          const int i = stack.back();
          const Node& node = g.node(i);
          stack.pop_back();
          if (reduction[i]) {
            if (g.type(node.operands[0]).shape == full && node.bool_attr("keepdims")) return true;
            continue;
          }
          for (ValueId v : node.operands) {
            const int q = g.value(v).node;
            if (q >= 0 && fusible[q] && group[q] < 0 && g.type(v).shape == s && seen.insert(q).second) {
              stack.push_back(q);
            }
          }
        }
        return false;
      };
      // A reduction root of other axes (a column sum) keeps to its input's producers.
      const bool rows = options_.rows && (!reduction[root] || row.has_value());
      auto admits = [&](int p) {
        const Shape& s = g.type(g.node(p).result()).shape;
        if (!rows) return !reduction[p] && s == full;
        if (!reduction[p]) {
          if (s == full || (row && s == *row)) return true;
          // A per-row value (log-softmax's log of the sum) may open a row group when a
          // row reduction computes it.
          if (row || !is_row_shape(s, full) || !from_row_reduction(p, s)) return false;
          row = s;
          return true;
        }
        const Shape& in = g.type(g.node(p).operands[0]).shape;
        if (!g.node(p).bool_attr("keepdims")) return false;
        if (row) return in == full && s == *row;
        if (in == full && is_row_shape(s, full)) {
          row = s;
        } else if (!reduction[root] && s == full && is_row_shape(s, in)) {
          row = full;  // The members so far compute per-row values.
          full = in;
        } else {
          return false;
        }
        return true;
      };
      // Producers join until none can: one that fails only because a user is not in the
      // group yet may join once it is (softmax's exp feeds the sum and the division).
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t k = 0; k < groups[id].size(); ++k) {
          for (ValueId v : g.node(groups[id][k]).operands) {
            const int p = g.value(v).node;
            if (p < 0 || !fusible[p] || group[p] >= 0) continue;
            // Every use inside the group; or outside it, in a row group or under an
            // elementwise root by nodes after the root, under an elementwise root by
            // assigns: the value then also leaves the kernel as one more result (an
            // optimizer's new moment estimates: one kernel computes them and the
            // parameter; an LSTM cell's gate activations, which its backward reads
            // again; layer-norm backward's x̂, also summed over the batch for the gain's
            // gradient).
            bool inside = true, escapes = false;
            for (int u : users[v]) {
              if (u < n && group[u] == id) continue;
              const bool ok = (row && (u > root || (relaxed && u < n && !reaches(u, root)))) ||
                              (later && !reduction[root] && u > root) ||
                              (u < n && g.node(u).op == Op::Assign && !reduction[root]);
              escapes = escapes || ok;
              inside = inside && ok;
            }
            if (!inside) continue;
            if (!admits(p)) continue;
            group[p] = id;
            groups[id].push_back(p);
            if (escapes) extra[id].push_back(p);
            grew = true;
          }
        }
      }
      if (reduction[root] && groups[id].size() == 1 && !options_.lone_reductions) {
        // Alone: the library kernel stays.
        group[root] = -1;
        groups.pop_back();
        extra.pop_back();
      }
    }
  };
  // Each group contracted to one node, the graph must stay acyclic (Kahn's algorithm on
  // the clusters: groups, then one per ungrouped node); if not, group strictly.
  auto acyclic = [&]() {
    const int clusters = static_cast<int>(groups.size()) + n;
    auto cluster = [&](int i) { return group[i] >= 0 ? group[i] : static_cast<int>(groups.size()) + i; };
    std::vector<std::vector<int>> next(clusters);
    std::vector<int> indegree(clusters, 0);
    for (int i = 0; i < n; ++i) {
      for (ValueId v : g.node(i).operands) {
        const int p = g.value(v).node;
        if (p < 0 || cluster(p) == cluster(i)) continue;
        next[cluster(p)].push_back(cluster(i));
        ++indegree[cluster(i)];
      }
    }
    std::vector<int> ready;
    for (int c = 0; c < clusters; ++c) {
      if (indegree[c] == 0) ready.push_back(c);
    }
    int done = 0;
    while (!ready.empty()) {
      const int c = ready.back();
      ready.pop_back();
      ++done;
      for (int d : next[c]) {
        if (--indegree[d] == 0) ready.push_back(d);
      }
    }
    return done == clusters;
  };
  // Contracting the groups must leave the graph acyclic; when the escapes to later
  // users or the relaxed rows make a cycle, form the groups again without them.
  form_groups(options_.rows, true);
  if (!acyclic()) form_groups(options_.rows, false);
  if (!acyclic()) form_groups(false, false);
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
    // One reduction computing the kernel's one result: kind="reduction"; reductions
    // whose per-row values other members consume: a row kernel.
    const int reductions = static_cast<int>(
        std::count_if(members.begin(), members.end(), [&](int m) { return reduction[m]; }));
    const bool last_reduces = reduction[members.back()] && extra[id].empty();
    root.op = Op::Fused;
    root.operands = std::move(operands);
    root.attrs = {};
    if (reductions > 1 || (reductions == 1 && !last_reduces)) {
      root.attrs["kind"] = std::string("row");
    } else if (reductions == 1) {
      root.attrs["kind"] = std::string("reduction");
    }
    root.body = std::move(body);
    for (size_t k = 0; k + 1 < members.size(); ++k) keep[members[k]] = false;
  }
  g.remove_nodes(keep);
  // An assign of an extra result may stand before the fused node that now computes it.
  g.sort_topologically();
  return true;
}

}  // namespace weft

#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/fused_kind.h"

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

// The group being grown: its id and root, the shape `full` its members compute (a
// reduction root: its input's shape) and, in a row group, the per-row shape `row` of its
// keepdims reductions; `rows`: whether it may take row reductions and per-row values.
struct Growing {
  int id = -1;
  int root = -1;
  Shape full;
  std::optional<Shape> row;
  bool rows = false;
};

// The grouping of one graph into kernels (see the top of fuse_elementwise.h): each
// group's member node indices (root first), and the members whose value also leaves
// the kernel.
class Grouping {
 public:
  Grouping(const Graph& g, const FuseOptions& options)
      : g_(g), options_(options), n_(static_cast<int>(g.nodes().size())) {
    classify_nodes();
    find_users();
  }

  // Forms the groups; when contracting them would make the graph cyclic (through the
  // escapes to later users or the relaxed rows), forms them again without those.
  void form() {
    form_groups(/*relaxed=*/options_.rows, /*later=*/true);
    if (!acyclic()) form_groups(options_.rows, false);
    if (!acyclic()) form_groups(false, false);
  }

  std::vector<std::vector<int>>& groups() { return groups_; }
  std::vector<std::vector<int>>& extra() { return extra_; }
  bool is_reduction(int i) const { return reduction_[i]; }

 private:
  // A fusible node may be a root; only elementwise ones may join a group as producers.
  void classify_nodes() {
    fusible_.assign(n_, 0);
    reduction_.assign(n_, 0);
    for (int i = 0; i < n_; ++i) {
      const OpCategory c = g_.node(i).info().category;
      reduction_[i] = c == OpCategory::Reduction;
      fusible_[i] = (c == OpCategory::Elementwise || reduction_[i]) && options_.fusible(g_, g_.node(i));
    }
  }

  // Users of each value: node indices, or n for a graph output.
  void find_users() {
    users_.assign(g_.num_values(), {});
    for (int i = 0; i < n_; ++i) {
      for (ValueId v : g_.node(i).operands) users_[v].push_back(i);
    }
    for (ValueId v : g_.outputs()) users_[v].push_back(n_);
  }

  // Whether node `from` reaches node `to` through users (nodes after `to` cannot).
  bool reaches(int from, int to) const {
    std::vector<int> stack = {from};
    std::unordered_set<int> seen = {from};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (i == to) return true;
      for (ValueId r : g_.node(i).results) {
        for (int u : users_[r]) {
          if (u <= to && seen.insert(u).second) stack.push_back(u);
        }
      }
    }
    return false;
  }

  // `relaxed`: a row group's member may also be used by a node before the root that
  // does not lead back to it (layer-norm backward's x̂ in the gain's gradient, computed
  // before the GELU backward that ends the group); `later`: an elementwise group's
  // member may also be used after the root (it leaves the kernel as an extra result);
  // form() then checks that the groups together leave the graph acyclic.
  void form_groups(bool relaxed, bool later) {
    relaxed_ = relaxed;
    later_ = later;
    group_.assign(n_, -1);
    groups_.clear();
    extra_.clear();
    for (int root = n_ - 1; root >= 0; --root) {
      if (fusible_[root] && group_[root] < 0) grow_group(root);
    }
  }

  // Starts a group at `root` and lets producers join until none can: one that fails
  // only because a user is not in the group yet may join once it is (softmax's exp
  // feeds the sum and the division). A reduction that absorbs nothing stays alone.
  void grow_group(int root) {
    Growing grow = start_group(root);
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t k = 0; k < groups_[grow.id].size(); ++k) {
        for (ValueId v : g_.node(groups_[grow.id][k]).operands) grew = try_join(v, grow) || grew;
      }
    }
    if (reduction_[root] && groups_[grow.id].size() == 1 && !options_.lone_reductions) {
      group_[root] = -1;  // Alone: the library kernel stays.
      groups_.pop_back();
      extra_.pop_back();
    }
  }

  Growing start_group(int root) {
    Growing grow;
    grow.id = static_cast<int>(groups_.size());
    grow.root = root;
    groups_.push_back({root});
    extra_.emplace_back();
    group_[root] = grow.id;
    const Node& r = g_.node(root);
    grow.full = g_.type(reduction_[root] ? r.operands[0] : r.result()).shape;
    if (options_.rows && reduction_[root] && is_row_shape(g_.type(r.result()).shape, grow.full)) {
      grow.row = g_.type(r.result()).shape;
    }
    // A reduction root of other axes (a column sum) keeps to its input's producers.
    grow.rows = options_.rows && (!reduction_[root] || grow.row.has_value());
    return grow;
  }

  // The producer of `v` joins the group when it is fusible, in no group yet, every use
  // of `v` allows it (used_only_inside) and its shape fits (admits). True if it joined.
  bool try_join(ValueId v, Growing& grow) {
    const int p = g_.value(v).node;
    if (p < 0 || !fusible_[p] || group_[p] >= 0) return false;
    bool escapes = false;
    if (!used_only_inside(v, grow, escapes) || !admits(p, grow)) return false;
    group_[p] = grow.id;
    groups_[grow.id].push_back(p);
    if (escapes) extra_[grow.id].push_back(p);
    return true;
  }

  // Every use of `v` inside the group; or outside it, in a row group or under an
  // elementwise root by nodes after the root, under an elementwise root by assigns:
  // the value then also leaves the kernel as one more result (`escapes`: an
  // optimizer's new moment estimates: one kernel computes them and the parameter; an
  // LSTM cell's gate activations, which its backward reads again; layer-norm
  // backward's x̂, also summed over the batch for the gain's gradient).
  bool used_only_inside(ValueId v, const Growing& grow, bool& escapes) const {
    const int root = grow.root;
    bool inside = true;
    for (int u : users_[v]) {
      if (u < n_ && group_[u] == grow.id) continue;
      const bool ok = (grow.row && (u > root || (relaxed_ && u < n_ && !reaches(u, root)))) ||
                      (later_ && !reduction_[root] && u > root) ||
                      (u < n_ && g_.node(u).op == Op::Assign && !reduction_[root]);
      escapes = escapes || ok;
      inside = inside && ok;
    }
    return inside;
  }

  // Whether producer `p` has a shape the group computes; a row reduction or a per-row
  // value may make the group a row group (setting grow.row, and grow.full when the
  // members so far compute per-row values).
  bool admits(int p, Growing& grow) const {
    const Shape& s = g_.type(g_.node(p).result()).shape;
    if (!grow.rows) return !reduction_[p] && s == grow.full;
    if (!reduction_[p]) {
      if (s == grow.full || (grow.row && s == *grow.row)) return true;
      // A per-row value (log-softmax's log of the sum) may open a row group when a
      // row reduction computes it.
      if (grow.row || !is_row_shape(s, grow.full) || !from_row_reduction(p, s, grow.full)) {
        return false;
      }
      grow.row = s;
      return true;
    }
    const Shape& in = g_.type(g_.node(p).operands[0]).shape;
    if (!g_.node(p).bool_attr("keepdims")) return false;
    if (grow.row) return in == grow.full && s == *grow.row;
    if (in == grow.full && is_row_shape(s, grow.full)) {
      grow.row = s;
    } else if (!reduction_[grow.root] && s == grow.full && is_row_shape(s, in)) {
      grow.row = grow.full;  // The members so far compute per-row values.
      grow.full = in;
    } else {
      return false;
    }
    return true;
  }

  // Whether a keepdims reduction of `full` to `s` computes p's value through fusible
  // per-row nodes of shape `s` not yet in a group (each node visited once).
  bool from_row_reduction(int p, const Shape& s, const Shape& full) const {
    std::vector<int> stack = {p};
    std::unordered_set<int> seen = {p};
    while (!stack.empty()) {
      const int i = stack.back();
      const Node& node = g_.node(i);
      stack.pop_back();
      if (reduction_[i]) {
        if (g_.type(node.operands[0]).shape == full && node.bool_attr("keepdims")) return true;
        continue;
      }
      for (ValueId v : node.operands) {
        const int q = g_.value(v).node;
        if (q >= 0 && fusible_[q] && group_[q] < 0 && g_.type(v).shape == s && seen.insert(q).second) {
          stack.push_back(q);
        }
      }
    }
    return false;
  }

  // Each group contracted to one node, whether the graph stays acyclic (Kahn's
  // algorithm on the clusters: groups, then one per ungrouped node).
  bool acyclic() const {
    const int num_groups = static_cast<int>(groups_.size());
    const int clusters = num_groups + n_;
    const auto cluster = [this, num_groups](int i) { return group_[i] >= 0 ? group_[i] : num_groups + i; };
    std::vector<std::vector<int>> next(clusters);
    std::vector<int> indegree(clusters, 0);
    for (int i = 0; i < n_; ++i) {
      for (ValueId v : g_.node(i).operands) {
        const int p = g_.value(v).node;
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
  }

  const Graph& g_;
  const FuseOptions& options_;
  const int n_;
  std::vector<char> fusible_, reduction_;
  std::vector<std::vector<int>> users_;
  bool relaxed_ = false, later_ = false;
  std::vector<int> group_;               // node -> its group, or -1
  std::vector<std::vector<int>> groups_;  // member node indices, root first
  std::vector<std::vector<int>> extra_;   // members whose value also leaves the kernel
};

// One reduction computing the kernel's one result: a reduction kernel; reductions whose
// per-row values other members consume: a row kernel.
FusedKind group_kind(const Grouping& grouping, const std::vector<int>& members,
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
void replace_group(Graph& g, const Grouping& grouping, std::vector<int>& members,
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

}  // namespace

StatusOr<bool> FuseElementwisePass::run(Graph& g) {
  WEFT_RETURN_IF_ERROR(check_typed(g));
  Grouping grouping(g, options_);
  grouping.form();
  if (grouping.groups().empty()) return false;
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

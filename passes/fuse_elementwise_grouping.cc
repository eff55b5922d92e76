// The grouping step of fuse-elementwise (passes/fuse_elementwise_grouping.h).
#include "passes/fuse_elementwise_grouping.h"

#include <unordered_set>

namespace weft {

bool may_fuse(const Graph& g, const Node& node, const FuseOptions& options) {
  const OpCategory c = node.info().category;
  return (c == OpCategory::Elementwise || c == OpCategory::Reduction) && options.fusible(g, node);
}

FusionGrouping::FusionGrouping(const Graph& g, const FuseOptions& options)
    : g_(g), options_(options), n_(static_cast<int>(g.nodes().size())) {
  classify_nodes();
  find_users();
}

void FusionGrouping::form() {
  form_groups(/*relaxed=*/options_.rows, /*later=*/true, /*parts=*/options_.merge_parts);
  if (!acyclic() && options_.merge_parts) form_groups(options_.rows, true, false);
  if (!acyclic()) form_groups(options_.rows, false, false);
  if (!acyclic()) form_groups(false, false, false);
  if (options_.merge_parts) merge_readers();
}

void FusionGrouping::classify_nodes() {
  fusible_.assign(n_, 0);
  reduction_.assign(n_, 0);
  for (int i = 0; i < n_; ++i) {
    reduction_[i] = g_.node(i).info().category == OpCategory::Reduction;
    fusible_[i] = may_fuse(g_, g_.node(i), options_);
  }
}

void FusionGrouping::find_users() {
  users_.assign(g_.num_values(), {});
  for (int i = 0; i < n_; ++i) {
    for (ValueId v : g_.node(i).operands) users_[v].push_back(i);
  }
  for (ValueId v : g_.outputs()) users_[v].push_back(n_);
}

bool FusionGrouping::reaches(int from, int to) const {
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

void FusionGrouping::form_groups(bool relaxed, bool later, bool parts) {
  relaxed_ = relaxed;
  later_ = later;
  parts_ = parts;
  group_.assign(n_, -1);
  groups_.clear();
  extra_.clear();
  for (int root = n_ - 1; root >= 0; --root) {
    if (fusible_[root] && group_[root] < 0) grow_group(root);
  }
}

void FusionGrouping::grow_group(int root) {
  GrowingGroup grow = start_group(root);
  const std::vector<int> parts = parts_ && !reduction_[root] ? concat_parts(root) : std::vector<int>{root};
  if (parts.size() > 1) {
    grow.rows = false;  // an elementwise kernel, so that it may store its parts in place
    for (size_t k = 1; k < parts.size(); ++k) {
      group_[parts[k]] = grow.id;
      groups_[grow.id].push_back(parts[k]);
      extra_[grow.id].push_back(parts[k]);  // read by its concat, after the root
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t k = 0; k < groups_[grow.id].size(); ++k) {
      for (ValueId v : g_.node(groups_[grow.id][k]).operands) grew = try_join(v, grow) || grew;
    }
  }
  if (reduction_[root] && groups_[grow.id].size() == 1 && !kernel_when_alone(root)) {
    group_[root] = -1;  // Alone: the library kernel stays.
    groups_.pop_back();
    extra_.pop_back();
  }
}

bool FusionGrouping::kernel_when_alone(int root) const {
  const DType in = g_.type(g_.node(root).operands[0]).dtype;
  return options_.lone_reductions ||
         (options_.lone_half_reductions && is_half(in));
}

GrowingGroup FusionGrouping::start_group(int root) {
  GrowingGroup grow;
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

bool FusionGrouping::try_join(ValueId v, GrowingGroup& grow) {
  const int p = g_.value(v).node;
  if (p < 0 || !fusible_[p] || group_[p] >= 0) return false;
  bool escapes = false;
  if (!used_only_inside(v, grow, escapes) || !admits(p, grow)) return false;
  group_[p] = grow.id;
  groups_[grow.id].push_back(p);
  if (escapes) extra_[grow.id].push_back(p);
  return true;
}

bool FusionGrouping::used_only_inside(ValueId v, const GrowingGroup& grow, bool& escapes) const {
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

bool FusionGrouping::admits(int p, GrowingGroup& grow) const {
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

bool FusionGrouping::from_row_reduction(int p, const Shape& s, const Shape& full) const {
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

bool FusionGrouping::acyclic() const {
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

}  // namespace weft

// The grouping's kernels that share their work (passes/fuse_elementwise.h, "Parts of one
// concat" and "Readers"): FusionGrouping's parts of one concat, and readers joining their
// producer's group.
#include <algorithm>
#include <unordered_set>

#include "passes/fuse_elementwise_grouping.h"

namespace weft {

bool FusionGrouping::reaches_any(int from, const std::vector<int>& targets, int last) const {
  for (int t : targets) {
    if (t <= last && reaches(from, t)) return true;
  }
  return false;
}

std::vector<int> FusionGrouping::concat_parts(int root) const {
  const Shape& space = g_.type(g_.node(root).result()).shape;
  const auto candidate = [&](int p) {
    return p >= 0 && fusible_[p] && !reduction_[p] && group_[p] < 0 && g_.node(p).results.size() == 1 &&
           g_.type(g_.node(p).result()).shape == space;
  };
  std::vector<int> parts = {root};
  std::unordered_set<int> seen = {root};
  for (size_t k = 0; k < parts.size(); ++k) {
    for (int u : users_[g_.node(parts[k]).result()]) {
      // The one op named here: a concat's operands are what fold-concats can have their
      // kernels store side by side in its buffer (passes/fold_concats.h); the op table
      // has no category for "gathers its operands whole".
      if (u == n_ || g_.node(u).op != Op::Concat) continue;
      for (ValueId o : g_.node(u).operands) {
        const int p = g_.value(o).node;
        if (candidate(p) && seen.insert(p).second) parts.push_back(p);
      }
    }
  }
  // Every candidate (other than the root, the last of them) is below the root, since the
  // groups are formed from the last node up. A part with a user before the root that
  // leads back to a part would be needed by its own kernel: it stays out (and the test
  // is redone without it, which may let another in).
  for (bool dropped = true; dropped && parts.size() > 1;) {
    dropped = false;
    for (size_t k = 1; k < parts.size() && !dropped; ++k) {
      for (int u : users_[g_.node(parts[k]).result()]) {
        if (u > root || std::find(parts.begin(), parts.end(), u) != parts.end() ||
            g_.node(u).op == Op::Assign || !reaches_any(u, parts, root)) {
          continue;
        }
        parts.erase(parts.begin() + static_cast<long>(k));
        dropped = true;
        break;
      }
    }
  }
  return parts;
}

void FusionGrouping::merge_readers() {
  const int num_groups = static_cast<int>(groups_.size());
  const auto elementwise = [&](int id) {
    return !groups_[id].empty() && std::none_of(groups_[id].begin(), groups_[id].end(),
                                                [&](int m) { return reduction_[m]; });
  };
  const auto space = [&](int id) { return g_.type(g_.node(groups_[id][0]).result()).shape; };
  for (int reader = 0; reader < num_groups; ++reader) {
    if (!elementwise(reader)) continue;
    // The group the reader's first outside operand computed in a group comes from.
    int from = -1;
    for (int m : groups_[reader]) {
      for (ValueId v : g_.node(m).operands) {
        const int p = g_.value(v).node;
        if (from < 0 && p >= 0 && group_[p] >= 0 && group_[p] != reader) from = group_[p];
      }
    }
    if (from < 0 || !elementwise(from) || space(from) != space(reader)) continue;
    // Every value it reads from the producer is read by the two kernels alone (joined,
    // none is stored for it: an optimizer update reading a gradient that a sum reads too
    // stays apart, for merge-updates); every other outside operand is an input, or a node
    // outside the groups before the producer's first member (no node path leads to it
    // from the producer's kernel; one through a third group is checked below).
    const int first = *std::min_element(groups_[from].begin(), groups_[from].end());
    bool joins = true;
    for (int m : groups_[reader]) {
      for (ValueId v : g_.node(m).operands) {
        const int p = g_.value(v).node;
        if (p >= 0 && group_[p] == from) {
          for (int u : users_[v]) joins = joins && u < n_ && (group_[u] == from || group_[u] == reader);
        } else {
          joins = joins && (p < 0 || group_[p] == reader || (group_[p] < 0 && p < first));
        }
      }
    }
    if (!joins) continue;
    for (int m : groups_[reader]) group_[m] = from;
    if (!acyclic()) {  // a path through a third group back to the producer's
      for (int m : groups_[reader]) group_[m] = reader;
      continue;
    }
    groups_[from].insert(groups_[from].end(), groups_[reader].begin(), groups_[reader].end());
    groups_[reader].clear();
    extra_[from] = escaping(from);
  }
  // Renumber the groups left.
  std::vector<std::vector<int>> groups, extra;
  for (int id = 0; id < num_groups; ++id) {
    if (groups_[id].empty()) continue;
    for (int m : groups_[id]) group_[m] = static_cast<int>(groups.size());
    groups.push_back(std::move(groups_[id]));
    extra.push_back(std::move(extra_[id]));
  }
  groups_ = std::move(groups);
  extra_ = std::move(extra);
}

std::vector<int> FusionGrouping::escaping(int id) const {
  const int last = *std::max_element(groups_[id].begin(), groups_[id].end());
  std::vector<int> out;
  for (int m : groups_[id]) {
    if (m == last) continue;
    const std::vector<int>& users = users_[g_.node(m).result()];
    if (std::any_of(users.begin(), users.end(), [&](int u) { return u == n_ || group_[u] != id; })) {
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace weft

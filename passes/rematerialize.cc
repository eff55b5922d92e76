#include "passes/rematerialize.h"

#include <algorithm>
#include <climits>
#include <unordered_map>
#include <vector>

namespace weft {
namespace {

// A node no fusion joins to elementwise kernels on either side: a kernel boundary on
// every backend. Reductions are not (row kernels take them with their producers and
// readers: a norm's centred values read again after its statistics stay in one kernel).
bool boundary(const Node& n) {
  const OpCategory c = n.info().category;
  return c == OpCategory::Contraction || c == OpCategory::Composite || c == OpCategory::Other;
}

bool elementwise(const Node& n) {
  return n.info().category == OpCategory::Elementwise && n.results.size() == 1 && n.body == nullptr;
}

class Rematerializer {
 public:
  Rematerializer(Graph& g, const RematerializeOptions& options) : g_(g), options_(options) {
    const int n = static_cast<int>(g.nodes().size());
    uses_.resize(g.num_values());
    pinned_.assign(g.num_values(), false);
    bereft_.assign(g.num_values(), false);
    boundaries_before_.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      const Node& node = g.node(i);
      boundaries_before_[i + 1] = boundaries_before_[i] + (boundary(node) ? 1 : 0);
      for (ValueId o : node.operands) {
        if (uses_[o].empty() || uses_[o].back() != i) uses_[o].push_back(i);
      }
      if (node.op == Op::Assign) {
        for (ValueId o : node.operands) pinned_[o] = true;
      }
    }
    for (ValueId v : g.outputs()) pinned_[v] = true;
    clones_before_.resize(n);
  }

  // Recomputes the reads that qualify (rematerialize.h); true when any did.
  bool rewrite() {
    bool changed = false;
    const int n = static_cast<int>(clones_before_.size());
    for (int u = 0; u < n; ++u) {
      if (!elementwise(g_.node(u))) continue;
      const std::vector<ValueId> operands = g_.node(u).operands;
      for (size_t k = 0; k < operands.size(); ++k) {
        const ValueId v = operands[k];
        if (std::find(operands.begin(), operands.begin() + static_cast<long>(k), v) !=
            operands.begin() + static_cast<long>(k)) {
          continue;  // read twice by u: done with the first
        }
        if (!idle_before(v, u)) continue;
        Chain chain;
        chain.bytes = static_cast<int64_t>(g_.type(v).bytes());
        if (!plan(v, u, chain)) continue;
        recompute(v, u, chain);
        changed = true;
      }
    }
    if (changed) reorder();
    return changed;
  }

 private:
  struct Chain {
    int64_t bytes = 0;               // the recomputed value's
    std::vector<ValueId> values;     // recomputed, operands before their readers
    std::vector<ValueId> leaves;     // read by the recomputation as they are
    std::vector<ValueId> large;      // leaves that are not small
  };

  int last_use(ValueId v) const {
    if (pinned_[v]) return INT_MAX;
    return uses_[v].empty() ? g_.value(v).node : uses_[v].back();
  }

  // Rules (1) and (2): %v, made by an elementwise node, idles across a kernel boundary
  // before u reads it.
  bool idle_before(ValueId v, int u) const {
    const int p = g_.value(v).node;
    if (p < 0 || pinned_[v] || !elementwise(g_.node(p))) return false;
    int previous = p;
    for (int w : uses_[v]) {
      if (w < u) previous = std::max(previous, w);
    }
    return boundaries_before_[u] - boundaries_before_[previous + 1] > 0;
  }

  // Rules (3) and (4): what recomputing v at u reads; false when it may not.
  bool plan(ValueId v, int u, Chain& c) const {
    const int p = g_.value(v).node;
    if (p < 0 || pinned_[v] || !elementwise(g_.node(p))) return false;
    if (static_cast<int>(c.values.size()) >= options_.max_depth) return false;
    for (ValueId x : g_.node(p).operands) {
      if (std::find(c.values.begin(), c.values.end(), x) != c.values.end()) continue;
      const bool small = static_cast<int64_t>(g_.type(x).bytes()) * options_.small_ratio <= c.bytes;
      if (g_.value(x).node < 0 || small || last_use(x) >= u) {
        c.leaves.push_back(x);
        if (!small && std::find(c.large.begin(), c.large.end(), x) == c.large.end()) c.large.push_back(x);
        if (c.large.size() > 1) return false;
        continue;
      }
      if (!plan(x, u, c)) return false;
    }
    c.values.push_back(v);
    return true;
  }

  void recompute(ValueId v, int u, const Chain& c) {
    std::unordered_map<ValueId, ValueId> clone_of;
    for (ValueId x : c.values) {
      const Node from = g_.node(g_.value(x).node);  // a copy: add_node may move the nodes
      std::vector<ValueId> operands = from.operands;
      for (ValueId& o : operands) {
        if (auto it = clone_of.find(o); it != clone_of.end()) o = it->second;
      }
      clone_of[x] = g_.add_node(from.op, std::move(operands), from.attrs, from.loc, g_.type(x));
      clones_before_[u].push_back(static_cast<int>(g_.nodes().size()) - 1);
    }
    for (ValueId& o : g_.node(u).operands) {
      if (o == v) o = clone_of.at(v);
    }
    uses_.resize(g_.num_values());
    pinned_.resize(g_.num_values(), false);
    bereft_.resize(g_.num_values(), false);
    uses_[v].erase(std::remove(uses_[v].begin(), uses_[v].end(), u), uses_[v].end());
    bereft_[v] = true;
    for (ValueId x : c.leaves) {
      std::vector<int>& at = uses_[x];
      if (std::find(at.begin(), at.end(), u) == at.end()) at.insert(std::upper_bound(at.begin(), at.end(), u), u);
    }
  }

  // The clones before their readers; then the producers no read is left to, removed.
  void reorder() {
    const int n = static_cast<int>(clones_before_.size());
    std::vector<Node>& nodes = g_.mutable_nodes();
    std::vector<Node> ordered;
    ordered.reserve(nodes.size());
    for (int i = 0; i < n; ++i) {
      for (int c : clones_before_[i]) ordered.push_back(std::move(nodes[static_cast<size_t>(c)]));
      ordered.push_back(std::move(nodes[static_cast<size_t>(i)]));
    }
    nodes = std::move(ordered);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (ValueId r : nodes[i].results) g_.mutable_value(r).node = static_cast<int>(i);
    }
    // Only what lost reads here: a dead node that was already there stays (dce's job).
    std::vector<int> uses = g_.use_counts();
    std::vector<bool> keep(nodes.size(), true);
    for (size_t i = nodes.size(); i-- > 0;) {
      const Node& node = nodes[i];
      if (!elementwise(node) || !bereft_[node.result()] || uses[node.result()] > 0) continue;
      keep[i] = false;
      for (ValueId o : node.operands) {
        --uses[o];
        bereft_[o] = true;
      }
    }
    g_.remove_nodes(keep);
  }

  Graph& g_;
  const RematerializeOptions& options_;
  std::vector<std::vector<int>> uses_;  // per value: the nodes reading it, ascending
  std::vector<bool> pinned_;            // outputs and assigned values: live to the end
  std::vector<bool> bereft_;            // values that lost a read (removed when none is left)
  std::vector<int> boundaries_before_;  // boundary nodes among the first i
  std::vector<std::vector<int>> clones_before_;  // per original node: clones to place before it
};

}  // namespace

StatusOr<bool> RematerializePass::run(Graph& g) { return Rematerializer(g, options_).rewrite(); }

}  // namespace weft

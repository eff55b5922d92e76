#include "passes/schedule.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace weft {
namespace {

// What the scheduler needs to know about each value, independent of the order.
struct Liveness {
  std::vector<int64_t> bytes;             // per value; 0 for graph inputs
  std::vector<bool> to_end;               // graph output or assigned: live to the end
  std::vector<std::vector<int>> users;    // distinct using nodes, per value
  std::vector<std::vector<ValueId>> ops;  // distinct operands, per node
};

StatusOr<Liveness> analyze(const Graph& g) {
  Liveness l;
  const int n = static_cast<int>(g.nodes().size());
  l.bytes.assign(g.num_values(), 0);
  l.to_end.assign(g.num_values(), false);
  l.users.resize(g.num_values());
  l.ops.resize(n);
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    for (ValueId r : node.results) {
      const auto& type = g.value(r).type;
      if (!type) {
        return Error{"schedule-memory: %" + g.value(r).name +
                         " has no type (run infer-types first)",
                     node.loc};
      }
      l.bytes[r] = static_cast<int64_t>(type->bytes());
    }
    std::vector<ValueId>& ops = l.ops[i];
    for (ValueId o : node.operands) {
      if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    }
    for (ValueId o : ops) l.users[o].push_back(i);
    if (node.op == Op::Assign && node.operands.size() == 2) l.to_end[node.operands[1]] = true;
  }
  for (ValueId v : g.outputs()) l.to_end[v] = true;
  return l;
}

int64_t peak_of(const Graph& g, const Liveness& l, const std::vector<int>& order) {
  const int n = static_cast<int>(order.size());
  std::vector<int> pos(n);
  for (int p = 0; p < n; ++p) pos[order[p]] = p;
  std::vector<int64_t> delta(n + 2, 0);
  for (int i = 0; i < n; ++i) {
    for (ValueId r : g.node(i).results) {
      int last = pos[i];
      for (int u : l.users[r]) last = std::max(last, pos[u]);
      if (l.to_end[r]) last = n;
      delta[pos[i]] += l.bytes[r];
      delta[last + 1] -= l.bytes[r];
    }
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);
  return peak;
}

// Greedy list scheduling: among the ready nodes, run the one with the largest
// (bytes freed - bytes allocated), ties to the earliest in the current order.
std::vector<int> greedy_order(const Graph& g, const Liveness& l) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<int> remaining_users(g.num_values());
  for (ValueId v = 0; v < g.num_values(); ++v) {
    remaining_users[v] = static_cast<int>(l.users[v].size());
  }
  std::vector<int> pending(n, 0);  // operands whose producer has not run yet
  for (int i = 0; i < n; ++i) {
    for (ValueId o : l.ops[i]) pending[i] += g.value(o).node >= 0 ? 1 : 0;
  }
  std::vector<bool> done(n, false);
  std::vector<int> order;
  order.reserve(n);
  for (int step = 0; step < n; ++step) {
    int best = -1;
    int64_t best_score = 0;
    for (int i = 0; i < n; ++i) {
      if (done[i] || pending[i] != 0) continue;
      int64_t score = 0;
      for (ValueId r : g.node(i).results) score -= l.bytes[r];
      for (ValueId o : l.ops[i]) {
        if (g.value(o).node >= 0 && !l.to_end[o] && remaining_users[o] == 1) score += l.bytes[o];
      }
      if (best < 0 || score > best_score) best = i, best_score = score;
    }
    WEFT_CHECK(best >= 0, "schedule-memory: no ready node (cycle?)");
    done[best] = true;
    order.push_back(best);
    for (ValueId o : l.ops[best]) --remaining_users[o];
    for (ValueId r : g.node(best).results) {
      for (int u : l.users[r]) --pending[u];
    }
  }
  return order;
}

// Data parallelism (DESIGN.md, decision 11): every all_reduce moved up to right after the
// last node in `order` producing one of its operands (to the front when they are all
// inputs), the others kept in `order`'s order, so that each gradient's reduction can join
// a bucket, and the bucket start, while the backward pass goes on
// (runtime/collective/bucket_plan.h).
std::vector<int> hoist_all_reduces(const Graph& g, const std::vector<int>& order) {
  std::vector<std::vector<int>> after(g.nodes().size());
  std::vector<int> position(g.nodes().size(), -1);
  for (size_t k = 0; k < order.size(); ++k) position[static_cast<size_t>(order[k])] = static_cast<int>(k);
  std::vector<int> out;
  out.reserve(order.size());
  for (int i : order) {
    if (g.node(i).op != Op::AllReduce) continue;
    int producer = -1;
    for (ValueId v : g.node(i).operands) {
      const int p = g.value(v).node;
      if (p >= 0 && (producer < 0 || position[static_cast<size_t>(p)] > position[static_cast<size_t>(producer)])) {
        producer = p;
      }
    }
    if (producer < 0) out.push_back(i);
    else after[static_cast<size_t>(producer)].push_back(i);
  }
  for (int i : order) {
    if (g.node(i).op == Op::AllReduce) continue;
    out.push_back(i);
    out.insert(out.end(), after[static_cast<size_t>(i)].begin(), after[static_cast<size_t>(i)].end());
  }
  return out;
}

// Data parallelism (DESIGN.md, decision 11: the first buckets close early): the
// gradient each all_reduce reads, with the nodes only it reads (a transpose of an
// activation), moved up to right after the latest other producer of their operands.
// Reverse mode emits a layer's input gradient before its weight gradient, so without
// this the weight gradient that closes a bucket waits for the input gradient's GEMM,
// which can run while the bucket's reduction is in flight.
class GradientHoist {
 public:
  GradientHoist(const Graph& g, const Liveness& l, std::vector<int> order)
      : g_(g), l_(l), order_(std::move(order)), position_(order_.size()) {
    for (size_t k = 0; k < order_.size(); ++k) position_[static_cast<size_t>(order_[k])] = static_cast<int>(k);
  }

  std::vector<int> run() {
    const std::vector<int> before = order_;
    for (int i : before) {
      if (g_.node(i).op != Op::AllReduce || g_.node(i).operands.empty()) continue;
      const int gradient = g_.value(g_.node(i).operands[0]).node;
      if (gradient >= 0 && g_.node(gradient).op != Op::AllReduce) pull_up(gradient);
    }
    return std::move(order_);
  }

 private:
  // Moves `node` and its cone (the producers only it reads, recursively) to right after
  // the latest producer outside the cone of their operands, keeping their order; what
  // they pass moves down past them. Nothing passed reads the cone (its members are read
  // by the cone alone, `node` by later nodes) or is read by it (the cone's other
  // producers are all before the target).
  void pull_up(int node) {
    std::vector<bool> in_cone(order_.size(), false);
    std::vector<int> cone = {node};
    in_cone[static_cast<size_t>(node)] = true;
    for (size_t k = 0; k < cone.size(); ++k) {
      for (ValueId v : l_.ops[static_cast<size_t>(cone[k])]) {
        const int q = g_.value(v).node;
        if (q < 0 || in_cone[static_cast<size_t>(q)] || g_.node(q).op == Op::AllReduce) continue;
        if (!read_only_by(q, cone[k])) continue;
        in_cone[static_cast<size_t>(q)] = true;
        cone.push_back(q);
      }
    }
    int target = 0;
    for (int c : cone) {
      for (ValueId v : l_.ops[static_cast<size_t>(c)]) {
        const int q = g_.value(v).node;
        if (q >= 0 && !in_cone[static_cast<size_t>(q)]) target = std::max(target, position_[static_cast<size_t>(q)] + 1);
      }
    }
    const int at = position_[static_cast<size_t>(node)];
    if (target >= at) return;
    std::stable_partition(order_.begin() + target, order_.begin() + at + 1,
                          [&](int i) { return in_cone[static_cast<size_t>(i)]; });
    for (int k = target; k <= at; ++k) position_[static_cast<size_t>(order_[static_cast<size_t>(k)])] = k;
  }

  bool read_only_by(int producer, int reader) const {
    for (ValueId r : g_.node(producer).results) {
      if (l_.to_end[r]) return false;
      for (int u : l_.users[r]) {
        if (u != reader) return false;
      }
    }
    return true;
  }

  const Graph& g_;
  const Liveness& l_;
  std::vector<int> order_;
  std::vector<int> position_;
};

// `order` with the gradients and then every all_reduce moved up (the two above).
std::vector<int> for_data_parallelism(const Graph& g, const Liveness& l, const std::vector<int>& order) {
  return hoist_all_reduces(g, GradientHoist(g, l, order).run());
}

}  // namespace

StatusOr<int64_t> peak_live_bytes(const Graph& g, const std::vector<int>& order) {
  StatusOr<Liveness> l = analyze(g);
  if (!l.ok()) return l.error();
  if (!order.empty()) return peak_of(g, *l, order);
  std::vector<int> identity(g.nodes().size());
  std::iota(identity.begin(), identity.end(), 0);
  return peak_of(g, *l, identity);
}

StatusOr<bool> ScheduleMemoryPass::run(Graph& g) {
  StatusOr<Liveness> l = analyze(g);
  if (!l.ok()) return l.error();
  const int n = static_cast<int>(g.nodes().size());
  std::vector<int> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  const std::vector<int> current = for_data_parallelism(g, *l, identity);
  std::vector<int> order = for_data_parallelism(g, *l, greedy_order(g, *l));
  if (peak_of(g, *l, order) >= peak_of(g, *l, current)) order = current;
  if (order == identity) return false;
  reorder_nodes(g, order);
  return true;
}

void reorder_nodes(Graph& g, const std::vector<int>& order) {
  std::vector<Node> reordered;
  reordered.reserve(order.size());
  for (int i : order) reordered.push_back(std::move(g.node(i)));
  g.mutable_nodes() = std::move(reordered);
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    for (ValueId r : g.node(i).results) g.mutable_value(r).node = i;
  }
}

}  // namespace weft

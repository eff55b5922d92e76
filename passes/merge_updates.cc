// merge-updates (passes/merge_updates.h): finding the optimizer updates that run as one
// kernel over flat ranges, and moving each group together.
#include "passes/merge_updates.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/fused_kind.h"
#include "passes/schedule.h"

namespace weft {
namespace {

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// A range this long is cut into rows by collapse_space (codegen/iteration_space.cc);
// padded to a multiple of kRowMultiple it always finds a divisor, so it runs threaded.
constexpr int64_t kLongRange = 16384;
constexpr int64_t kRowMultiple = 256;
// The length flattened bodies are compared at (any length gives the same key).
constexpr int64_t kKeyLength = 1;
// Per-parameter operands in the arena a mergeable update may have: its gradient. More
// means the body absorbed the sum of a shared weight's partial gradients (50 of them in
// an unrolled RNN); merging would keep all of them, of every member, alive and
// contiguous until the merged kernel (gru_seq's arena: 9.9 -> 21.1 MB, 4 dispatches saved).
constexpr int kMaxArenaOperands = 1;

// What makes an update kernel mergeable, and with which others.
struct Candidate {
  int node = -1;
  std::string signature;
  std::vector<ValueId> operands;  // the node's operands in its body's canonical order
  std::vector<bool> flat;         // per canonical operand
  // Inputs that results overwrite without the kernel reading them (a mixed-precision
  // step's weight copies, passes/weight_copies.h).
  std::vector<ValueId> written;
  // Per result: the canonical operand it overwrites, or operands.size() + k for written[k].
  std::vector<int> result_slot;
};

std::optional<Candidate> candidate(const Graph& g, int i, const std::vector<bool>& external,
                                   const BodyKey& key,
                                   const std::vector<int>& non_assign_readers,
                                   const std::unordered_map<ValueId, ValueId>& target_of) {
  const Node& n = g.node(i);
  if (n.op != Op::Fused || fused_kind(n) != FusedKind::elementwise || !n.body) return std::nullopt;
  const Graph& body = *n.body;
  const Shape& full = body.type(body.outputs()[0]).shape;
  Candidate c;
  c.node = i;
  std::vector<int> order;
  std::optional<Graph> flat_body = flatten_body(body, kKeyLength, &order);
  if (!flat_body) return std::nullopt;
  c.signature = key(*flat_body) + "|";
  for (int j : order) c.operands.push_back(n.operands[j]);
  for (ValueId o : c.operands) {
    const Type& t = g.type(o);
    const bool flat = t.shape == full;
    if (flat) {
      const bool input = g.input_index(o) >= 0;
      const bool intermediate = g.value(o).node >= 0 &&
                                !(o < static_cast<ValueId>(external.size()) && external[o]);
      if (!input && !intermediate) return std::nullopt;
      if (std::count(c.operands.begin(), c.operands.end(), o) != 1) return std::nullopt;
      c.signature += input ? "in," : "arena,";
    } else {
      c.signature += "%" + std::to_string(o) + ",";
    }
    c.flat.push_back(flat);
  }
  c.signature += "|";
  int arena_operands = 0;
  for (size_t j = 0; j < c.operands.size(); ++j) {
    arena_operands += c.flat[j] && g.input_index(c.operands[j]) < 0;
  }
  if (arena_operands > kMaxArenaOperands) return std::nullopt;
  for (ValueId r : n.results) {
    if (r >= static_cast<ValueId>(external.size()) || !external[r] || non_assign_readers[r] > 0) {
      return std::nullopt;
    }
    auto t = target_of.find(r);
    if (t == target_of.end()) return std::nullopt;
    auto at = std::find(c.operands.begin(), c.operands.end(), t->second);
    if (at == c.operands.end()) {  // an input the kernel only writes: a range of its own
      if (g.input_index(t->second) < 0 || g.type(t->second).shape != full) return std::nullopt;
      c.written.push_back(t->second);
      c.result_slot.push_back(static_cast<int>(c.operands.size() + c.written.size() - 1));
    } else {
      if (!c.flat[at - c.operands.begin()]) return std::nullopt;
      c.result_slot.push_back(static_cast<int>(at - c.operands.begin()));
    }
    c.signature += std::to_string(c.result_slot.back()) + ",";
  }
  return c;
}

// Builds the merged update of `members` (candidates with one signature, none of whose
// per-parameter values is taken yet).
MergedUpdate build_merge(const Graph& g, const std::vector<Candidate>& members,
                         int64_t alignment) {
  const Node& first = g.node(members[0].node);
  const Candidate& c0 = members[0];
  MergedUpdate m;
  size_t smallest = 8;
  for (size_t j = 0; j < c0.operands.size(); ++j) {
    if (c0.flat[j]) smallest = std::min(smallest, dtype_size(g.type(c0.operands[j]).dtype));
  }
  for (ValueId w : c0.written) smallest = std::min(smallest, dtype_size(g.type(w).dtype));
  const int64_t unit = std::max<int64_t>(1, alignment / static_cast<int64_t>(smallest));
  int64_t end = 0;
  for (const Candidate& c : members) {
    m.nodes.push_back(c.node);
    m.starts.push_back(end);
    end += round_up(g.type(g.node(c.node).results[0]).numel(), unit);
  }
  m.length = end > kLongRange ? round_up(end, std::max(unit, kRowMultiple)) : end;
  m.body = *flatten_body(*first.body, m.length);
  m.operands = c0.operands;
  // The range of the members' k-th value of `of` (their operands or written inputs).
  auto add_range = [&](const std::function<ValueId(const Candidate&)>& of) {
    FlatRange r;
    r.dtype = g.type(of(c0)).dtype;
    const int64_t size = static_cast<int64_t>(dtype_size(r.dtype));
    r.input = g.input_index(of(c0)) >= 0;
    for (size_t k = 0; k < members.size(); ++k) {
      r.values.push_back(of(members[k]));
      r.offsets.push_back(m.starts[k] * size);
    }
    r.bytes = round_up(m.length * size, alignment);
    m.ranges.push_back(std::move(r));
    return static_cast<int>(m.ranges.size() - 1);
  };
  for (size_t j = 0; j < c0.operands.size(); ++j) {
    m.operand_range.push_back(
        c0.flat[j] ? add_range([j](const Candidate& c) { return c.operands[j]; }) : -1);
  }
  std::vector<int> written_range;
  for (size_t k = 0; k < c0.written.size(); ++k) {
    written_range.push_back(add_range([k](const Candidate& c) { return c.written[k]; }));
  }
  const int operands = static_cast<int>(c0.operands.size());
  for (int slot : c0.result_slot) {
    m.result_range.push_back(slot < operands ? m.operand_range[slot] : written_range[slot - operands]);
  }
  return m;
}

}  // namespace

std::optional<Graph> flatten_body(const Graph& body, int64_t length,
                                  std::vector<int>* input_order) {
  const Shape& full = body.type(body.outputs()[0]).shape;
  // The canonical order: a depth-first walk from the outputs (in order) through each
  // node's operands (in order) reaches inputs and finishes nodes in an order that does
  // not depend on how the fuser numbered the body; unreached inputs come last.
  // The walk keeps its own stack (a value and how many of its producer's operands it
  // has visited): a body is as deep as its longest chain, which can be the whole graph.
  std::vector<int> inputs, nodes;
  std::vector<bool> seen(body.num_values(), false);
  std::vector<std::pair<ValueId, size_t>> stack;
  auto reach = [&](ValueId v) {
    if (seen[v]) return;
    seen[v] = true;
    if (body.value(v).node < 0) {
      inputs.push_back(body.input_index(v));
    } else {
      stack.emplace_back(v, 0);
    }
  };
  for (ValueId o : body.outputs()) {
    reach(o);
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      const int p = body.value(v).node;
      const std::vector<ValueId>& operands = body.node(p).operands;
      if (next < operands.size()) {
        reach(operands[next++]);  // may grow the stack: `v` and `next` are not used after
      } else {
        nodes.push_back(p);
        stack.pop_back();
      }
    }
  }
  for (int j = 0; j < static_cast<int>(body.inputs().size()); ++j) {
    if (!seen[body.inputs()[j].value]) inputs.push_back(j);
  }
  if (nodes.size() != body.nodes().size()) return std::nullopt;  // a dead node
  if (input_order != nullptr) *input_order = inputs;

  Graph flat(body.name());
  std::vector<ValueId> map(body.num_values(), kNoValue);
  for (int j : inputs) {
    const Input& in = body.inputs()[j];
    const Type& t = body.type(in.value);
    Type ft = t;
    if (t.shape == full) {
      ft.shape = Shape({length});
    } else if (t.shape.numel() == 1) {
      ft.shape = Shape();
    } else {
      return std::nullopt;
    }
    map[in.value] = flat.add_input(body.value(in.value).name, ft, in.kind, in.loc);
  }
  for (int i : nodes) {
    const Node& n = body.node(i);
    if (n.results.size() != 1 || body.type(n.result()).shape != full) return std::nullopt;
    std::vector<ValueId> operands;
    for (ValueId o : n.operands) operands.push_back(map[o]);
    Type t = body.type(n.result());
    t.shape = Shape({length});
    map[n.result()] =
        flat.add_node(n.op, std::move(operands), n.attrs, n.loc, t, body.value(n.result()).name);
  }
  for (ValueId o : body.outputs()) flat.add_output(map[o]);
  return flat;
}

namespace {

// The update kernels of `g` that could merge, grouped by signature, in schedule order;
// the groups in order of first member.
std::vector<std::vector<Candidate>> candidates_by_signature(const Graph& g,
                                                            const std::vector<bool>& external,
                                                            const BodyKey& key) {
  std::vector<int> non_assign_readers(g.num_values(), 0);
  std::unordered_map<ValueId, ValueId> target_of;  // assigned value -> its input
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Assign) {
      target_of[node.operands[1]] = node.operands[0];
      continue;
    }
    for (ValueId o : node.operands) ++non_assign_readers[o];
  }
  std::map<std::string, int> group_of;
  std::vector<std::vector<Candidate>> groups;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    std::optional<Candidate> c = candidate(g, i, external, key, non_assign_readers, target_of);
    if (!c) continue;
    auto [it, added] = group_of.emplace(c->signature, static_cast<int>(groups.size()));
    if (added) groups.emplace_back();
    groups[it->second].push_back(std::move(*c));
  }
  return groups;
}

// The members of each group whose per-parameter values no earlier member (of this
// group or a group kept before) has taken; groups left with fewer than two are dropped.
std::vector<std::vector<Candidate>> members_with_free_ranges(
    std::vector<std::vector<Candidate>> groups) {
  std::unordered_set<ValueId> taken;
  std::vector<std::vector<Candidate>> merging;
  for (std::vector<Candidate>& group : groups) {
    std::vector<Candidate> kept;
    std::unordered_set<ValueId> mine;
    for (Candidate& c : group) {
      std::vector<ValueId> ranged = c.written;  // its values in flat ranges
      for (size_t j = 0; j < c.operands.size(); ++j) {
        if (c.flat[j]) ranged.push_back(c.operands[j]);
      }
      bool free = true;
      for (ValueId v : ranged) free = free && !taken.count(v) && !mine.count(v);
      if (!free) continue;
      mine.insert(ranged.begin(), ranged.end());
      kept.push_back(std::move(c));
    }
    if (kept.size() < 2) continue;
    taken.insert(mine.begin(), mine.end());
    merging.push_back(std::move(kept));
  }
  return merging;
}

// The new order: each group's members together at their last one's position, every
// assign at the end; the groups' node indices follow.
void move_members_together(Graph& g, std::vector<MergedUpdate>& merged) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<int> group_of_node(n, -1);
  for (size_t m = 0; m < merged.size(); ++m) {
    for (int i : merged[m].nodes) group_of_node[i] = static_cast<int>(m);
  }
  std::vector<int> order, assigns;
  for (int i = 0; i < n; ++i) {
    const int m = group_of_node[i];
    if (g.node(i).op == Op::Assign) {
      assigns.push_back(i);
    } else if (m < 0) {
      order.push_back(i);
    } else if (i == merged[m].nodes.back()) {
      order.insert(order.end(), merged[m].nodes.begin(), merged[m].nodes.end());
    }
  }
  order.insert(order.end(), assigns.begin(), assigns.end());
  std::vector<int> new_index(n);
  for (int k = 0; k < n; ++k) new_index[order[k]] = k;
  reorder_nodes(g, order);
  for (MergedUpdate& m : merged) {
    for (int& i : m.nodes) i = new_index[i];
  }
}

}  // namespace

std::vector<MergedUpdate> merge_updates(Graph& g, const std::vector<bool>& external,
                                        const BodyKey& key, int64_t alignment) {
  const std::vector<std::vector<Candidate>> merging =
      members_with_free_ranges(candidates_by_signature(g, external, key));
  if (merging.empty()) return {};
  std::vector<MergedUpdate> merged;
  for (const std::vector<Candidate>& members : merging) {
    merged.push_back(build_merge(g, members, alignment));
  }
  move_members_together(g, merged);
  return merged;
}

std::vector<ContiguousGroup> arena_groups(const std::vector<MergedUpdate>& merged) {
  std::vector<ContiguousGroup> groups;
  for (const MergedUpdate& m : merged) {
    for (const FlatRange& r : m.ranges) {
      if (!r.input) groups.push_back({r.values, r.offsets, r.bytes});
    }
  }
  return groups;
}

std::vector<bool> updates_in_place(const Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> external(g.num_values(), false);
  std::vector<int> last_reader(g.num_values(), -1);  // excluding assigns
  std::vector<int> assigned(g.num_values(), 0);
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (node.op == Op::Assign) {
      ++assigned[node.operands[1]];
      continue;
    }
    for (ValueId v : node.operands) last_reader[v] = std::max(last_reader[v], i);
  }
  for (ValueId v : g.outputs()) last_reader[v] = n;
  for (const Node& node : g.nodes()) {
    if (node.op != Op::Assign) continue;
    const ValueId target = node.operands[0], value = node.operands[1];
    const int producer = g.value(value).node;
    if (producer < 0 || assigned[value] != 1 || g.type(value) != g.type(target)) continue;
    const Node& p = g.node(producer);
    bool reads_target = false;
    for (ValueId o : p.operands) reads_target = reads_target || o == target;
    // The producer may read the target only element by element (it then writes each
    // element after reading it); every other reader must come before it.
    if (reads_target && !may_take_over_operand(p)) continue;
    if (last_reader[target] > producer) continue;
    external[value] = true;
  }
  return external;
}

MergeUpdatesPass::MergeUpdatesPass(MergeUpdatesOptions options, UpdatePlan* result)
    : options_(std::move(options)), result_(result != nullptr ? result : &own_) {
  WEFT_CHECK(static_cast<bool>(options_.key), "merge-updates: MergeUpdatesOptions::key is required");
}

StatusOr<bool> MergeUpdatesPass::run(Graph& g) {
  result_->external = updates_in_place(g);
  result_->merged = merge_updates(g, result_->external, options_.key, options_.alignment);
  return !result_->merged.empty();
}

}  // namespace weft

#include "passes/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>

#include "ir/fused_kind.h"

namespace weft {
bool may_take_over_operand(const Node& node) {
  if (node.op == Op::Fused) {
    const FusedKind kind = fused_kind(node);
    return kind == FusedKind::elementwise || kind == FusedKind::row;
  }
  return node.info().category == OpCategory::Elementwise || node.op == Op::Reshape;
}

ValueLifetimes value_lifetimes(const Graph& g, const std::vector<bool>& external) {
  const int n = static_cast<int>(g.nodes().size());
  ValueLifetimes l{std::vector<int>(g.num_values(), -1), std::vector<int>(g.num_values(), -1)};
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    for (ValueId r : node.results) {
      if (r < static_cast<int>(external.size()) && external[r]) continue;
      l.def[r] = l.last[r] = i;
    }
    for (ValueId o : node.operands) {
      if (l.def[o] >= 0) l.last[o] = i;
    }
  }
  // Assigned values and outputs live to the end, whatever reads them after the assign.
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Assign && node.operands.size() == 2 && l.def[node.operands[1]] >= 0) {
      l.last[node.operands[1]] = n;
    }
  }
  for (ValueId v : g.outputs()) {
    if (l.def[v] >= 0) l.last[v] = n;
  }
  return l;
}

namespace {

// Per-value lifetimes over the node order (value_lifetimes) and aligned sizes. Only node
// results (intermediates) are set; def = -1 otherwise.
struct Lifetimes {
  std::vector<int> def, last;
  std::vector<int64_t> size;  // aligned bytes
};

int64_t round_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

StatusOr<Lifetimes> lifetimes(const Graph& g, int64_t alignment,
                              const std::vector<bool>& external) {
  ValueLifetimes v = value_lifetimes(g, external);
  Lifetimes l{std::move(v.def), std::move(v.last), std::vector<int64_t>(g.num_values(), 0)};
  for (const Node& node : g.nodes()) {
    for (ValueId r : node.results) {
      if (l.def[r] < 0) continue;
      const auto& type = g.value(r).type;
      if (!type) {
        return Error{"memory planning: %" + g.value(r).name +
                         " has no type (run infer-types first)",
                     node.loc};
      }
      l.size[r] = round_up(static_cast<int64_t>(type->bytes()), alignment);
    }
  }
  return l;
}

struct Buffer {
  int begin, end;  // inclusive node range
  int64_t size;
  int64_t offset = -1;
};

// Places `buffers` in the given order, each at the best-fitting gap among the placed
// buffers whose lifetimes overlap it; returns the arena size and sets the offsets.
int64_t place(std::vector<Buffer>& buffers, const std::vector<int>& order) {
  std::vector<int> placed;
  int64_t arena = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of overlapping buffers
  for (int b : order) {
    Buffer& buf = buffers[b];
    if (buf.size == 0) {
      buf.offset = 0;
      continue;
    }
    busy.clear();
    for (int p : placed) {
      const Buffer& q = buffers[p];
      if (q.begin <= buf.end && buf.begin <= q.end) busy.push_back({q.offset, q.offset + q.size});
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      const int64_t gap = lo - cursor;
      if (gap >= buf.size && (best < 0 || gap < best_gap)) best = cursor, best_gap = gap;
      cursor = std::max(cursor, hi);
    }
    buf.offset = best >= 0 ? best : cursor;
    arena = std::max(arena, buf.offset + buf.size);
    placed.push_back(b);
  }
  return arena;
}

// What placement sees: every buffer outside a contiguous group as it is, and each group
// as one block of its members' buffers (`rel`: a buffer's offset inside its unit).
struct Units {
  std::vector<Buffer> units;
  std::vector<int> unit_of;    // per buffer
  std::vector<int64_t> rel;    // per buffer
};

StatusOr<Units> form_units(const Graph& g, const PlanOptions& options, const Lifetimes& l,
                           const std::vector<Buffer>& buffers,
                           const std::vector<int>& buffer_of) {
  Units u;
  u.unit_of.assign(buffers.size(), -1);
  u.rel.assign(buffers.size(), 0);
  const int64_t a = options.alignment;
  for (size_t gi = 0; gi < options.groups.size(); ++gi) {
    const ContiguousGroup& group = options.groups[gi];
    const std::string where = "memory planning: contiguous group " + std::to_string(gi);
    if (group.values.empty() || group.values.size() != group.offsets.size() ||
        group.bytes % a != 0) {
      return Error{where + " needs one offset per value and a size that is a multiple of " +
                   std::to_string(a) + " bytes"};
    }
    const int unit = static_cast<int>(u.units.size());
    Buffer block{0, 0, group.bytes};
    int64_t end = 0;
    for (size_t k = 0; k < group.values.size(); ++k) {
      const ValueId v = group.values[k];
      if (v < 0 || v >= g.num_values() || l.def[v] < 0) {
        return Error{where + ": %" + (v >= 0 && v < g.num_values() ? g.value(v).name : "?") +
                     " is not a node result in the arena"};
      }
      const int b = buffer_of[v];
      if (u.unit_of[b] >= 0) {
        return Error{where + ": %" + g.value(v).name +
                     " shares its buffer with a member of a contiguous group"};
      }
      const int64_t at = group.offsets[k];
      if (at % a != 0 || at < end || at + buffers[b].size > group.bytes) {
        return Error{where + ": %" + g.value(v).name + " at offset " + std::to_string(at) +
                     " is unaligned, overlaps the member before it or ends past the group's " +
                     std::to_string(group.bytes) + " bytes"};
      }
      end = at + buffers[b].size;
      block.begin = k == 0 ? buffers[b].begin : std::min(block.begin, buffers[b].begin);
      block.end = k == 0 ? buffers[b].end : std::max(block.end, buffers[b].end);
      u.unit_of[b] = unit;
      u.rel[b] = at;
    }
    u.units.push_back(block);
  }
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (u.unit_of[b] >= 0) continue;
    u.unit_of[b] = static_cast<int>(u.units.size());
    u.units.push_back(buffers[b]);
  }
  return u;
}

// Per value: the stored concat (index into `stored`) it is a part of, or -1; checks the
// rules of PlanOptions::stored_concats.
StatusOr<std::vector<int>> parts_of_stored_concats(const Graph& g, const Lifetimes& l,
                                                   const std::vector<StoredConcat>& stored) {
  std::vector<int> part_of(g.num_values(), -1);
  for (size_t s = 0; s < stored.size(); ++s) {
    const ValueId c = stored[s].result;
    const auto arena = [&](ValueId v) { return v >= 0 && v < g.num_values() && l.def[v] >= 0; };
    if (!arena(c) || stored[s].first_writer < 0 || stored[s].first_writer >= l.def[c]) {
      return Error{"memory planning: stored concat " + std::to_string(s) +
                   " is not a node result in the arena written first by an earlier node"};
    }
    for (ValueId v : stored[s].parts) {
      if (!arena(v) || part_of[v] >= 0 || l.last[v] != l.def[c] || l.def[v] < stored[s].first_writer) {
        return Error{"memory planning: stored concat %" + g.value(c).name + ": a part is not a node result in "
                     "the arena read last by it, or is a part twice"};
      }
      part_of[v] = static_cast<int>(s);
    }
  }
  return part_of;
}

// Stored concat `s` at its node: its buffer, of its size and live from its first writer,
// is its parts' (each had its own, from its producer on) and its own.
void merge_stored_concat(const StoredConcat& s, const Lifetimes& l, std::vector<Buffer>& buffers,
                         std::vector<int>& buffer_of) {
  int merged = s.parts.empty() ? -1 : buffer_of[s.parts[0]];
  if (merged < 0) {
    merged = static_cast<int>(buffers.size());
    buffers.push_back({s.first_writer, l.last[s.result], 0});
  }
  for (ValueId v : s.parts) {
    if (buffer_of[v] != merged) buffers[buffer_of[v]].size = 0;  // placed nowhere: its bytes are the concat's
    buffer_of[v] = merged;
  }
  buffers[merged].begin = s.first_writer;
  buffers[merged].size = l.size[s.result];
  buffers[merged].end = l.last[s.result];
  buffer_of[s.result] = merged;
}

/// Each result's buffer, in node order: a new one, a stored concat's (merged), or,
/// in place, the buffer of an operand whose last use this is (same bytes; same shape
/// unless a reshape). Counts the intermediates, their naive bytes and the in-place nodes
/// into `plan`.
struct Buffers {
  std::vector<Buffer> buffers;
  std::vector<int> buffer_of;  ///< Per value: its buffer, or -1 (external, or no result).
};

Buffers assign_buffers(const Graph& g, const PlanOptions& options, const Lifetimes& l,
                       const std::vector<int>& part_of, MemoryPlan& plan) {
  std::vector<int> stored_at(g.num_values(), -1);  // a stored concat's result -> its index
  for (size_t s = 0; s < options.stored_concats.size(); ++s) {
    stored_at[options.stored_concats[s].result] = static_cast<int>(s);
  }
  Buffers out{{}, std::vector<int>(g.num_values(), -1)};
  std::vector<int>& buffer_of = out.buffer_of;
  std::vector<Buffer>& buffers = out.buffers;
  const int n = static_cast<int>(g.nodes().size());
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    std::vector<ValueId> taken;  // operands already taken over by a result of this node
    for (ValueId r : node.results) {
      if (l.def[r] < 0) continue;  // external
      ++plan.num_intermediates;
      plan.naive_bytes += l.size[r];
      if (stored_at[r] >= 0) {
        merge_stored_concat(options.stored_concats[stored_at[r]], l, buffers, buffer_of);
        continue;
      }
      int shared = -1;
      if (options.in_place && may_take_over_operand(node) && part_of[r] < 0) {
        for (ValueId o : node.operands) {
          if (std::find(taken.begin(), taken.end(), o) != taken.end()) continue;
          if (l.def[o] >= 0 && l.last[o] == i && l.size[o] == l.size[r] &&
              g.type(o).bytes() == g.type(r).bytes() &&
              (node.op == Op::Reshape || g.type(o).shape == g.type(r).shape)) {
            shared = buffer_of[o];
            taken.push_back(o);
            break;
          }
        }
      }
      if (shared >= 0) {
        buffer_of[r] = shared;
        buffers[shared].end = l.last[r];
        plan.in_place_nodes.push_back(i);
      } else {
        buffer_of[r] = static_cast<int>(buffers.size());
        buffers.push_back({i, l.last[r], l.size[r]});
      }
    }
  }
  return out;
}

/// The lower bound: the most bytes of `units` live at one of the `n` nodes.
int64_t most_live_bytes(const std::vector<Buffer>& units, int n) {
  std::vector<int64_t> delta(n + 2, 0);  // n is "after the last node"
  for (const Buffer& b : units) delta[b.begin] += b.size, delta[b.end + 1] -= b.size;
  int64_t live = 0, most = 0;
  for (int64_t d : delta) most = std::max(most, live += d);
  return most;
}

/// `units` placed in each greedy order (by size, lifetime, first use, area), the
/// smallest arena kept: its placement, with its bytes and name in `plan`.
std::vector<Buffer> place_best(const std::vector<Buffer>& units, MemoryPlan& plan) {
  using Less = std::function<bool(const Buffer&, const Buffer&)>;
  const auto length = [](const Buffer& b) { return static_cast<int64_t>(b.end - b.begin + 1); };
  const std::vector<std::pair<std::string, Less>> strategies = {
      {"size", [](const Buffer& a, const Buffer& b) { return a.size > b.size; }},
      {"lifetime", [&](const Buffer& a, const Buffer& b) {
         return length(a) != length(b) ? length(a) > length(b) : a.size > b.size;
       }},
      {"first-use", [](const Buffer& a, const Buffer& b) {
         return a.begin != b.begin ? a.begin < b.begin : a.size > b.size;
       }},
      {"area", [&](const Buffer& a, const Buffer& b) {
         return a.size * length(a) > b.size * length(b);
       }},
  };
  std::vector<Buffer> best;
  for (const auto& [name, less] : strategies) {
    std::vector<int> order(units.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return less(units[a], units[b]); });
    std::vector<Buffer> trial = units;
    const int64_t arena = place(trial, order);
    if (plan.strategy.empty() || arena < plan.arena_bytes) {
      plan.arena_bytes = arena;
      plan.strategy = name;
      best = std::move(trial);
    }
  }
  return best;
}

}  // namespace

double MemoryPlan::efficiency() const {
  return arena_bytes == 0 ? 1.0 : static_cast<double>(lower_bound_bytes) / arena_bytes;
}

std::string MemoryPlan::report() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "memory plan: %d intermediates, alignment %lld\n"
                "  naive   %lld bytes\n"
                "  planned %lld bytes (strategy %s, %zu nodes in place)\n"
                "  bound   %lld bytes (efficiency %.3f)\n",
                num_intermediates, static_cast<long long>(alignment),
                static_cast<long long>(naive_bytes), static_cast<long long>(arena_bytes),
                strategy.c_str(), in_place_nodes.size(),
                static_cast<long long>(lower_bound_bytes), efficiency());
  return buf;
}

StatusOr<MemoryPlan> plan_memory(const Graph& g, const PlanOptions& options) {
  if (options.alignment <= 0 || (options.alignment & (options.alignment - 1)) != 0) {
    return Error{"memory planning: alignment " + std::to_string(options.alignment) +
                 " is not a positive power of two"};
  }
  StatusOr<Lifetimes> lt = lifetimes(g, options.alignment, options.external);
  if (!lt.ok()) return lt.error();
  const Lifetimes& l = *lt;

  MemoryPlan plan;
  plan.alignment = options.alignment;
  plan.external = options.external;
  plan.stored_concats = options.stored_concats;
  StatusOr<std::vector<int>> part_of = parts_of_stored_concats(g, l, options.stored_concats);
  if (!part_of.ok()) return part_of.error();
  Buffers assigned = assign_buffers(g, options, l, *part_of, plan);
  StatusOr<Units> formed = form_units(g, options, l, assigned.buffers, assigned.buffer_of);
  if (!formed.ok()) return formed.error();
  plan.groups = options.groups;
  plan.lower_bound_bytes = most_live_bytes(formed->units, static_cast<int>(g.nodes().size()));
  const std::vector<Buffer> best = place_best(formed->units, plan);
  plan.offset.assign(g.num_values(), -1);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const int b = assigned.buffer_of[v];
    if (b >= 0) plan.offset[v] = best[formed->unit_of[b]].offset + formed->rel[b];
  }
  return plan;
}

namespace {

// verify_plan's view of the stored concats: a concat lives from its first writer, and each
// part, written as a window of its bytes, is checked with its size. Returns, per value,
// the stored concat it is a part of, or -1.
StatusOr<std::vector<int>> stored_concats_as_windows(const Graph& g, const MemoryPlan& plan,
                                                     Lifetimes& l) {
  std::vector<int> part_of(g.num_values(), -1);
  for (size_t s = 0; s < plan.stored_concats.size(); ++s) {
    const StoredConcat& c = plan.stored_concats[s];
    if (c.result < 0 || c.result >= g.num_values() || l.def[c.result] < 0 || c.first_writer < 0) {
      return Error{"verify_plan: stored concat " + std::to_string(s) + " is no intermediate"};
    }
    l.def[c.result] = std::min(l.def[c.result], c.first_writer);
    for (ValueId v : c.parts) {
      if (v < 0 || v >= g.num_values()) return Error{"verify_plan: a stored concat's part is no value"};
      part_of[v] = static_cast<int>(s);
      l.size[v] = l.size[c.result];
    }
  }
  return part_of;
}

}  // namespace

Status verify_plan(const Graph& g, const MemoryPlan& plan) {
  if (plan.alignment <= 0) return Error{"verify_plan: alignment must be positive"};
  StatusOr<Lifetimes> lt = lifetimes(g, plan.alignment, plan.external);
  if (!lt.ok()) return lt.status();
  Lifetimes l = *lt;
  StatusOr<std::vector<int>> parts = stored_concats_as_windows(g, plan, l);
  if (!parts.ok()) return parts.error();
  const std::vector<int>& part_of = *parts;
  if (static_cast<int>(plan.offset.size()) != g.num_values()) {
    return Error{"verify_plan: " + std::to_string(plan.offset.size()) + " offsets for " +
                 std::to_string(g.num_values()) + " values"};
  }
  const auto name = [&](ValueId v) { return "%" + g.value(v).name; };
  std::vector<ValueId> live_values;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const int64_t off = plan.offset[v];
    if (l.def[v] < 0) {
      if (off != -1) {
        return Error{"verify_plan: " + name(v) + " is not an intermediate but has an offset"};
      }
      continue;
    }
    if (off < 0 || off % plan.alignment != 0 || off + l.size[v] > plan.arena_bytes) {
      return Error{"verify_plan: " + name(v) + " at offset " + std::to_string(off) +
                   " (size " + std::to_string(l.size[v]) +
                   ") is unaligned or outside the arena of " +
                   std::to_string(plan.arena_bytes) + " bytes"};
    }
    if (l.size[v] > 0) live_values.push_back(v);
  }
  std::vector<bool> in_place(g.nodes().size(), false);
  for (int i : plan.in_place_nodes) {
    if (i < 0 || i >= static_cast<int>(g.nodes().size()) ||
        !may_take_over_operand(g.node(i))) {
      return Error{"verify_plan: in-place node " + std::to_string(i) +
                   " is not an elementwise node, a fused kernel or a reshape"};
    }
    in_place[i] = true;
  }
  // A dying operand u of in-place node i and i's result v may share bytes: same offset.
  const auto takes_over = [&](ValueId u, ValueId v) {
    const int i = l.def[v];
    if (!in_place[i] || l.last[u] != i || plan.offset[u] != plan.offset[v]) return false;
    const auto& ops = g.node(i).operands;
    return std::find(ops.begin(), ops.end(), u) != ops.end();
  };
  // A stored concat and its parts share its bytes.
  const auto one_stored_concat = [&](ValueId u, ValueId v) {
    const int s = part_of[u] >= 0 ? part_of[u] : part_of[v];
    if (s < 0 || plan.offset[u] != plan.offset[v]) return false;
    const StoredConcat& c = plan.stored_concats[static_cast<size_t>(s)];
    const auto member = [&](ValueId x) { return x == c.result || part_of[x] == s; };
    return member(u) && member(v);
  };
  for (const StoredConcat& c : plan.stored_concats) {
    for (ValueId v : c.parts) {
      if (plan.offset[v] != plan.offset[c.result]) {
        return Error{"verify_plan: " + name(v) + " is not at the offset of the concat %" +
                     g.value(c.result).name + " it is stored in"};
      }
    }
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const ContiguousGroup& group = plan.groups[gi];
    for (size_t k = 0; k < group.values.size() && k < group.offsets.size(); ++k) {
      const ValueId v = group.values[k], first = group.values[0];
      if (plan.offset[v] < 0 ||
          plan.offset[v] - plan.offset[first] != group.offsets[k] - group.offsets[0]) {
        return Error{"verify_plan: " + name(v) + " is not at offset " +
                     std::to_string(group.offsets[k]) + " of contiguous group " +
                     std::to_string(gi)};
      }
    }
  }
  for (size_t a = 0; a < live_values.size(); ++a) {
    const ValueId u = live_values[a];
    for (size_t b = a + 1; b < live_values.size(); ++b) {
      const ValueId v = live_values[b];
      if (l.def[u] > l.last[v] || l.def[v] > l.last[u]) continue;  // never live together
      if (plan.offset[u] >= plan.offset[v] + l.size[v] ||
          plan.offset[v] >= plan.offset[u] + l.size[u]) {
        continue;  // disjoint bytes
      }
      if (takes_over(u, v) || takes_over(v, u) || one_stored_concat(u, v)) continue;
      return Error{"verify_plan: " + name(u) + " [" + std::to_string(plan.offset[u]) + ", +" +
                   std::to_string(l.size[u]) + ") and " + name(v) + " [" +
                   std::to_string(plan.offset[v]) + ", +" + std::to_string(l.size[v]) +
                   ") overlap while both are live"};
    }
  }
  return Status();
}

}  // namespace weft

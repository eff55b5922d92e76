#include "runtime/loop_slots.h"

#include <algorithm>
#include <optional>

#include "ir/scan.h"

namespace weft {

int64_t loop_slot_bindings(int64_t length, size_t stacked, size_t invocations) {
  // A binding per slot costs a bound copy of each invocation and a pointer per operand:
  // about a few hundred bytes per invocation. Up to kMaxSlotBindings of them (tens of
  // MB) the loop reads its xs and writes its ys in place; past that, and whenever nothing
  // varies per slot, one binding serves every iteration.
  constexpr int64_t kMaxSlotBindings = int64_t{1} << 18;
  if (stacked == 0 || length <= 1) return 1;
  const int64_t per_slot = static_cast<int64_t>(std::max<size_t>(invocations, 1));
  return length <= kMaxSlotBindings / per_slot ? length : 1;
}

int64_t loop_slot_bindings(const Invocation& loop, const Program& body) {
  // The xs (operands past the consts and carries) and the ys (results past the carries).
  const size_t carries = static_cast<size_t>(loop.node.int_attr("carries"));
  const size_t xs = loop.operands.size() - static_cast<size_t>(loop.node.int_attr("consts")) - carries;
  const size_t ys = loop.results.size() - carries;
  return loop_slot_bindings(loop.node.int_attr("length"), xs + ys, body.code.size());
}

namespace {

int64_t bytes_of(const BufferRef& r) { return static_cast<int64_t>(r.type.bytes()); }

// The sites of an arena buffer `out` from its last writer on (the rule in the header), or
// nothing when some invocation or output uses part of its bytes.
std::optional<std::vector<BufferSite>> arena_sites(const Program& body, const BufferRef& out) {
  const int64_t begin = out.offset, end = out.offset + bytes_of(out);
  const auto overlaps = [&](const BufferRef& r) {
    return r.space == Space::arena && r.offset < end && r.offset + bytes_of(r) > begin;
  };
  const auto exact = [&](const BufferRef& r) {
    return r.space == Space::arena && r.offset == begin && bytes_of(r) == bytes_of(out);
  };
  for (const BufferRef& o : body.outputs) {
    if (overlaps(o) && !exact(o)) return std::nullopt;
  }
  const auto writes = [&](const Invocation& inv) {
    return std::any_of(inv.results.begin(), inv.results.end(), overlaps) ||
           std::any_of(inv.clear.begin(), inv.clear.end(), overlaps);
  };
  size_t last = body.code.size();
  for (size_t i = body.code.size(); i-- > 0;) {
    if (writes(body.code[i])) {
      last = i;
      break;
    }
  }
  if (last == body.code.size()) return std::nullopt;  // never written: not a value of the body
  std::vector<BufferSite> sites;
  // Invocation i's results there when it writes exactly the buffer and reads none of it.
  const auto whole_writes = [&](size_t i) -> std::optional<std::vector<BufferSite>> {
    const Invocation& inv = body.code[i];
    if (std::any_of(inv.clear.begin(), inv.clear.end(), overlaps) ||
        std::any_of(inv.operands.begin(), inv.operands.end(), overlaps)) {
      return std::nullopt;
    }
    std::vector<BufferSite> written;
    for (size_t r = 0; r < inv.results.size(); ++r) {
      if (!overlaps(inv.results[r])) continue;
      if (!exact(inv.results[r])) return std::nullopt;
      written.push_back({i, /*result=*/true, r});
    }
    return written;
  };
  const Invocation& writer = body.code[last];
  if (std::any_of(writer.clear.begin(), writer.clear.end(), overlaps)) return std::nullopt;
  for (size_t r = 0; r < writer.results.size(); ++r) {
    if (!overlaps(writer.results[r])) continue;
    if (!exact(writer.results[r])) return std::nullopt;
    sites.push_back({last, /*result=*/true, r});
  }
  // Writers before it that nothing between reads or writes in part, when it reads none
  // of the buffer: kernels storing windows of one value (a concat's parts, passes/
  // fold_concats.h) write the slot too. A value written whole before and never read
  // would be overwritten there, as in the arena.
  if (whole_writes(last)) {
    for (size_t i = last; i-- > 0;) {
      if (!writes(body.code[i]) && !std::any_of(body.code[i].operands.begin(), body.code[i].operands.end(), overlaps)) {
        continue;
      }
      std::optional<std::vector<BufferSite>> earlier = whole_writes(i);
      if (!earlier) break;
      sites.insert(sites.end(), earlier->begin(), earlier->end());
    }
  }
  for (size_t i = last + 1; i < body.code.size(); ++i) {
    const std::vector<BufferRef>& operands = body.code[i].operands;
    for (size_t k = 0; k < operands.size(); ++k) {
      if (!overlaps(operands[k])) continue;
      if (!exact(operands[k])) return std::nullopt;
      sites.push_back({i, /*result=*/false, k});
    }
  }
  return sites;
}

// A carry input's sites: the reads of its old value, and (when one invocation writes its
// next value there in place) that write and the reads after it.
struct InputSites {
  std::vector<BufferSite> old_reads;
  std::vector<BufferSite> new_value;  ///< Empty: nothing writes the input.
};

std::optional<InputSites> input_sites(const Program& body, int input) {
  // A range of inputs (a merged update's flat BufferRef) may cover it: no plan then.
  bool exact_only = true;
  for (const Invocation& inv : body.code) {
    for (const auto* refs : {&inv.operands, &inv.results, &inv.clear}) {
      for (const BufferRef& r : *refs) {
        if (r.space != Space::input) continue;
        const int64_t own = static_cast<int64_t>(body.inputs[static_cast<size_t>(r.input)].type.bytes());
        if (bytes_of(r) != own || (r.input == input && refs == &inv.clear)) exact_only = false;
      }
    }
  }
  if (!exact_only) return std::nullopt;
  const auto is_input = [&](const BufferRef& r) { return r.space == Space::input && r.input == input; };
  size_t writer = body.code.size();
  for (size_t i = 0; i < body.code.size(); ++i) {
    if (!std::any_of(body.code[i].results.begin(), body.code[i].results.end(), is_input)) continue;
    if (writer != body.code.size()) return std::nullopt;  // written twice
    writer = i;
  }
  InputSites s;
  for (size_t i = 0; i < body.code.size(); ++i) {
    const Invocation& inv = body.code[i];
    for (size_t k = 0; k < inv.operands.size(); ++k) {
      if (is_input(inv.operands[k])) (i <= writer ? s.old_reads : s.new_value).push_back({i, false, k});
    }
    if (i != writer) continue;
    for (size_t r = 0; r < inv.results.size(); ++r) {
      if (is_input(inv.results[r])) s.new_value.push_back({i, true, r});
    }
  }
  return s;
}

}  // namespace

LoopSlots no_loop_slots(const Program& body, const Invocation& loop) {
  LoopSlots plan;
  plan.outputs.assign(body.outputs.size(), SlotPlace{});
  plan.carry_ys.assign(static_cast<size_t>(loop.node.int_attr("carries")), -1);
  plan.shifted.assign(plan.carry_ys.size(), false);
  return plan;
}

LoopSlots plan_loop_slots(const Program& body, const Invocation& loop, const std::vector<const void*>& in,
                          const std::vector<void*>& results) {
  using Kind = SlotPlace::Kind;
  const int64_t length = loop.node.int_attr("length");
  const int consts = static_cast<int>(loop.node.int_attr("consts"));
  const int carries = static_cast<int>(loop.node.int_attr("carries"));
  const size_t outputs = body.outputs.size();
  LoopSlots plan = no_loop_slots(body, loop);
  if (length < 1 || loop_slot_bindings(loop, body) != length) return plan;
  // Swapped carries are staged through a buffer of their own; early exits decide at run
  // time which slot holds a carry's last value: neither chains nor shifts a carry.
  bool chain = !scan_exit(loop.node).any();
  for (int c = 0; c < carries; ++c) {
    const BufferRef& next = body.outputs[static_cast<size_t>(c)];
    chain = chain && !(next.space == Space::input && next.input != consts + c);
  }
  // A result written while the loop's operands are read must not overlap them.
  const auto overlaps_an_operand = [&](size_t r) {
    const std::byte* begin = static_cast<const std::byte*>(results[r]);
    const std::byte* end = begin + loop.results[r].type.bytes();
    for (size_t k = 0; k < in.size(); ++k) {
      const std::byte* at = static_cast<const std::byte*>(in[k]);
      if (at < end && at + loop.operands[k].type.bytes() > begin) return true;
    }
    return false;
  };
  const auto place_outputs = [&](const BufferRef& ref, SlotPlace place) {
    for (size_t o = 0; o < outputs; ++o) {
      if (plan.outputs[o].kind == Kind::own && body.outputs[o] == ref) plan.outputs[o] = place;
    }
  };
  const auto add_sites = [&](const std::vector<BufferSite>& sites, SlotPlace place) {
    for (const BufferSite& s : sites) plan.sites.push_back({s, place});
  };
  // The ys, each into its own slot where the rule allows.
  for (size_t r = static_cast<size_t>(carries); r < outputs; ++r) {
    const BufferRef& out = body.outputs[r];
    if (plan.outputs[r].kind != Kind::own || overlaps_an_operand(r)) continue;
    const SlotPlace slot{Kind::ys, static_cast<int>(r)};
    if (out.space == Space::arena) {
      std::optional<std::vector<BufferSite>> sites = arena_sites(body, out);
      if (!sites) continue;
      add_sites(*sites, slot);
      place_outputs(out, slot);
      continue;
    }
    // A carry's input written in place: the carry chained to this ys.
    const int c = out.input - consts;
    if (!chain || c < 0 || c >= carries || !(body.outputs[static_cast<size_t>(c)] == out)) continue;
    std::optional<InputSites> sites = input_sites(body, out.input);
    if (!sites || sites->new_value.empty()) continue;
    plan.carry_ys[static_cast<size_t>(c)] = static_cast<int>(r);
    add_sites(sites->new_value, slot);
    add_sites(sites->old_reads, {Kind::previous, c});
    place_outputs(out, slot);
  }
  if (!chain) return plan;
  // The carries whose input nothing writes: chained to the ys holding their next value,
  // else shifted into a ys of their old value.
  for (int c = 0; c < carries; ++c) {
    const BufferRef& next = body.outputs[static_cast<size_t>(c)];
    if (plan.chained(c) || next.space != Space::arena) continue;
    const int input = consts + c;
    std::optional<InputSites> sites = input_sites(body, input);
    if (!sites || !sites->new_value.empty()) continue;
    const BufferRef old{Space::input, input, 0, body.inputs[static_cast<size_t>(input)].type};
    if (plan.outputs[static_cast<size_t>(c)].kind == Kind::ys) {
      plan.carry_ys[static_cast<size_t>(c)] = plan.outputs[static_cast<size_t>(c)].index;
      add_sites(sites->old_reads, {Kind::previous, c});
      place_outputs(old, {Kind::previous, c});
      continue;
    }
    int r = -1;  // the first ys of its old value
    for (size_t o = static_cast<size_t>(carries); o < outputs && r < 0; ++o) {
      if (body.outputs[o] == old && plan.outputs[o].kind == Kind::own && !overlaps_an_operand(o)) r = static_cast<int>(o);
    }
    if (r < 0 || overlaps_an_operand(static_cast<size_t>(c))) continue;
    std::optional<std::vector<BufferSite>> written = arena_sites(body, next);
    if (!written) continue;
    plan.carry_ys[static_cast<size_t>(c)] = r;
    plan.shifted[static_cast<size_t>(c)] = true;
    add_sites(sites->old_reads, {Kind::ys, r});
    add_sites(*written, {Kind::next, c});
    plan.outputs[static_cast<size_t>(r)] = {Kind::ys, r};
    place_outputs(old, {Kind::ys, r});
    place_outputs(next, {Kind::next, c});
  }
  return plan;
}

LoopSlots plan_loop_slots(const Program& parent, const Invocation& loop, const Program& body) {
  // Nominal addresses: the arena at 1 TiB, the inputs block at 2 TiB (no Program nears 1 TiB).
  Program laid = parent;
  if (laid.input_offsets.empty()) lay_out_inputs_in_order(laid);
  const auto at = [&](const BufferRef& r) {
    const uintptr_t base = uintptr_t{1} << (r.space == Space::arena ? 40 : 41);
    const int64_t offset = r.space == Space::arena ? r.offset : laid.input_offsets[static_cast<size_t>(r.input)];
    return reinterpret_cast<void*>(base + static_cast<uintptr_t>(offset));
  };
  std::vector<const void*> in;
  std::vector<void*> results;
  for (const BufferRef& r : loop.operands) in.push_back(at(r));
  for (const BufferRef& r : loop.results) results.push_back(at(r));
  return plan_loop_slots(body, loop, in, results);
}

LoopCopies loop_copies_per_iteration(const LoopSlots& plan, const Program& body, const Invocation& loop) {
  LoopCopies copies;
  const auto add = [&](const BufferRef& r) {
    ++copies.calls;
    copies.bytes += bytes_of(r);
  };
  const int consts = static_cast<int>(loop.node.int_attr("consts"));
  const int carries = static_cast<int>(loop.node.int_attr("carries"));
  if (loop.node.int_attr("length") > 1 && loop_slot_bindings(loop, body) == 1) {
    for (size_t k = static_cast<size_t>(consts + carries); k < body.inputs.size(); ++k) {
      add(BufferRef{Space::input, static_cast<int32_t>(k), 0, body.inputs[k].type});
    }
  }
  for (size_t y = static_cast<size_t>(carries); y < body.outputs.size(); ++y) {
    if (!(plan.outputs[y] == SlotPlace{SlotPlace::Kind::ys, static_cast<int>(y)})) add(body.outputs[y]);
  }
  bool staged = false;
  for (int c = 0; c < carries; ++c) {
    const BufferRef& next = body.outputs[static_cast<size_t>(c)];
    staged = staged || (next.space == Space::input && next.input != consts + c);
  }
  for (int c = 0; c < carries; ++c) {
    const BufferRef& next = body.outputs[static_cast<size_t>(c)];
    if (staged) {
      add(next);
      add(next);
    } else if (!plan.chained(c) && !(next.space == Space::input && next.input == consts + c)) {
      add(next);
    }
  }
  return copies;
}

LoopSlotBinding bind_loop_slot(const LoopSlots& plan, const Program& body, const Invocation& loop,
                               const std::vector<const void*>& in, const std::vector<void*>& results, int64_t slot) {
  using Kind = SlotPlace::Kind;
  const int64_t length = loop.node.int_attr("length");
  const size_t consts = static_cast<size_t>(loop.node.int_attr("consts"));
  const size_t carries = static_cast<size_t>(loop.node.int_attr("carries"));
  const size_t first_x = consts + carries;
  const bool reverse = loop.node.bool_attr("reverse");
  LoopSlotBinding s;
  s.inputs.assign(in.size(), nullptr);
  for (size_t k = 0; k < consts; ++k) s.inputs[k] = in[k];
  if (length >= 1 && loop_slot_bindings(loop, body) == length) {
    for (size_t k = first_x; k < in.size(); ++k) {
      s.inputs[k] = static_cast<const std::byte*>(in[k]) + slot * static_cast<int64_t>(body.inputs[k].type.bytes());
    }
  }
  const auto slot_of = [&](int r, int64_t i) -> void* {
    return static_cast<std::byte*>(results[static_cast<size_t>(r)]) +
           i * static_cast<int64_t>(body.outputs[static_cast<size_t>(r)].type.bytes());
  };
  // The iterations before and after this one, in the order the loop runs them.
  const int64_t before = reverse ? slot + 1 : slot - 1, after = reverse ? slot - 1 : slot + 1;
  const auto at = [&](SlotPlace place) -> void* {
    const size_t c = static_cast<size_t>(place.index);
    switch (place.kind) {
      case Kind::own: return nullptr;
      case Kind::ys: return slot_of(place.index, slot);
      case Kind::previous:
        if (before < 0 || before >= length) return const_cast<void*>(in[consts + c]);
        return slot_of(plan.carry_ys[c], before);
      case Kind::next:
        if (after < 0 || after >= length) return results[c];
        return slot_of(plan.carry_ys[c], after);
    }
    return nullptr;
  };
  for (const auto& [site, place] : plan.sites) s.patches.push_back({site, at(place)});
  for (const SlotPlace& place : plan.outputs) s.outputs.push_back(at(place));
  for (size_t c = 0; c < carries; ++c) {
    const int r = plan.carry_ys[c];
    s.carries.push_back(r < 0 ? nullptr : plan.shifted[c] ? at({Kind::ys, r}) : at({Kind::previous, static_cast<int>(c)}));
  }
  return s;
}

void apply_slot_patches(const std::vector<SlotPatch>& patches, size_t index, InvocationBuffers& b) {
  for (const SlotPatch& p : patches) {
    if (p.site.invocation != index) continue;
    if (p.site.result) {
      b.results[p.site.position] = p.address;
    } else {
      b.in[p.site.position] = p.address;
    }
  }
}

const void* patched_address(const std::vector<SlotPatch>& patches, const BufferSite& site, const void* own) {
  for (const SlotPatch& p : patches) {
    if (p.site.invocation == site.invocation && p.site.result == site.result && p.site.position == site.position) {
      return p.address;
    }
  }
  return own;
}

}  // namespace weft

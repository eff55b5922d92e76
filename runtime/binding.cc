#include "runtime/binding.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "ir/text_util.h"

namespace weft {

void check_layout(Program& program, const std::string& who) {
  if (program.input_offsets.empty()) lay_out_inputs_in_order(program);
  WEFT_CHECK(program.input_offsets.size() == program.inputs.size(),
             who + ": one offset per input of program @" + program.name);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const int64_t at = program.input_offsets[i];
    WEFT_CHECK(at >= 0 && at % 64 == 0 &&
                   at + static_cast<int64_t>(program.inputs[i].type.bytes()) <= program.inputs_bytes,
               who + ": input " + std::to_string(i) + " of program @" + program.name +
                   " is unaligned or outside the inputs block");
  }
  const auto inside = [&](const BufferRef& r) {
    const int64_t bytes = static_cast<int64_t>(r.type.bytes());
    if (r.space == Space::arena) return r.offset >= 0 && r.offset + bytes <= program.arena_bytes;
    return r.input >= 0 && r.input < static_cast<int>(program.inputs.size()) &&
           program.input_offsets[r.input] + bytes <= program.inputs_bytes;
  };
  for (const Invocation& inv : program.code) {
    for (const auto* refs : {&inv.operands, &inv.results, &inv.clear}) {
      for (const BufferRef& r : *refs) {
        WEFT_CHECK(inside(r), who + ": " + r.to_string() + " of %" + inv.label +
                                  " lies outside its block in program @" + program.name);
      }
    }
  }
}

Status check_memory(const Program& program, int64_t limit, const std::string& limit_source) {
  int64_t inputs = program.inputs_bytes;
  if (program.input_offsets.empty()) {  // not laid out yet: the inputs back to back
    inputs = 0;
    for (const ProgramInput& in : program.inputs) inputs += static_cast<int64_t>(in.type.bytes());
  }
  const int64_t needed = program.arena_bytes + inputs;
  if (limit < 0 || needed <= limit) return Status::ok_status();

  // The largest buffers: inputs and arena results (each once), by size.
  struct Buffer {
    int64_t bytes;
    std::string what;
  };
  std::vector<Buffer> buffers;
  for (const ProgramInput& in : program.inputs) {
    buffers.push_back({static_cast<int64_t>(in.type.bytes()),
                       "%" + in.name + " " + in.type.to_string() + " (input)"});
  }
  for (const Invocation& inv : program.code) {
    for (size_t k = 0; k < inv.results.size(); ++k) {
      const BufferRef& r = inv.results[k];
      if (r.space != Space::arena) continue;
      // The label names the first result only (a loop's %h); a later one by its place.
      const std::string name = k == 0 ? "%" + inv.label : "result " + std::to_string(k) + " of %" + inv.label;
      buffers.push_back({static_cast<int64_t>(r.type.bytes()),
                         name + " " + r.type.to_string() + " (arena+" + std::to_string(r.offset) + ")"});
    }
  }
  std::stable_sort(buffers.begin(), buffers.end(),
                   [](const Buffer& a, const Buffer& b) { return a.bytes > b.bytes; });
  std::ostringstream msg;
  msg << "program @" << program.name << " needs " << format_bytes(needed) << " (arena "
      << format_bytes(program.arena_bytes) << " + inputs " << format_bytes(inputs)
      << ") but only " << format_bytes(limit) << " are available (" << limit_source
      << "); largest buffers: ";
  for (size_t i = 0; i < buffers.size() && i < 3; ++i) {
    msg << (i ? ", " : "") << buffers[i].what << " " << format_bytes(buffers[i].bytes);
  }
  // What to do next: a limit the user set can be raised; the machine's cannot.
  msg << (limit_source == "the memory limit"
              ? "; raise the limit (--max-memory, max_memory) or use a smaller batch"
              : "; use a smaller batch");
  return Error{msg.str()};
}

void* buffer_address(const BufferRef& ref, void* arena, const std::vector<void*>& inputs) {
  if (ref.space == Space::input) return inputs[ref.input];
  return static_cast<std::byte*>(arena) + ref.offset;
}

std::vector<void*> InvocationBuffers::kernel_args() const {
  std::vector<void*> args;
  for (const void* p : in) args.push_back(const_cast<void*>(p));
  args.insert(args.end(), results.begin(), results.end());
  return args;
}

std::vector<void*> InvocationBuffers::epilogue_args(int gemm_result) const {
  std::vector<void*> args = {results[static_cast<size_t>(gemm_result)]};
  for (size_t i = 2; i < in.size(); ++i) args.push_back(const_cast<void*>(in[i]));
  for (size_t r = 0; r < results.size(); ++r) {
    if (gemm_result == 0 || static_cast<int>(r) != gemm_result) args.push_back(results[r]);
  }
  return args;
}

InvocationBuffers resolve_buffers(const Invocation& inv,
                                  const std::function<void*(const BufferRef&)>& resolve) {
  InvocationBuffers b;
  for (const BufferRef& r : inv.operands) {
    b.in.push_back(resolve(r));
    b.types.push_back(r.type);
  }
  for (const BufferRef& r : inv.results) b.results.push_back(resolve(r));
  for (const BufferRef& r : inv.clear) b.clear.push_back({resolve(r), r.type.bytes()});
  return b;
}

std::vector<ArenaRun> arena_free_runs(const Program& program) {
  struct Value {
    int64_t begin, end;  ///< Bytes [begin, end) of the arena.
    size_t first, last;  ///< Written by invocation `first`, last read by `last`.
  };
  std::vector<Value> values;
  // Which value each byte holds now: disjoint segments [begin, end) -> value index.
  std::map<int64_t, std::pair<int64_t, size_t>> holder;
  const size_t n = program.code.size();
  auto read = [&](const BufferRef& r, size_t at) {
    if (r.space != Space::arena) return;
    const int64_t begin = r.offset, end = r.offset + static_cast<int64_t>(r.type.bytes());
    auto it = holder.upper_bound(begin);
    if (it != holder.begin()) --it;
    for (; it != holder.end() && it->first < end; ++it) {
      if (it->second.first <= begin) continue;
      Value& v = values[it->second.second];
      v.last = std::max(v.last, at);
    }
  };
  auto write = [&](const BufferRef& r, size_t at) {
    if (r.space != Space::arena) return;
    const int64_t begin = r.offset, end = r.offset + static_cast<int64_t>(r.type.bytes());
    // Cut the segments that straddle begin or end, then drop those inside.
    for (int64_t cut : {begin, end}) {
      auto it = holder.upper_bound(cut);
      if (it == holder.begin()) continue;
      --it;
      if (it->first < cut && cut < it->second.first) {
        holder[cut] = it->second;
        it->second.first = cut;
      }
    }
    holder.erase(holder.lower_bound(begin), holder.lower_bound(end));
    holder[begin] = {end, values.size()};
    values.push_back({begin, end, at, at});
  };
  for (size_t i = 0; i < n; ++i) {
    const Invocation& inv = program.code[i];
    for (const BufferRef& r : inv.operands) read(r, i);
    for (const BufferRef& r : inv.clear) write(r, i);
    for (const BufferRef& r : inv.results) {
      // A result that is also an operand (in place) was read above: its old value's
      // bytes are live through this invocation, its new value's from it.
      write(r, i);
    }
  }
  for (const BufferRef& r : program.outputs) read(r, n);
  for (const Update& u : program.updates) read(u.from, n);

  std::vector<ArenaRun> runs(n);
  std::vector<std::pair<int64_t, int64_t>> live;
  for (size_t i = 0; i < n; ++i) {
    live.clear();
    for (const Value& v : values) {
      if (v.first <= i && i <= v.last) live.push_back({v.begin, v.end});
    }
    std::sort(live.begin(), live.end());
    int64_t at = 0;
    ArenaRun best;
    for (const auto& [begin, end] : live) {
      if (begin - at > best.bytes) best = {at, begin - at};
      at = std::max(at, end);
    }
    if (program.arena_bytes - at > best.bytes) best = {at, program.arena_bytes - at};
    runs[i] = best;
  }
  return runs;
}

std::vector<int64_t> snapshot_layout(const Program& program, int64_t align, int64_t* total) {
  std::vector<int64_t> at;
  int64_t bytes = 0;
  for (const Update& u : program.updates) {
    if (u.from.space != Space::input) continue;
    at.push_back(bytes);
    bytes += (static_cast<int64_t>(u.from.type.bytes()) + align - 1) / align * align;
  }
  *total = bytes;
  return at;
}

}  // namespace weft

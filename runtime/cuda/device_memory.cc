#include "runtime/cuda/device_memory.h"

#include <algorithm>
#include <vector>

#include "runtime/binding.h"
#include "runtime/cuda/library.h"
#include "runtime/loop_slots.h"

namespace weft::cuda {
namespace {

// `p` laid out as the executor lays it out before binding (check_layout).
Program laid_out(const Program& p, const char* who) {
  Program copy = p;
  check_layout(copy, who);
  return copy;
}

// The bytes `code`'s invocations own beyond their program's arena and inputs: the loops'
// bodies (nested loops once per binding of their body) and the constants computed once.
void add_owned(const Program& root, const Program& program, DeviceMemory& m) {
  for (const Invocation& inv : program.code) {
    if (inv.kind == Invocation::Kind::loop) {
      const Program body = laid_out(root.bodies[static_cast<size_t>(inv.body)], "cuda::device_memory (loop body)");
      m.loop_bodies += loop_body_bytes(body) + staged_carry_bytes(body, inv);
      ++m.loops;
      const int64_t bindings = loop_slot_bindings(inv, body);
      for (int64_t b = 0; b < bindings; ++b) add_owned(root, body, m);
      continue;
    }
    if (inv.kind != Invocation::Kind::library || inv.results.empty()) continue;
    std::vector<Type> operands;
    for (const BufferRef& r : inv.operands) operands.push_back(r.type);
    switch (library_kind(inv.node, operands, inv.results[0].type)) {
      case LibraryKind::constant:
        m.constants += std::max<int64_t>(static_cast<int64_t>(inv.results[0].type.bytes()), 1);
        break;
      case LibraryKind::convolution: ++m.convolutions; break;
      default: break;
    }
  }
}

}  // namespace

int64_t loop_body_bytes(const Program& body) {
  return std::max<int64_t>(body.arena_bytes, 1) + std::max<int64_t>(body.inputs_bytes, 1);
}

int64_t staged_carry_bytes(const Program& body, const Invocation& loop) {
  const int consts = static_cast<int>(loop.node.int_attr("consts"));
  const int carries = static_cast<int>(loop.node.int_attr("carries"));
  bool staged = false;
  int64_t total = 0;
  for (int c = 0; c < carries; ++c) {
    // A next carry that is another body input (two carries swapped).
    const BufferRef& out = body.outputs[static_cast<size_t>(c)];
    staged = staged || (out.space == Space::input && out.input != consts + c);
    total += static_cast<int64_t>(out.type.bytes());
  }
  return staged ? std::max<int64_t>(total, 1) : 0;
}

DeviceMemory device_memory(const Program& program) {
  const Program root = laid_out(program, "cuda::device_memory");
  DeviceMemory m;
  m.arena = std::max<int64_t>(root.arena_bytes, 1);
  m.inputs = std::max<int64_t>(root.inputs_bytes, 1);
  int64_t snapshots = 0;
  snapshot_layout(root, 256, &snapshots);
  m.snapshots = snapshots;
  add_owned(root, root, m);
  return m;
}

}  // namespace weft::cuda

#pragma once
// What every executor does the same way when it binds a Program to one device's memory
// (runtime/cpu, runtime/cuda): the layout checks, the memory check and its message, each
// invocation's buffers resolved to addresses in the argument orders the kernels take,
// and the layout of the update snapshots. A new device binds through these too; what
// differs between devices (allocation, which kernel runs an op) stays in its executor.
//
//   WEFT_RETURN_IF_ERROR(check_memory(program, limit, "MemAvailable"));
//   check_layout(program, "cpu::Executor::create");
//   for (const Invocation& inv : program.code) {
//     InvocationBuffers b = resolve_buffers(inv, [&](const BufferRef& r) { return at(r); });
//     ... b.in, b.types, b.out(), b.kernel_args(), b.epilogue_args(inv.gemm_result) ...
//   }

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/program.h"

namespace weft {

/// Lays the inputs out in order when `program` has no layout yet, then checks it: every
/// input 64-byte aligned inside the inputs block, every buffer an invocation names inside
/// its block. A violation is an internal error (WEFT_CHECK) naming `who`, the buffer and
/// the program: lowering never makes one.
void check_layout(Program& program, const std::string& who);

/// The device bytes `program` needs (its arena and its inputs block, alignment padding
/// included) against `limit`; over it, an error naming the total, `limit_source` ("the
/// memory limit", "MemAvailable", "free memory of CUDA device 0"), the three largest
/// buffers, so a user sees what to shrink, and what to do (raise a limit the user set,
/// or use a smaller batch).
Status check_memory(const Program& program, int64_t limit, const std::string& limit_source);

/// Where `ref` lies on a device: input `ref.input` at its address in `inputs`, an arena
/// buffer `ref.offset` bytes into `arena`.
void* buffer_address(const BufferRef& ref, void* arena, const std::vector<void*>& inputs);

/// One invocation's buffers as addresses on a device.
struct InvocationBuffers {
  std::vector<const void*> in;  ///< The operands, in order.
  std::vector<Type> types;      ///< Their types.
  std::vector<void*> results;
  std::vector<std::pair<void*, size_t>> clear;  ///< Buffers zeroed before it runs.

  void* out() const { return results[0]; }
  /// A generated kernel's arguments: the operands, then the results.
  std::vector<void*> kernel_args() const;
  /// A contraction's epilogue arguments (runtime/program.h): C (result `gemm_result`),
  /// the operands after A and B, then the other results.
  std::vector<void*> epilogue_args(int gemm_result) const;
};

InvocationBuffers resolve_buffers(const Invocation& inv,
                                  const std::function<void*(const BufferRef&)>& resolve);

/// A run of arena bytes.
struct ArenaRun {
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// For each invocation, the longest run of the arena that no value live while it runs
/// occupies: a value is live from the invocation that writes it (a result or a cleared
/// buffer) to the last that reads any of its bytes (an operand reads what the latest
/// writes left in its bytes), or to the end for the outputs and the updates' values. An
/// invocation may use its run as workspace (a cuDNN convolution's) without growing the
/// memory the device needs.
std::vector<ArenaRun> arena_free_runs(const Program& program);

/// Where the updates whose value is an input (assign(%a, %b): %b's old value must be read
/// even when %b is updated too) are copied before any update lands: one offset per such
/// update, in order, each a multiple of `align`, in a block of `*total` bytes.
std::vector<int64_t> snapshot_layout(const Program& program, int64_t align, int64_t* total);

}  // namespace weft

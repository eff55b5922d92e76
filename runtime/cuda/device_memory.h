#pragma once
// The device memory a cuda::Executor allocates for a Program, known on the host before
// any device is touched (issue #31: weft's device memory against PyTorch's). The
// executor allocates by these same rules (executor.cc, bind.cc): this is its size
// computation, not a copy of it.
//
//   DeviceMemory m = device_memory(program);
//   std::cout << format_bytes(m.known()) << " + cuDNN workspaces of "
//             << m.convolutions << " convolutions\n";
//
// Known from the Program: the root arena and inputs block, each loop's body arena,
// inputs block and staged carries (a body bound per slot binds its nested loops once per
// slot), the update snapshots, the constants computed once, cuBLAS's workspace. Not
// known until the device chooses: each convolution's cuDNN workspace (in the arena's
// free bytes when it fits, else in the shared workspace, sized to the largest need);
// a persistent loop's program arrays and barrier (WEFT_PERSISTENT_LOOPS=1); the prefetch
// slots (two per input the caller prefetches). Known but not counted yet: a library
// kernel's workspace beyond cuBLAS's 4 MiB (attention_grad's, when it needs more).

#include <cstddef>
#include <cstdint>

#include "runtime/program.h"

namespace weft::cuda {

/// cuBLAS's (and cuBLASLt's) workspace inside the shared block: the most either may use
/// (NVIDIA recommends 32 MiB on Hopper for the best kernels; weft's GEMMs need far less).
inline constexpr size_t kCublasWorkspaceBytes = size_t{4} << 20;

/// What a loop invocation binds for its body, every allocation at least one byte (as
/// the executor's device_allocate takes them): the body's arena and inputs block.
int64_t loop_body_bytes(const Program& body);

/// The block a loop whose body swaps two carries stages them in (0 when it swaps none):
/// the carries' bytes, at least one.
int64_t staged_carry_bytes(const Program& body, const Invocation& loop);

/// The device memory of `program`, by component.
struct DeviceMemory {
  int64_t arena = 0;        ///< The root arena (at least one byte).
  int64_t inputs = 0;       ///< The root inputs block (at least one byte).
  int64_t loop_bodies = 0;  ///< Every bound loop's body arena, inputs block, staged carries.
  int loops = 0;            ///< Loop bindings counted in loop_bodies (nested ones per slot).
  int64_t snapshots = 0;    ///< Update values that are inputs, copied before the updates.
  int64_t constants = 0;    ///< Constants computed once and kept on the device.
  int64_t cublas_workspace = static_cast<int64_t>(kCublasWorkspaceBytes);
  int convolutions = 0;     ///< cuDNN invocations: their workspace is not counted.

  /// Everything above that is counted: a lower bound of the executor's device_bytes().
  int64_t known() const { return arena + inputs + loop_bodies + snapshots + constants + cublas_workspace; }
};

/// `program`'s device memory (lowered, laid out or not).
DeviceMemory device_memory(const Program& program);

}  // namespace weft::cuda

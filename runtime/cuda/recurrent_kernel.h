#pragma once
// The persistent loop kernel (issue #31): a loop's body, given as a RecurrentProgramView
// (recurrent_program.h), run as ONE cooperative kernel for all its iterations, the
// recurrent weights kept in shared memory across them. recurrent_kernel_device.inc says
// how the kernel works (the grid barrier, the matmul partition, the register program);
// recurrent_kernel_layout.h holds the decisions the host plans with.
//
//   StatusOr<RecurrentLaunch> launch = plan_recurrent_launch(host_program, device);
//   std::vector<MatmulPlacement> table = matmul_placements(host_program, *launch);
//   // device_program: the same arrays and `table` copied to the device, buffers'
//   // addresses the device's (with_placements(…, device table, launch->blocks,
//   // launch->shared_bytes)); barrier: recurrent_barrier_bytes() +
//   // launch->workspace_bytes of device memory, zeroed once (the counter, then the
//   // split-K scratch).
//   cudaError_t e = launch_recurrent(device_program, barrier, *launch, stream);
//
// Host API: no CUDA device code here. Enqueues on `stream`, never synchronizes or
// allocates, so a captured step graph holds it. Not yet run on a GPU:
// recurrent_kernel_emulation_test runs the kernel's source on the host.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "ir/status.h"
#include "runtime/cuda/recurrent_kernel_layout.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda {

/// The launch for `program` (host arrays; checked as check_recurrent_program does) on
/// device `device`: blocks from the cooperative occupancy (the kernel's
/// cudaOccupancyMaxActiveBlocksPerMultiprocessor × multiprocessors), shared memory for
/// the constant B slices that fit and the split-K scratch its matmul partitions need
/// (workspace_bytes; choose_recurrent_launch); an error saying why when the
/// device cannot run it (no cooperative launch, no block resident, a CUDA error).
StatusOr<RecurrentLaunch> plan_recurrent_launch(const RecurrentProgramView& program, int device);

/// The kernel's table (RecurrentProgramView::placements) for `host_program` under
/// `launch`: matmul_placements on its blocks, shared bytes and k_splits.
inline std::vector<MatmulPlacement> matmul_placements(const RecurrentProgramView& host_program,
                                                      const RecurrentLaunch& launch) {
  return matmul_placements(host_program, launch.blocks, launch.shared_bytes, launch.k_splits);
}

/// Launches the kernel on `stream` as a cooperative launch: cudaLaunchKernelEx with
/// cudaLaunchAttributeCooperative, which CUDA 13's driver_types.h documents as "valid for
/// graph nodes, launches", so that stream capture records a cooperative kernel node (a
/// GPU run is still to confirm it). `device_program` points at device copies of the
/// arrays; `barrier` at recurrent_barrier_bytes() + launch.workspace_bytes of device
/// memory zeroed once: the grid barrier's counter (each launch leaves its low bits zero
/// again, so launches and graph replays reuse it), then, at byte
/// recurrent_barrier_bytes(), the scratch where matmul phases whose partition splits k
/// (recurrent_kernel_layout.h, choose_matmul_partition) write their partial sums (written
/// before it is read in each phase: it needs no zeroing, and launches reuse it too);
/// `launch` from plan_recurrent_launch on the current device. `device_program.placements`
/// must point at the device copy of matmul_placements(host program, launch), its
/// placed_blocks and placed_shared_bytes the launch's: cudaErrorInvalidValue otherwise
/// (a program with no phase or no iteration needs none).
cudaError_t launch_recurrent(const RecurrentProgramView& device_program, void* barrier,
                             const RecurrentLaunch& launch, cudaStream_t stream);

/// Bytes of device memory the grid barrier needs (one 32-bit counter); the split-K
/// scratch (RecurrentLaunch::workspace_bytes) follows them.
size_t recurrent_barrier_bytes();

}  // namespace weft::cuda

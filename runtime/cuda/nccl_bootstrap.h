#pragma once
// The host side of starting NCCL (runtime/cuda/nccl_communicator.h), with no CUDA or
// NCCL header, so CI runs it without a GPU: which device a rank takes (its local rank),
// the refusal of two ranks on one device, and the unique id that rank 0 makes and sends
// to every rank through the launcher's host communicator (MPI or Gloo: one bootstrap).
//
//   NcclPlacement me{.rank = host.rank(), .world_size = host.world_size(),
//                    .local_rank = local_rank, .host = hostname()};
//   const int device = nccl_device(local_rank, device_count);
//   me.gpu = pci_bus_id(device);  // the GPU itself, where the device can say
//   WEFT_RETURN_IF_ERROR(check_one_rank_per_device(host, me, device_count));
//   WEFT_ASSIGN_OR_RETURN(NcclUniqueIdBytes id, exchange_unique_id(host, make_id));
//   // ... then ncclCommInitRank(&comm, world_size, id, rank) on `device`.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"

namespace weft::cuda {

/// Where one rank runs: its global rank, the world, its index among the ranks of its
/// machine (which CUDA device it takes: nccl_device) and the machine's name.
struct NcclPlacement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string host;
  /// The GPU the rank takes, as the machine names it (its PCI bus id, "0000:3b:00.0"),
  /// which two ranks of one machine must not share; empty where unknown (the CUDA
  /// ordinal stands for it then).
  std::string gpu;
};

/// The CUDA device of the rank with `local_rank` in a process that sees `device_count`
/// devices: its local rank, one GPU per local rank — or device 0 when the process sees
/// one device, the launcher having given each process its own GPU (`srun
/// --gpus-per-task=1`, a CUDA_VISIBLE_DEVICES per rank: every rank's only device is its
/// device 0); -1 when neither (more ranks on the machine than GPUs it shows them).
int nccl_device(int local_rank, int device_count);

/// ncclUniqueId's bytes (NCCL_UNIQUE_ID_BYTES), as the host side sees them.
using NcclUniqueIdBytes = std::array<char, 128>;

/// Refuses a placement NCCL cannot run, on every rank alike (one sum all_reduce over
/// `host`, which every rank must call): a local rank with no device (nccl_device -1:
/// "local rank 2 needs CUDA device 2, but host a has 2: NCCL runs one rank per GPU..."),
/// and two ranks on one GPU of one machine (the same NcclPlacement::gpu, else the same
/// device: "ranks 0 and 1 both use CUDA device 0 (PCI bus 0000:3b:00.0) on host a: ..."),
/// which NCCL would refuse later as a duplicate GPU.
Status check_one_rank_per_device(collective::Communicator& host, const NcclPlacement& me,
                                 int device_count);

/// The unique id every rank passes to ncclCommInitRank: rank 0 calls `make` (a wrapper
/// of ncclGetUniqueId) and broadcasts its result over `host`; every rank calls this.
/// When `make` fails on rank 0, every rank gets the error (rank 0's message), so no rank
/// waits for an id that never comes.
StatusOr<NcclUniqueIdBytes> exchange_unique_id(collective::Communicator& host,
                                               const std::function<StatusOr<NcclUniqueIdBytes>()>& make);

/// The line a rank prints when its step's NCCL reductions (`bytes` in all) have not
/// finished after `timeout` (NcclCommunicator::watch_step; collective/watchdog.h's form,
/// counting one collective of the current step): "rank 0 of 2 (NCCL), in all_reduce #1
/// of step 37 (1.1 MB): rank 1 did not answer within 300 s (it died or hangs); exiting".
std::string step_timed_out(int rank, int world_size, int64_t bytes, std::chrono::milliseconds timeout);

/// This machine's name (gethostname), for NcclPlacement::host.
std::string host_name();

}  // namespace weft::cuda

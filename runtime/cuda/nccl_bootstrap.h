#pragma once
// The host side of starting NCCL (runtime/cuda/nccl_communicator.h), with no CUDA or
// NCCL header, so CI runs it without a GPU: which device a rank takes (its local rank),
// the refusal of two ranks on one device, and the unique id that rank 0 makes and sends
// to every rank through the launcher's host communicator (MPI or Gloo: one bootstrap).
//
//   NcclPlacement me{.rank = host.rank(), .world_size = host.world_size(),
//                    .local_rank = local_rank, .host = hostname()};
//   WEFT_RETURN_IF_ERROR(check_one_rank_per_device(host, me, device_count));
//   WEFT_ASSIGN_OR_RETURN(NcclUniqueIdBytes id, exchange_unique_id(host, make_id));
//   // ... then ncclCommInitRank(&comm, world_size, id, rank) on device me.local_rank.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"

namespace weft::cuda {

/// Where one rank runs: its global rank, the world, its index among the ranks of its
/// machine (the CUDA device it takes: one GPU per local rank) and the machine's name.
struct NcclPlacement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string host;
};

/// ncclUniqueId's bytes (NCCL_UNIQUE_ID_BYTES), as the host side sees them.
using NcclUniqueIdBytes = std::array<char, 128>;

/// Refuses a placement NCCL cannot run, on every rank alike (one sum all_reduce over
/// `host`, which every rank must call): a local rank outside [0, device_count) ("local
/// rank 1 needs CUDA device 1, but this machine has 1: NCCL runs one rank per GPU..."),
/// and two ranks on one device of one machine ("ranks 0 and 1 both use CUDA device 0 on
/// host a: ..."), which NCCL would refuse later as a duplicate GPU.
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

// The host side of starting NCCL: the one-rank-per-device check and the unique id's
// exchange over the launcher's communicator (nccl_bootstrap.h).
#include "runtime/cuda/nccl_bootstrap.h"

#include <unistd.h>

#include <cstring>
#include <functional>
#include <vector>

#include "runtime/collective/watchdog.h"

namespace weft::cuda {
namespace {

// What one rank reports for the duplicate check: a hash of (host, GPU: its PCI bus id,
// else its device), or -1 when it needs no device check (its local rank is already refused).
int64_t device_key(const NcclPlacement& me, int device) {
  const std::string gpu = me.gpu.empty() ? "device " + std::to_string(device) : me.gpu;
  const uint64_t h = std::hash<std::string>{}(me.host + "/" + gpu);
  return static_cast<int64_t>(h >> 1);  // non-negative, so -1 stays apart
}

Status local_rank_in_range(const NcclPlacement& me, int device_count) {
  if (nccl_device(me.local_rank, device_count) >= 0) return Status::ok_status();
  return Error{"rank " + std::to_string(me.rank) + ": local rank " + std::to_string(me.local_rank) +
               " needs CUDA device " + std::to_string(me.local_rank) + ", but host " + me.host + " has " +
               std::to_string(device_count) +
               ": NCCL runs one rank per GPU (start at most as many ranks per machine as it has GPUs, or give "
               "each its own: one CUDA_VISIBLE_DEVICES per rank, srun --gpus-per-task=1)"};
}

// Every rank's key, gathered by one sum all_reduce (rank r fills slot r).
StatusOr<std::vector<int64_t>> gather_keys(collective::Communicator& host, int64_t key) {
  std::vector<int64_t> keys(static_cast<size_t>(host.world_size()), 0);
  keys[static_cast<size_t>(host.rank())] = key;
  WEFT_RETURN_IF_ERROR(host.all_reduce(keys.data(), static_cast<int64_t>(keys.size()), DType::i64,
                                       collective::Reduction::sum));
  return keys;
}

Status refuse_shared_devices(const std::vector<int64_t>& keys, const NcclPlacement& me, int device) {
  const int64_t mine = keys[static_cast<size_t>(me.rank)];
  for (size_t r = 0; r < keys.size(); ++r) {
    if (static_cast<int>(r) == me.rank || keys[r] != mine || mine < 0) continue;
    const int first = std::min(static_cast<int>(r), me.rank), second = std::max(static_cast<int>(r), me.rank);
    return Error{"ranks " + std::to_string(first) + " and " + std::to_string(second) + " both use CUDA device " +
                 std::to_string(device) + (me.gpu.empty() ? "" : " (PCI bus " + me.gpu + ")") + " on host " +
                 me.host +
                 ": NCCL runs one rank per GPU (give each rank of a machine its own LOCAL_RANK, and start at most "
                 "as many ranks per machine as it has GPUs)"};
  }
  return Status::ok_status();
}

}  // namespace

int nccl_device(int local_rank, int device_count) {
  if (local_rank >= 0 && local_rank < device_count) return local_rank;
  return local_rank >= 0 && device_count == 1 ? 0 : -1;
}

Status check_one_rank_per_device(collective::Communicator& host, const NcclPlacement& me,
                                 int device_count) {
  const Status in_range = local_rank_in_range(me, device_count);
  const int device = nccl_device(me.local_rank, device_count);
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> keys, gather_keys(host, in_range.ok() ? device_key(me, device) : -1));
  WEFT_RETURN_IF_ERROR(in_range);
  return refuse_shared_devices(keys, me, device);
}

StatusOr<NcclUniqueIdBytes> exchange_unique_id(collective::Communicator& host,
                                               const std::function<StatusOr<NcclUniqueIdBytes>()>& make) {
  // One message: a flag (1: the id follows; 0: rank 0's error message follows), then
  // the id or the message, cut to fit.
  std::array<char, 1 + 512> message{};
  if (host.rank() == 0) {
    StatusOr<NcclUniqueIdBytes> made = make();
    if (made.ok()) {
      message[0] = 1;
      std::memcpy(message.data() + 1, made->data(), made->size());
    } else {
      const std::string why = made.error().message.substr(0, message.size() - 2);
      std::memcpy(message.data() + 1, why.data(), why.size());
    }
  }
  WEFT_RETURN_IF_ERROR(host.broadcast(message.data(), static_cast<int64_t>(message.size()), 0));
  if (message[0] != 1) {
    return Error{"the NCCL unique id: rank 0 could not make it: " + std::string(message.data() + 1)};
  }
  NcclUniqueIdBytes id{};
  std::memcpy(id.data(), message.data() + 1, id.size());
  return id;
}

std::string step_timed_out(int rank, int world_size, int64_t bytes, std::chrono::milliseconds timeout) {
  return collective::collective_failure(rank, world_size, "NCCL", collective::begin_collective("all_reduce", bytes),
                                        collective::no_answer(rank, world_size, timeout));
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace weft::cuda

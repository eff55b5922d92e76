// NCCL's communicator (nccl_communicator.h): started from the launcher's host
// communicator, reducing device buffers with ncclAllReduce on a stream.
#include "runtime/cuda/nccl_communicator.h"

#include <cstring>
#include <future>
#include <thread>
#include <utility>

#include "runtime/cuda/device.h"

namespace weft::cuda {
namespace {

Status nccl_status(ncclResult_t result, const std::string& call) {
  if (result == ncclSuccess) return Status::ok_status();
  return Error{call + ": " + ncclGetErrorString(result)};
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL";
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

StatusOr<NcclUniqueIdBytes> make_unique_id() {
  ncclUniqueId id;
  WEFT_RETURN_IF_ERROR(nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  NcclUniqueIdBytes bytes;
  static_assert(sizeof(id.internal) == sizeof(NcclUniqueIdBytes));
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

// The PCI bus id of CUDA device `device` ("0000:3b:00.0"); empty where it cannot say.
std::string pci_bus_id(int device) {
  char id[32] = {};
  if (device < 0 || cudaDeviceGetPCIBusId(id, sizeof(id), device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

StatusOr<int> device_count() {
  if (const std::string why = unavailable_reason(); !why.empty()) return Error{"no CUDA device: " + why};
  int count = 0;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  return count;
}

// How long the watchdog lets ncclCommAbort take before the process exits anyway.
constexpr std::chrono::seconds kAbortLimit{10};

// ncclCommAbort on a thread of its own, waited for at most `limit`: it stops NCCL's
// kernels (the device stays usable for the next process), but must not keep a rank
// that gave up from exiting should it block itself.
void abort_within(ncclComm_t comm, std::chrono::seconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> aborted = done->get_future();
  std::thread([comm, done] {
    ncclCommAbort(comm);
    done->set_value();
  }).detach();
  aborted.wait_for(limit);
}

}  // namespace

StatusOr<ncclDataType_t> nccl_data_type(DType dtype, collective::Reduction reduction) {
  const std::string name(dtype_name(dtype));
  if (reduction == collective::Reduction::mean && !is_floating(dtype)) {
    return Error{"all_reduce mean of " + name + ": the mean of an integer dtype is not defined"};
  }
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
    default: break;
  }
  return Error{"all_reduce of " + name + ": NCCL reduces f32, f64, f16, bf16, i32, i64 and u8"};
}

StatusOr<std::shared_ptr<NcclCommunicator>> NcclCommunicator::create(std::shared_ptr<collective::Communicator> host,
                                                                     int local_rank, std::chrono::milliseconds timeout) {
  WEFT_CHECK(host != nullptr, "NcclCommunicator::create: no host communicator");
  // Every rank takes part in both host exchanges, also one without a GPU or refused, so
  // that no rank waits for one that has already failed; then each reports its error.
  const StatusOr<int> count = device_count();
  const int device = nccl_device(local_rank, count.ok() ? *count : 0);
  const NcclPlacement me{.rank = host->rank(), .world_size = host->world_size(), .local_rank = local_rank,
                         .host = host_name(), .gpu = pci_bus_id(device)};
  const Status placed = check_one_rank_per_device(*host, me, count.ok() ? *count : 0);
  WEFT_ASSIGN_OR_RETURN(NcclUniqueIdBytes id_bytes, exchange_unique_id(*host, make_unique_id));
  if (!count.ok()) return count.error();
  WEFT_RETURN_IF_ERROR(placed);
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), "cudaSetDevice (local rank " + std::to_string(local_rank) +
                                                              ": CUDA device " + std::to_string(device) + ")"));
  std::shared_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->host_ = std::move(host);
  c->device_ = device;
  c->version_ = nccl_version();
  ncclUniqueId id;
  std::memcpy(id.internal, id_bytes.data(), id_bytes.size());
  WEFT_RETURN_IF_ERROR(nccl_status(ncclCommInitRank(&c->comm_, me.world_size, id, me.rank),
                                   "ncclCommInitRank (rank " + std::to_string(me.rank) + " of " +
                                       std::to_string(me.world_size) + ")"));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking),
                                 "cudaStreamCreateWithFlags (the communication stream)"));
  c->timeout_ = timeout;
  c->watchdog_ = std::make_unique<collective::Watchdog>(timeout, [comm = c->comm_] { abort_within(comm, kAbortLimit); });
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  watchdog_.reset();  // its thread may abort comm_: stopped first
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  if (comm_ != nullptr) {
    ncclCommFinalize(comm_);
    ncclCommDestroy(comm_);
  }
}

Status NcclCommunicator::all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction) {
  return host_->all_reduce(data, count, dtype, reduction);
}

StatusOr<std::unique_ptr<collective::PendingReduction>> NcclCommunicator::start_all_reduce(
    void* data, int64_t count, DType dtype, collective::Reduction reduction) {
  return host_->start_all_reduce(data, count, dtype, reduction);
}

Status NcclCommunicator::broadcast(void* data, int64_t bytes, int root) { return host_->broadcast(data, bytes, root); }

std::string NcclCommunicator::describe() const {
  return version_ + " rank " + std::to_string(rank()) + " of " + std::to_string(world_size()) + " on CUDA device " +
         std::to_string(device_) + " (bootstrap: " + host_->describe() + ")";
}

void NcclCommunicator::watch_step(int64_t bytes) {
  watchdog_->arm(step_timed_out(rank(), world_size(), bytes, timeout_));
}

void NcclCommunicator::end_step() { watchdog_->disarm(); }

Status NcclCommunicator::device_all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction,
                                           cudaStream_t stream) {
  WEFT_ASSIGN_OR_RETURN(ncclDataType_t type, nccl_data_type(dtype, reduction));
  const ncclRedOp_t op = reduction == collective::Reduction::mean ? ncclAvg : ncclSum;
  return nccl_status(ncclAllReduce(data, data, static_cast<size_t>(count), type, op, comm_, stream),
                     "ncclAllReduce (" + std::to_string(count) + " " + std::string(dtype_name(dtype)) + ")");
}

}  // namespace weft::cuda

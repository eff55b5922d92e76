#pragma once
// NCCL for data parallelism on GPUs (DESIGN.md, decision 11): one rank per GPU, the
// device being the rank's local rank (or device 0 where each process sees only its own
// GPU: nccl_bootstrap.h, nccl_device), the NCCL communicator started from a unique id
// that rank 0 makes and sends through the launcher's host communicator (mpi_world(), or
// Gloo's when launched torchrun-style: one bootstrap, nccl_bootstrap.h).
//
//   StatusOr<std::shared_ptr<Communicator>> host = collective::mpi_world();
//   StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
//       NcclCommunicator::create(*host, local_rank);   // every rank, collectively
//   // BindOptions::communicator = *nccl: the cuda backend reduces the step's
//   // gradients with ncclAllReduce on the communication stream (executor.h).
//
// It is a collective::Communicator, so the Trainer and CompiledModel pass it where they
// pass MPI's: all_reduce and broadcast of *host* memory (check_same_on_every_rank, the
// parameters sent from rank 0) go through the host communicator it was made from;
// device buffers go through device_all_reduce, on a stream.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"
#include "runtime/collective/watchdog.h"
#include "runtime/cuda/nccl_bootstrap.h"

namespace weft::cuda {

/// NCCL's type for `dtype` (f32, f64, f16, bf16, i32, i64, ...); error for a dtype NCCL
/// cannot reduce, or for the mean of an integer dtype.
StatusOr<ncclDataType_t> nccl_data_type(DType dtype, collective::Reduction reduction);

class NcclCommunicator : public collective::Communicator {
 public:
  /// Starts NCCL on every rank of `host` (each rank calls it): the device check
  /// (nccl_bootstrap.h, check_one_rank_per_device), the unique id from rank 0,
  /// ncclCommInitRank on the CUDA device of `local_rank` (nccl_device), and a
  /// communication stream there.
  /// `timeout` (--collective-timeout) bounds each step's device collectives (watch_step).
  /// Errors: no CUDA device, the placement refusals, NCCL's failure (its message).
  static StatusOr<std::shared_ptr<NcclCommunicator>> create(
      std::shared_ptr<collective::Communicator> host, int local_rank,
      std::chrono::milliseconds timeout = std::chrono::seconds(300));
  ~NcclCommunicator() override;

  int rank() const override { return host_->rank(); }
  int world_size() const override { return host_->world_size(); }
  /// Host memory, through the host communicator (see above).
  Status all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction) override;
  StatusOr<std::unique_ptr<collective::PendingReduction>> start_all_reduce(void* data, int64_t count, DType dtype,
                                                                           collective::Reduction reduction) override;
  Status broadcast(void* data, int64_t bytes, int root) override;
  /// "NCCL 2.28.9 rank 0 of 2 on CUDA device 0 (bootstrap: MPI rank 0 of 2 ...)".
  std::string describe() const override;

  /// Enqueues the in-place reduction of `count` elements of device memory at `data` on
  /// `stream` (ncclAvg for the mean, ncclSum for the sum); legal inside stream capture.
  Status device_all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction,
                           cudaStream_t stream);
  /// The watchdog of a step whose reductions (`bytes` in all) are in flight on the GPU,
  /// armed until end_step(): when the step has not finished after the timeout (a peer
  /// died or hangs, and NCCL's kernels wait for it), the process prints e.g. "error:
  /// rank 0 of 2 (NCCL), in all_reduce #1 of step 37 (1.1 MB): rank 1 did not answer
  /// within 300 s (it died or hangs); exiting", calls ncclCommAbort (given 10 s) and
  /// exits non-zero (collective::Watchdog, as MPI's ranks do). The executor's run()
  /// calls both.
  void watch_step(int64_t bytes);
  void end_step();
  /// The CUDA device this rank runs on (nccl_device: its local rank, or 0 where the
  /// process sees one GPU).
  int device() const { return device_; }
  /// The communication stream (non-blocking) on which the executor runs the step's
  /// reductions, beside its compute stream.
  cudaStream_t stream() const { return stream_; }

 private:
  NcclCommunicator() = default;
  std::shared_ptr<collective::Communicator> host_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::string version_;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<collective::Watchdog> watchdog_;  // made by create(), after comm_
};

}  // namespace weft::cuda

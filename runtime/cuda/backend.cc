// Registers the "cuda" backend (runtime/backend.h): a Program bound by cuda::Executor on
// device 0 (with NCCL: the communicator's device) with its default options (the whole
// step as one CUDA graph, host fallback refused). Its buffers are device memory, and it
// has no check-numerics or profiler: those hooks stay null; it reports the device memory
// in use. A communicator of more than one rank must be NCCL's (nccl_communicator.h), which
// rank_communicator makes from the launch's MPI or Gloo world (--data-parallel). Links
// cudart and cuBLAS only (never libcuda), so a binary with it starts on a machine without
// a GPU and says why it cannot bind.
#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/backend.h"

#include "runtime/ab_switch.h"
#include "runtime/backend.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/nccl_communicator.h"

namespace weft::cuda {
namespace {

// The NCCL communicator in `options` (null for one process); error for any other
// communicator of more than one rank (MPI's or Gloo's reduce host memory).
StatusOr<std::shared_ptr<NcclCommunicator>> nccl_of(const BindOptions& options) {
  std::shared_ptr<NcclCommunicator> nccl = std::dynamic_pointer_cast<NcclCommunicator>(options.communicator);
  if (nccl || !options.communicator || options.communicator->world_size() <= 1) return nccl;
  return Error{"the cuda backend reduces the gradients of " + std::to_string(options.communicator->world_size()) +
               " ranks with NCCL, but was given " + options.communicator->describe() +
               ": ask the backend for it (Backend::communicator_for, runtime/backend.h)"};
}

// The calling thread's CUDA device: the local rank's once NCCL's communicator was made
// (it sets it), so that executors bound without the communicator (the evaluation's) run
// on the rank's GPU too; 0 when the runtime cannot say (bind then reports why).
int current_device() {
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) return device;
  cudaGetLastError();
  return 0;
}

}  // namespace

StatusOr<ExecutorOptions> executor_options(const BindOptions& options, const Program& program) {
  ExecutorOptions executor;
  WEFT_ASSIGN_OR_RETURN(executor.nccl, nccl_of(options));
  executor.device = executor.nccl ? executor.nccl->device() : current_device();
  executor.all_reduce_bucket_bytes = options.all_reduce_bucket_bytes;
  executor.first_all_reduce_bucket_bytes = options.first_all_reduce_bucket_bytes;
  executor.max_memory = options.max_memory;
  executor.tf32 = options.tf32;
  executor.input_prefetch = options.input_prefetch && !switched_off("WEFT_INPUT_PREFETCH");
  if (options.accumulate_steps > 1) {
    executor.accumulation.steps = options.accumulate_steps;
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      if (program.inputs[i].name == options.step_input) executor.accumulation.step_input = static_cast<int>(i);
    }
  }
  return executor;
}

namespace {

// Data parallelism: NCCL on the GPU of `local_rank`, started over the launch's `host`
// communicator (Backend::rank_communicator); an NCCL communicator stays as it is.
StatusOr<std::shared_ptr<collective::Communicator>> rank_communicator(std::shared_ptr<collective::Communicator> host,
                                                                      int local_rank,
                                                                      std::chrono::milliseconds timeout) {
  if (std::dynamic_pointer_cast<NcclCommunicator>(host)) return host;
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<NcclCommunicator> nccl,
                        NcclCommunicator::create(std::move(host), local_rank, timeout));
  return std::shared_ptr<collective::Communicator>(std::move(nccl));
}

StatusOr<std::unique_ptr<ProgramExecutor>> bind(Program program, DeviceCode code,
                                                 const BindOptions& options) {
  WEFT_ASSIGN_OR_RETURN(ExecutorOptions executor, executor_options(options, program));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                        Executor::create(std::move(program), std::move(code.module),
                                         std::move(code.symbols), executor));
  return std::unique_ptr<ProgramExecutor>(std::move(ex));
}

/// Device memory in use (every process's, as nvidia-smi shows it), in MiB; 0 when the
/// query fails.
double device_memory_used_mib() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return static_cast<double>(total - free) / (1 << 20);
}

Status pin_host_memory(void* data, int64_t bytes) {
  const cudaError_t e = cudaHostRegister(data, static_cast<size_t>(bytes), cudaHostRegisterDefault);
  if (e == cudaSuccess) return Status();
  cudaGetLastError();  // Clear the error, so that it does not surface at a later call.
  return Error{"cudaHostRegister of " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(e)};
}

void unpin_host_memory(void* data) {
  if (cudaHostUnregister(data) != cudaSuccess) cudaGetLastError();
}

const bool registered = register_backend({
    .name = "cuda",
    .bind = bind,
    .unavailable_reason = unavailable_reason,
    .check_program = check_device_only,
    .device_memory_used_mib = device_memory_used_mib,
    .pin_host_memory = pin_host_memory,
    .unpin_host_memory = unpin_host_memory,
    .multi_rank = true,
    .rank_communicator = rank_communicator,
});

}  // namespace
}  // namespace weft::cuda

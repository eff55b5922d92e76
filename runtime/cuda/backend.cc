// Registers the "cuda" backend (runtime/backend.h): a Program bound by cuda::Executor on
// device 0 with its default options (the whole step as one CUDA graph, host fallback
// refused). Its buffers are device memory, and it has no check-numerics, profiler or
// collectives yet: those hooks stay null; it reports the device memory in use. Links cudart and cuBLAS only (never libcuda),
// so a binary with it starts on a machine without a GPU and says why it cannot bind.
#include <cuda_runtime.h>

#include "runtime/backend.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/library.h"

namespace weft::cuda {
namespace {

StatusOr<std::unique_ptr<ProgramExecutor>> bind(Program program, DeviceCode code,
                                                 const BindOptions& options) {
  if (options.communicator && options.communicator->world_size() > 1) {
    return Error{"data parallelism over " + std::to_string(options.communicator->world_size()) +
                 " ranks needs the cpu backend; the cuda backend runs one process (no NCCL yet)"};
  }
  ExecutorOptions executor;
  executor.max_memory = options.max_memory;
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
});

}  // namespace
}  // namespace weft::cuda

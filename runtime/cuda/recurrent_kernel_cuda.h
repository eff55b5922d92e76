#pragma once
// The persistent loop kernel's own queries of the CUDA runtime, defined beside the kernel
// in recurrent_kernel.cu (they name its function) and used by plan_recurrent_launch
// (recurrent_kernel.cc). Not for other callers.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weft::cuda {

/// cudaOccupancyMaxActiveBlocksPerMultiprocessor of the kernel at kRecurrentThreads
/// threads and `shared_bytes` of dynamic shared memory, on the current device.
cudaError_t recurrent_kernel_occupancy(uint64_t shared_bytes, int* blocks_per_multiprocessor);

/// Lets the kernel launch with up to `bytes` of dynamic shared memory on the current
/// device (cudaFuncAttributeMaxDynamicSharedMemorySize; above 48 KiB needs it).
cudaError_t allow_recurrent_shared_bytes(uint64_t bytes);

}  // namespace weft::cuda

// The persistent loop kernel's launch (issue #31); the kernel is in
// recurrent_kernel_device.inc, which says how it works.

#include <cuda_runtime.h>

#include "runtime/cuda/recurrent_kernel.h"
#include "runtime/cuda/recurrent_kernel_cuda.h"
#include "runtime/cuda/recurrent_kernel_device.inc"

namespace weft::cuda {

cudaError_t launch_recurrent(const RecurrentProgramView& device_program, void* barrier,
                             const RecurrentLaunch& launch, cudaStream_t stream) {
  if (launch.blocks < 1 || launch.threads < 32 || launch.threads > kRecurrentThreads || launch.threads % 32 != 0) {
    return cudaErrorInvalidValue;
  }
  if (device_program.length == 0 || device_program.phase_count == 0) return cudaSuccess;
  if (device_program.placements == nullptr || device_program.placed_blocks != launch.blocks ||
      device_program.placed_shared_bytes != launch.shared_bytes) {
    return cudaErrorInvalidValue;  // no table, or one worked out for another launch
  }
  cudaLaunchAttribute cooperative;
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(launch.blocks));
  config.blockDim = dim3(static_cast<unsigned>(launch.threads));
  config.dynamicSmemBytes = launch.shared_bytes;
  config.stream = stream;
  config.attrs = &cooperative;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, recurrent_loop, device_program, static_cast<unsigned*>(barrier),
                            launch.tensor_cores);
}

size_t recurrent_barrier_bytes() { return sizeof(unsigned); }

cudaError_t recurrent_kernel_occupancy(uint64_t shared_bytes, int* blocks_per_multiprocessor) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_multiprocessor, recurrent_loop,
                                                       kRecurrentThreads, shared_bytes);
}

cudaError_t allow_recurrent_shared_bytes(uint64_t bytes) {
  return cudaFuncSetAttribute(recurrent_loop, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

}  // namespace weft::cuda

// plan_recurrent_launch: the device's limits, asked of the CUDA runtime, handed to
// choose_recurrent_launch (recurrent_kernel_layout.h), which decides.

#include <string>

#include "runtime/cuda/recurrent_kernel.h"
#include "runtime/cuda/recurrent_kernel_cuda.h"
#include "runtime/cuda/recurrent_reference.h"

namespace weft::cuda {
namespace {

// Also clears the thread's last error, as cuda_status does (executor.cc): a refused plan
// falls back to the per-trip loop, and a later launch's check (cudaGetLastError) would
// otherwise report this error against an innocent kernel.
Error cuda_failure(const char* call, cudaError_t e) {
  cudaGetLastError();
  return Error(std::string("persistent loop kernel: ") + call + " failed: " + cudaGetErrorString(e));
}

}  // namespace

StatusOr<RecurrentLaunch> plan_recurrent_launch(const RecurrentProgramView& program, int device) {
  if (Status s = check_recurrent_program(program); !s.ok()) return s;
  int previous = 0;
  if (cudaError_t e = cudaGetDevice(&previous); e != cudaSuccess) return cuda_failure("cudaGetDevice", e);
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return cuda_failure("cudaSetDevice", e);
  RecurrentDeviceLimits limits;
  int cooperative = 0, optin = 0, major = 0, minor = 0;
  cudaError_t e = cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&limits.multiprocessors, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e == cudaSuccess) e = allow_recurrent_shared_bytes(static_cast<uint64_t>(optin));
  if (e != cudaSuccess) {
    cudaSetDevice(previous);
    return cuda_failure("querying the device", e);
  }
  limits.cooperative = cooperative != 0;
  limits.compute_capability = major * 10 + minor;
  limits.shared_per_block = static_cast<uint64_t>(optin);
  cudaError_t occupancy_error = cudaSuccess;
  limits.blocks_per_multiprocessor = [&](uint64_t shared_bytes) {
    int blocks = 0;
    if (cudaError_t failed = recurrent_kernel_occupancy(shared_bytes, &blocks); failed != cudaSuccess) {
      occupancy_error = failed;
      return 0;
    }
    return blocks;
  };
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program, limits);
  cudaSetDevice(previous);
  if (occupancy_error != cudaSuccess) return cuda_failure("cudaOccupancyMaxActiveBlocksPerMultiprocessor", occupancy_error);
  return launch;
}

}  // namespace weft::cuda

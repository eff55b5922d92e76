// The pooling kernels (pool.h): a grid-stride loop over the result's elements on
// 256-thread blocks, each element pool_kernels.h's function.

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/pool.h"
#include "runtime/cuda/pool_kernels.h"

namespace weft::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void pool_kernel(PoolOp op, PoolWindow g, const T* a, const T* b, T* out,
                            int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += stride) {
    out[e] = pool_element(op, g, a, b, e);
  }
}

}  // namespace

cudaError_t launch_pool(PoolOp op, bool f64, const PoolWindow& window, const void* a,
                        const void* b, void* out, cudaStream_t stream) {
  const int64_t count = pool_result_count(window, op);
  if (count == 0) return cudaSuccess;
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted > 65535 ? 65535 : wanted);
  if (f64) {
    pool_kernel<double><<<blocks, kThreads, 0, stream>>>(
        op, window, static_cast<const double*>(a), static_cast<const double*>(b),
        static_cast<double*>(out), count);
  } else {
    pool_kernel<float><<<blocks, kThreads, 0, stream>>>(
        op, window, static_cast<const float*>(a), static_cast<const float*>(b),
        static_cast<float*>(out), count);
  }
  return cudaGetLastError();
}

}  // namespace weft::cuda

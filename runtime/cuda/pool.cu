// The pooling kernels' launches (pool.h), on 256-thread blocks; the kernels are in
// pool_device.inc.

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/pool.h"
#include "runtime/cuda/pool_device.inc"

namespace weft::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(wanted > 65535 ? 65535 : wanted);
}

// max_pool2d_backward over disjoint windows: zero the result, then scatter.
template <typename T>
cudaError_t max_pool_backward_scatter_launch(const PoolWindow& g, const void* x, const void* gy,
                                             void* out, cudaStream_t stream) {
  const int64_t windows = g.planes * g.oh * g.ow;
  const cudaError_t cleared = cudaMemsetAsync(
      out, 0, static_cast<size_t>(pool_result_count(g, kMaxPoolBackward)) * sizeof(T), stream);
  if (cleared != cudaSuccess || windows == 0) return cleared;
  max_pool_backward_scatter_kernel<T><<<blocks_for(windows), kThreads, 0, stream>>>(
      g, static_cast<const T*>(x), static_cast<const T*>(gy), static_cast<T*>(out), windows);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_pool(PoolOp op, bool f64, const PoolWindow& window, const void* a,
                        const void* b, void* out, cudaStream_t stream) {
  const int64_t count = pool_result_count(window, op);
  if (count == 0) return cudaSuccess;
  if (op == kMaxPoolBackward && pool_windows_disjoint(window)) {
    return f64 ? max_pool_backward_scatter_launch<double>(window, a, b, out, stream)
               : max_pool_backward_scatter_launch<float>(window, a, b, out, stream);
  }
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

cudaError_t launch_pool_half(PoolOp op, bool bf16, const PoolWindow& window, const void* a,
                             const void* b, void* out, void* workspace, cudaStream_t stream) {
  const PoolOperandCounts n = pool_operand_counts(window, op);
  const int64_t count = pool_result_count(window, op);
  if (count == 0) return cudaSuccess;
  float* a32 = static_cast<float*>(workspace);
  float* b32 = a32 + n.a;
  float* out32 = b32 + n.b;
  const auto widen = [&](const void* h, float* f, int64_t elements) {
    if (elements == 0) return cudaSuccess;
    widen_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(static_cast<const uint16_t*>(h),
                                                                f, elements, bf16);
    return cudaGetLastError();
  };
  cudaError_t e = widen(a, a32, n.a);
  if (e == cudaSuccess && b != nullptr) e = widen(b, b32, n.b);
  if (e == cudaSuccess) e = launch_pool(op, /*f64=*/false, window, a32, b ? b32 : nullptr, out32, stream);
  if (e != cudaSuccess) return e;
  narrow_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out32, static_cast<uint16_t*>(out),
                                                            count, bf16);
  return cudaGetLastError();
}

}  // namespace weft::cuda

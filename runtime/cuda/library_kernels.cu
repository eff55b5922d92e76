// The CUDA library kernels' launches (library_kernels.h); the kernels are in
// library_kernels_device.inc.

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/library_kernels.h"
#include "runtime/cuda/library_kernels_device.inc"

namespace weft::cuda {
namespace {

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

// Calls f(Word<esize>::T{}) for the element size.
template <typename F>
cudaError_t by_size(int esize, F&& f) {
  switch (esize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
  }
  return cudaErrorInvalidValue;
}

// Calls f(T{}) for the value type: float, double (by_float), and int32_t, int64_t too
// (by_value).
template <typename F>
cudaError_t by_float(ValueType type, F&& f) {
  return type == kF64 ? f(double{}) : f(float{});
}
template <typename F>
cudaError_t by_value(ValueType type, F&& f) {
  switch (type) {
    case kI32: return f(int32_t{});
    case kI64: return f(int64_t{});
    default: return by_float(type, f);
  }
}

}  // namespace

cudaError_t launch_strided_copy(const void* in, void* out, const StridedMap& map, int esize,
                                uint64_t fill, cudaStream_t stream) {
  if (map.count == 0) return cudaSuccess;
  return by_size(esize, [&](auto w) {
    using W = decltype(w);
    strided_copy<W><<<blocks_for(map.count), kThreads, 0, stream>>>(
        static_cast<const W*>(in), static_cast<W*>(out), map, static_cast<W>(fill));
    return cudaGetLastError();
  });
}

cudaError_t launch_gather(const void* x, const void* idx, IndexType idx_type, void* out,
                          const GatherGeometry& g, int esize, DeviceError* error,
                          int invocation, cudaStream_t stream) {
  const int64_t count = g.outer * g.n * g.inner;
  if (count == 0) return cudaSuccess;
  return by_size(esize, [&](auto w) {
    using W = decltype(w);
    gather<W><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const W*>(x), idx, idx_type, static_cast<W*>(out), g, error, invocation);
    return cudaGetLastError();
  });
}

cudaError_t launch_scatter_add(const void* idx, IndexType idx_type, const void* src, void* out,
                               const GatherGeometry& g, ValueType type, DeviceError* error,
                               int invocation, cudaStream_t stream) {
  const int64_t count = g.outer * g.n * g.inner;
  if (count == 0) return cudaSuccess;
  return by_value(type, [&](auto v) {
    using T = decltype(v);
    scatter_add<T><<<blocks_for(count), kThreads, 0, stream>>>(
        idx, idx_type, static_cast<const T*>(src), static_cast<T*>(out), g, error, invocation);
    return cudaGetLastError();
  });
}

cudaError_t launch_one_hot(const void* idx, IndexType idx_type, int64_t n, int64_t depth,
                           void* out, int esize, uint64_t one, cudaStream_t stream) {
  const cudaError_t cleared =
      cudaMemsetAsync(out, 0, static_cast<size_t>(n * depth * esize), stream);
  if (cleared != cudaSuccess || n == 0) return cleared;
  return by_size(esize, [&](auto w) {
    using W = decltype(w);
    one_hot<W><<<blocks_for(n), kThreads, 0, stream>>>(idx, idx_type, n, depth,
                                                       static_cast<W*>(out), static_cast<W>(one));
    return cudaGetLastError();
  });
}

cudaError_t launch_cross_entropy(const void* logits, ValueType type, const void* labels,
                                 IndexType label_type, int64_t n, int64_t c, int mode,
                                 double* row_loss, void* out, DeviceError* error,
                                 int invocation, cudaStream_t stream) {
  const double scale = mode == 0 ? 1.0 / static_cast<double>(n) : 1.0;
  return by_float(type, [&](auto v) {
    using T = decltype(v);
    cross_entropy_rows<T><<<blocks_for(n * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(logits), labels, label_type, n, c, row_loss,
        mode == 2 ? static_cast<T*>(out) : nullptr, error, invocation);
    if (mode != 2) sum_doubles<T><<<1, kThreads, 0, stream>>>(row_loss, n, scale, static_cast<T*>(out));
    return cudaGetLastError();
  });
}

cudaError_t launch_mse(const void* a, const void* b, ValueType type, int64_t count, int mode,
                       double* partial, void* out, cudaStream_t stream) {
  const int64_t want = (count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 1 ? 1 : want > kMseBlocks ? kMseBlocks : want);
  const double scale = mode == 0 ? 1.0 / static_cast<double>(count) : 1.0;
  return by_float(type, [&](auto v) {
    using T = decltype(v);
    squared_error<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), count, mode == 2 ? nullptr : partial,
        mode == 2 ? static_cast<T*>(out) : nullptr);
    if (mode != 2) sum_doubles<T><<<1, kThreads, 0, stream>>>(partial, blocks, scale, static_cast<T*>(out));
    return cudaGetLastError();
  });
}

cudaError_t launch_elementwise(ElementwiseOp op, ValueType type, const void* a,
                               const StridedMap& a_map, const void* b, const StridedMap& b_map,
                               void* out, int64_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return by_float(type, [&](auto v) {
    using T = decltype(v);
    elementwise<T><<<blocks_for(count), kThreads, 0, stream>>>(
        op, static_cast<const T*>(a), a_map, static_cast<const T*>(b), b_map, static_cast<T*>(out),
        count);
    return cudaGetLastError();
  });
}

cudaError_t launch_random(bool bernoulli, ValueType type, const int64_t* key, void* out,
                          int64_t count, double p, int esize, uint64_t one,
                          cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (bernoulli) {
    return by_size(esize, [&](auto w) {
      using W = decltype(w);
      random_bernoulli<W><<<blocks_for(count), kThreads, 0, stream>>>(
          key, static_cast<W*>(out), count, p, static_cast<W>(one));
      return cudaGetLastError();
    });
  }
  return by_float(type, [&](auto v) {
    using T = decltype(v);
    random_uniform<T><<<blocks_for(count), kThreads, 0, stream>>>(key, static_cast<T*>(out), count);
    return cudaGetLastError();
  });
}

}  // namespace weft::cuda

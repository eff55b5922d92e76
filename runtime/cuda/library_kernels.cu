// The CUDA library kernels (library_kernels.h). Element loops are grid-stride over
// 256-thread blocks; the index arithmetic is index_maps.h's, shared with the host tests.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/index_maps.h"
#include "runtime/cuda/library_kernels.h"
#include "runtime/philox.h"

namespace weft::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The first error of the step wins; later ones are dropped.
__device__ void report(DeviceError* error, int invocation, int32_t code, int64_t value,
                       int64_t position) {
  if (atomicCAS(&error->code, 0, code) == 0) {
    error->invocation = invocation;
    error->value = value;
    error->position = position;
  }
}

// An element of `Bytes` bytes, copied as one word.
template <int Bytes> struct Word;
template <> struct Word<1> { using T = uint8_t; };
template <> struct Word<2> { using T = uint16_t; };
template <> struct Word<4> { using T = uint32_t; };
template <> struct Word<8> { using T = uint64_t; };

template <typename W>
__global__ void strided_copy(const W* in, W* out, StridedMap map, W fill) {
  for (int64_t e = first_index(); e < map.count; e += grid_stride()) {
    int64_t o = 0;
    const int64_t i = map_element(map, e, o);
    out[o] = i < 0 ? fill : in[i];
  }
}

template <typename W>
__global__ void gather(const W* x, const void* idx, IndexType it, W* out, GatherGeometry g,
                       DeviceError* error, int invocation) {
  const int64_t count = g.outer * g.n * g.inner;
  for (int64_t e = first_index(); e < count; e += grid_stride()) {
    const int64_t j = gather_position(g, e);
    const int64_t i = index_at(idx, it, j);
    if (i < 0 || i >= g.dim) {
      report(error, invocation, kIndexOutOfRange, i, j);
      out[e] = W(0);
      continue;
    }
    out[e] = x[gather_other(g, e, i)];
  }
}

template <typename T>
__device__ void atomic_add(T* at, T v) {
  if constexpr (sizeof(T) == 8 && !std::is_floating_point_v<T>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(at, v);
  }
}

template <typename T>
__global__ void scatter_add(const void* idx, IndexType it, const T* src, T* out, GatherGeometry g,
                            DeviceError* error, int invocation) {
  const int64_t count = g.outer * g.n * g.inner;
  for (int64_t e = first_index(); e < count; e += grid_stride()) {
    const int64_t j = gather_position(g, e);
    const int64_t i = index_at(idx, it, j);
    if (i < 0 || i >= g.dim) {
      report(error, invocation, kIndexOutOfRange, i, j);
      continue;
    }
    atomic_add(out + gather_other(g, e, i), src[e]);
  }
}

template <typename W>
__global__ void one_hot(const void* idx, IndexType it, int64_t n, int64_t depth, W* out, W one) {
  for (int64_t j = first_index(); j < n; j += grid_stride()) {
    const int64_t i = index_at(idx, it, j);
    if (i >= 0 && i < depth) out[j * depth + i] = one;
  }
}

__device__ inline double warp_max(double v) {
  for (int s = 16; s > 0; s /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, s));
  return v;
}
__device__ inline double warp_sum(double v) {
  for (int s = 16; s > 0; s /= 2) v += __shfl_xor_sync(0xffffffffu, v, s);
  return v;
}

// 16 bytes of T, loaded at once (ld.global.v4.f32 / v2.f64).
template <typename T> struct Vec16;
template <> struct Vec16<float> {
  using V = float4;
  static constexpr int kElements = 4;
};
template <> struct Vec16<double> {
  using V = double2;
  static constexpr int kElements = 2;
};

// Calls f(x) (as double) for this lane's share of the row's c elements (lane_share,
// index_maps.h): 16 bytes per load after a scalar head up to the row's first 16-byte
// boundary, and a scalar tail. A lane's elements, hence the order its partial sum adds
// them in, differ from one element per lane (elements l, l + 32, ...).
template <typename T, typename F>
__device__ inline void for_lane_share(const T* row, int64_t c, int lane, F&& f) {
  using V = typename Vec16<T>::V;
  lane_share(reinterpret_cast<uintptr_t>(row), c, sizeof(T), lane,
             [&](int64_t j) { f(static_cast<double>(row[j])); },
             [&](int64_t j) {
               const V x = *reinterpret_cast<const V*>(row + j);
               if constexpr (Vec16<T>::kElements == 4) {
                 f(static_cast<double>(x.x));
                 f(static_cast<double>(x.y));
                 f(static_cast<double>(x.z));
                 f(static_cast<double>(x.w));
               } else {
                 f(static_cast<double>(x.x));
                 f(static_cast<double>(x.y));
               }
             });
}

// One warp per row: the maximum, the sum of exponentials (each read 16 bytes at a time,
// for_lane_share), then the loss of the label.
template <typename T>
__global__ void cross_entropy_rows(const T* logits, const void* labels, IndexType lt, int64_t n,
                                   int64_t c, double* row_loss, T* out_none,
                                   DeviceError* error, int invocation) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = first_index() / 32; r < n; r += warps) {
    const T* row = logits + r * c;
    double m = -INFINITY;
    for_lane_share(row, c, lane, [&](double x) { m = fmax(m, x); });
    m = warp_max(m);
    double sum = 0;
    for_lane_share(row, c, lane, [&](double x) { sum += exp(x - m); });
    sum = warp_sum(sum);
    if (lane == 0) {
      const int64_t label = index_at(labels, lt, r);
      double loss = 0;
      if (label < 0 || label >= c) {
        report(error, invocation, kLabelOutOfRange, label, r);
      } else {
        loss = m + log(sum) - static_cast<double>(row[label]);
      }
      row_loss[r] = loss;
      if (out_none != nullptr) out_none[r] = static_cast<T>(loss);
    }
  }
}

// The sum of a block's threads' values, in a fixed order (a tree over shared memory);
// valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double part[kThreads];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  return part[0];
}

// One block adds n doubles (rows' losses, blocks' partial sums): each thread a strided
// share in order, then a tree; out[0] = the sum times `scale`.
template <typename T>
__global__ void sum_doubles(const double* values, int64_t n, double scale, T* out) {
  double s = 0;
  for (int64_t r = threadIdx.x; r < n; r += kThreads) s += values[r];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<T>(s * scale);
}

template <typename T>
__global__ void squared_error(const T* a, const T* b, int64_t n, double* partial, T* out_none) {
  double s = 0;
  for (int64_t e = first_index(); e < n; e += grid_stride()) {
    const double d = static_cast<double>(a[e]) - static_cast<double>(b[e]);
    if (out_none != nullptr) out_none[e] = static_cast<T>(d * d);
    s += d * d;
  }
  s = block_sum(s);
  if (threadIdx.x == 0 && partial != nullptr) partial[blockIdx.x] = s;
}

template <typename T>
__device__ T apply(ElementwiseOp op, T a, T b) {
  switch (op) {
    case kPow: return pow(a, b);
    case kExp: return exp(a);
    case kLog: return log(a);
    case kLog1p: return log1p(a);
    case kTanh: return tanh(a);
    case kSin: return sin(a);
    case kCos: return cos(a);
    case kErf: return erf(a);
    case kSigmoid: return T(1) / (T(1) + exp(-a));
  }
  return a;
}

template <typename T>
__global__ void elementwise(ElementwiseOp op, const T* a, StridedMap am, const T* b,
                            StridedMap bm, T* out, int64_t count) {
  for (int64_t e = first_index(); e < count; e += grid_stride()) {
    int64_t o = 0;
    const T x = a[map_element(am, e, o)];
    const T y = b != nullptr ? b[map_element(bm, e, o)] : T(0);
    out[e] = apply(op, x, y);
  }
}

template <typename T>
__global__ void random_uniform(const int64_t* key, T* out, int64_t count) {
  const int64_t seed = key[0], offset = key[1];
  for (int64_t e = first_index(); e < count; e += grid_stride()) {
    const philox::Block b = philox::element_block(seed, offset, static_cast<uint64_t>(e));
    if constexpr (sizeof(T) == 8) {
      out[e] = philox::uniform_f64(b);
    } else {
      out[e] = philox::uniform_f32(b);
    }
  }
}

template <typename W>
__global__ void random_bernoulli(const int64_t* key, W* out, int64_t count, double p, W one) {
  const int64_t seed = key[0], offset = key[1];
  for (int64_t e = first_index(); e < count; e += grid_stride()) {
    const philox::Block b = philox::element_block(seed, offset, static_cast<uint64_t>(e));
    out[e] = static_cast<double>(philox::uniform_f32(b)) < p ? one : W(0);  // as the reference
  }
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

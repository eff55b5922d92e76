// Composite kernels: softmax, log_softmax, layer_norm, cross_entropy and mse, for f32
// and f64 — the fused reductions of a training step. Rows are split over the pool; each
// row is read once for its maximum (or mean), once for the exponentials (or variance)
// and once to write, while it is in L1. Inner loops are vectorizable: f32 exponentials
// use `exp_f32` (a polynomial the compiler can vectorize, about 1 ulp) and sums run in
// 16 independent f64 lanes. A row whose maximum is not finite goes through the
// reference's formula in f64 instead, so infinities and NaNs come out as the reference's.

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {
namespace {

constexpr int64_t kGrainElements = 16384;
constexpr int kLanes = 16;

/// e^x for x <= 88 (softmax only takes x <= 0): 2^n · p(r) with n = round(x·log2 e) and
/// Cephes' degree-6 polynomial for e^r on |r| <= ln2 / 2. Below -87.3 it returns
/// 2^-126 · e^(-0.03...) instead of a subnormal or 0. NaN gives NaN.
inline float exp_f32(float x) {
  x = x < -87.3365f ? -87.3365f : x;
  x = x > 88.0f ? 88.0f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer.
  const float shifted = x * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  const float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t e = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
  return p * std::bit_cast<float>((e + 127) << 23);
}

template <typename T>
inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}

// The maximum of a row, ignoring NaNs as the reference's std::max does.
template <typename T>
T row_max(const T* p, int64_t n) {
  T lanes[kLanes];
  for (int k = 0; k < kLanes; ++k) lanes[k] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] = p[i + k] > lanes[k] ? p[i + k] : lanes[k];
  }
  T m = -std::numeric_limits<T>::infinity();
  for (int k = 0; k < kLanes; ++k) m = lanes[k] > m ? lanes[k] : m;
  for (; i < n; ++i) m = p[i] > m ? p[i] : m;
  return m;
}

// Σ exp(p[i] - m) in f64 lanes; when `store`, e^(p[i] - m) is also written to out[i].
// The exponentials are computed 256 at a time into a buffer (or `out`) and summed from
// there: two simple loops the compiler vectorizes, where one fused loop it does not.
template <typename T, bool kStore>
double exp_sum(const T* p, T m, int64_t n, T* out) {
  constexpr int64_t kChunk = 256;
  double lanes[kLanes] = {};
  T buffer[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t w = std::min(kChunk, n - i0);
    T* e = kStore ? out + i0 : buffer;
    for (int64_t i = 0; i < w; ++i) e[i] = exp_of<T>(p[i0 + i] - m);
    int64_t i = 0;
    for (; i + kLanes <= w; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) lanes[k] += static_cast<double>(e[i + k]);
    }
    for (; i < w; ++i) lanes[i % kLanes] += static_cast<double>(e[i]);
  }
  double s = 0;
  for (int k = 0; k < kLanes; ++k) s += lanes[k];
  return s;
}

// softmax / log_softmax of one row of n elements `stride` apart, as the reference.
template <typename T, bool kLog>
void softmax_row_reference(const T* src, T* dst, int64_t n, int64_t stride) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, src[j * stride]);
  if (std::isinf(m)) m = 0;
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(src[j * stride] - m));
  for (int64_t j = 0; j < n; ++j) {
    const double z = static_cast<double>(src[j * stride] - m);
    dst[j * stride] = static_cast<T>(kLog ? z - std::log(sum) : std::exp(z) / sum);
  }
}

template <typename T, bool kLog>
void softmax_row(const T* src, T* dst, int64_t n) {
  const T m = row_max(src, n);
  if (!std::isfinite(m)) return softmax_row_reference<T, kLog>(src, dst, n, 1);
  if constexpr (kLog) {
    const T log_sum = static_cast<T>(std::log(exp_sum<T, false>(src, m, n, nullptr)));
    for (int64_t i = 0; i < n; ++i) dst[i] = (src[i] - m) - log_sum;
  } else {
    const T inv = static_cast<T>(1.0 / exp_sum<T, true>(src, m, n, dst));
    for (int64_t i = 0; i < n; ++i) dst[i] *= inv;
  }
}

template <typename T, bool kLog>
KernelOr make_softmax(const LibraryCall& call, const T* x, T* y) {
  const Shape& shape = call.operand_types[0].shape;
  const int axis = normalize_axis(call.node.int_attr("axis"), shape.rank());
  if (axis < 0) return std::unique_ptr<BoundKernel>();
  const int64_t n = shape.dims[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape.dims[d];
  for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape.dims[d];
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(n, 1));
  return make_fn_kernel(std::string(op_name(call.node.op)) + " " + shape.to_string(),
                        [=](ThreadPool& pool) -> Status {
    if (inner == 1) {
      pool.parallel_for(outer, grain, [=](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) softmax_row<T, kLog>(x + o * n, y + o * n, n);
      });
    } else {  // Not the last axis: strided rows, the reference's formula.
      pool.parallel_for(outer * inner, grain, [=](int64_t begin, int64_t end) {
        for (int64_t u = begin; u < end; ++u) {
          const int64_t off = (u / inner) * n * inner + u % inner;
          softmax_row_reference<T, kLog>(x + off, y + off, n, inner);
        }
      });
    }
    return Status::ok_status();
  });
}

// Σ p[i] and Σ (p[i] - mean)² in f64 lanes.
template <typename T>
double lane_sum(const T* p, int64_t n, double center, bool squares) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  auto term = [&](T v) {
    const double d = static_cast<double>(v) - center;
    return squares ? d * d : d;
  };
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] += term(p[i + k]);
  }
  double s = 0;
  for (int k = 0; k < kLanes; ++k) s += lanes[k];
  for (; i < n; ++i) s += term(p[i]);
  return s;
}

template <typename T>
KernelOr make_layer_norm(const LibraryCall& call, const std::vector<const void*>& in, T* y) {
  const Type& xt = call.operand_types[0];
  const IntList& axes = call.node.ints_attr("axes");
  const int k = static_cast<int>(axes.size()), rank = xt.shape.rank();
  if (k < 1 || k > rank) return std::unique_ptr<BoundKernel>();
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    const int axis = normalize_axis(a, rank);
    if (axis < rank - k || seen[axis]) return std::unique_ptr<BoundKernel>();  // Reference's error.
    seen[axis] = true;
  }
  const Type param{xt.dtype, Shape(std::vector<int64_t>(xt.shape.dims.end() - k, xt.shape.dims.end()))};
  if (call.operand_types[1] != param || call.operand_types[2] != param) {
    return std::unique_ptr<BoundKernel>();
  }
  const int64_t size = param.numel(), rows = size == 0 ? 0 : xt.numel() / size;
  const double eps = call.node.float_attr("eps");
  const T* x = static_cast<const T*>(in[0]);
  const T* g = static_cast<const T*>(in[1]);
  const T* b = static_cast<const T*>(in[2]);
  return make_fn_kernel("layer_norm " + xt.to_string(), [=](ThreadPool& pool) -> Status {
    pool.parallel_for(rows, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(size, 1)),
                      [=](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* src = x + r * size;
        T* dst = y + r * size;
        const double mean = lane_sum(src, size, 0.0, false) / static_cast<double>(size);
        const double var = lane_sum(src, size, mean, true) / static_cast<double>(size);
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < size; ++i) {
          dst[i] = static_cast<T>((static_cast<double>(src[i]) - mean) * inv * g[i] + b[i]);
        }
      }
    });
    return Status::ok_status();
  });
}

// 0 mean, 1 sum, 2 none; -1 for anything else (the reference reports it).
int reduction_mode(const LibraryCall& call) {
  const std::string& r = call.node.str_attr("reduction");
  return r == "mean" ? 0 : r == "sum" ? 1 : r == "none" ? 2 : -1;
}

// -log_softmax(row)[label], in f64 from an f64 exponential sum.
template <typename T>
double row_loss(const T* row, int64_t c, int64_t label) {
  const T m = row_max(row, c);
  if (!std::isfinite(m)) {  // The reference's formula, exactly.
    double md = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < c; ++j) md = std::max(md, static_cast<double>(row[j]));
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(row[j] - md);
    return md + std::log(sum) - row[label];
  }
  return static_cast<double>(m) + std::log(exp_sum<T, false>(row, m, c, nullptr)) -
         static_cast<double>(row[label]);
}

template <typename T>
KernelOr make_cross_entropy(const LibraryCall& call, const std::vector<const void*>& in, T* y) {
  const Type& lt = call.operand_types[0];
  const Type& labels_type = call.operand_types[1];
  const int mode = reduction_mode(call);
  if (lt.shape.rank() != 2 || labels_type.shape != Shape{lt.shape.dims[0]} || mode < 0 ||
      (labels_type.dtype != DType::i64 && labels_type.dtype != DType::i32)) {
    return std::unique_ptr<BoundKernel>();
  }
  const int64_t n = lt.shape.dims[0], c = lt.shape.dims[1];
  const bool is_i64 = labels_type.dtype == DType::i64;
  const T* x = static_cast<const T*>(in[0]);
  const void* labels = in[1];
  const LibraryCall bound = call;
  return make_fn_kernel("cross_entropy " + lt.to_string(), [=](ThreadPool& pool) -> Status {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t label = index_at(labels, is_i64, i);
      if (label < 0 || label >= c) {
        return call_error(bound, "label " + std::to_string(label) + " at position " +
                                     std::to_string(i) + " is out of range for " +
                                     std::to_string(c) + " classes");
      }
    }
    const double total = pool.parallel_reduce(
        n, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(c, 1)), 0.0,
        [=](int64_t begin, int64_t end) {
          double s = 0;
          for (int64_t i = begin; i < end; ++i) {
            const double loss = row_loss(x + i * c, c, index_at(labels, is_i64, i));
            if (mode == 2) y[i] = static_cast<T>(loss);
            s += loss;
          }
          return s;
        },
        [](double a, double b) { return a + b; });
    if (mode != 2) y[0] = static_cast<T>(mode == 0 ? total / static_cast<double>(n) : total);
    return Status::ok_status();
  });
}

template <typename T>
KernelOr make_mse(const LibraryCall& call, const std::vector<const void*>& in, T* y) {
  const int mode = reduction_mode(call);
  if (mode < 0 || call.operand_types[0] != call.operand_types[1]) return std::unique_ptr<BoundKernel>();
  const int64_t n = call.operand_types[0].numel();
  const T* a = static_cast<const T*>(in[0]);
  const T* b = static_cast<const T*>(in[1]);
  return make_fn_kernel("mse " + call.operand_types[0].to_string(), [=](ThreadPool& pool) -> Status {
    const double total = pool.parallel_reduce(
        n, kGrainElements, 0.0,
        [=](int64_t begin, int64_t end) {
          double lanes[kLanes] = {};
          int64_t i = begin;
          for (; i + kLanes <= end; i += kLanes) {
            for (int k = 0; k < kLanes; ++k) {
              const double d = static_cast<double>(a[i + k]) - static_cast<double>(b[i + k]);
              if (mode == 2) y[i + k] = static_cast<T>(d * d);
              lanes[k] += d * d;
            }
          }
          double s = 0;
          for (int k = 0; k < kLanes; ++k) s += lanes[k];
          for (; i < end; ++i) {
            const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
            if (mode == 2) y[i] = static_cast<T>(d * d);
            s += d * d;
          }
          return s;
        },
        [](double p, double q) { return p + q; });
    if (mode != 2) y[0] = static_cast<T>(mode == 0 ? total / static_cast<double>(n) : total);
    return Status::ok_status();
  });
}

// The ops the CPU's column of the composite table (ir/kernel_support.h,
// library_composite_gap) states, in f32 and f64; composite_table_test fails when the two
// disagree.
template <typename T>
KernelOr make_typed(const LibraryCall& call, const std::vector<const void*>& in, void* out) {
  T* y = static_cast<T*>(out);
  switch (call.node.op) {
    case Op::Softmax: return make_softmax<T, false>(call, static_cast<const T*>(in[0]), y);
    case Op::LogSoftmax: return make_softmax<T, true>(call, static_cast<const T*>(in[0]), y);
    case Op::LayerNorm: return make_layer_norm<T>(call, in, y);
    case Op::CrossEntropy: return make_cross_entropy<T>(call, in, y);
    case Op::Mse: return make_mse<T>(call, in, y);
    default: return std::unique_ptr<BoundKernel>();
  }
}

}  // namespace

KernelOr make_composite_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                               void* out) {
  const DType dtype = call.operand_types[0].dtype;
  if (call.result_type.dtype != dtype) return std::unique_ptr<BoundKernel>();
  if (dtype == DType::f32) return make_typed<float>(call, in, out);
  if (dtype == DType::f64) return make_typed<double>(call, in, out);
  return std::unique_ptr<BoundKernel>();
}

}  // namespace weft::cpu

// Reduction kernels: sum, mean, max, min over a set of axes and argmax over one axis,
// for f32 and f64. The input is viewed, after merging adjacent axes that are both
// reduced or both kept and dropping size-1 axes, as [outer, reduced, inner]:
//  - inner == 1 ([rows, n] over its last axis): one row per task, contiguous and
//    vectorized with independent accumulators;
//  - inner > 1 (e.g. a bias gradient [128, 256] summed over axis 0): blocks of 64
//    columns per task, each accumulated down the reduced axis;
//  - [a, c, b] over a and b, keeping c (batch-norm statistics, NCHW over N, H and W):
//    one channel per task, its a rows of b contiguous elements reduced as above and
//    combined in row order;
// and anything else (several separate reduced axes) walks each output's elements.
// Float sums accumulate in f64, as the reference does. Every output element is computed
// by one task in a fixed order, so results do not depend on the thread count at all.

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {
namespace {

enum class Kind { kSum, kMean, kMax, kMin };

constexpr int64_t kColumnBlock = 64;
constexpr int64_t kGrainElements = 32768;

// The accumulator of one output element: f64 sums, or the running extreme (in T), which
// becomes NaN as soon as a NaN is seen and then stays NaN.
template <typename T, Kind K>
struct Acc {
  using type = std::conditional_t<K == Kind::kSum || K == Kind::kMean, double, T>;
  static constexpr type init() {
    if constexpr (K == Kind::kMax) return -std::numeric_limits<T>::infinity();
    else if constexpr (K == Kind::kMin) return std::numeric_limits<T>::infinity();
    else return 0.0;
  }
  static type step(type a, T v) {
    if constexpr (K == Kind::kMax) return (v > a || v != v) && a == a ? v : a;
    else if constexpr (K == Kind::kMin) return (v < a || v != v) && a == a ? v : a;
    else return a + static_cast<double>(v);
  }
  static T finish(type a, int64_t count) {
    if constexpr (K == Kind::kMean) return static_cast<T>(a / static_cast<double>(count));
    else return static_cast<T>(a);
  }
};

// Reduces n contiguous elements with 16 independent lanes, folded in lane order.
template <typename T, Kind K>
typename Acc<T, K>::type reduce_contiguous(const T* p, int64_t n) {
  using A = Acc<T, K>;
  constexpr int kLanes = 16;
  typename A::type lanes[kLanes];
  for (int k = 0; k < kLanes; ++k) lanes[k] = A::init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] = A::step(lanes[k], p[i + k]);
  }
  typename A::type a = A::init();
  for (int k = 0; k < kLanes; ++k) {
    if constexpr (K == Kind::kSum || K == Kind::kMean) a += lanes[k];
    else a = A::step(a, lanes[k]);
  }
  for (; i < n; ++i) a = A::step(a, p[i]);
  return a;
}

// x viewed as [outer, r, inner] -> y[outer, inner].
template <typename T, Kind K>
void reduce_3d(ThreadPool& pool, const T* x, T* y, int64_t outer, int64_t r, int64_t inner) {
  using A = Acc<T, K>;
  if (inner == 1) {
    pool.parallel_for(outer, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(r, 1)),
                      [=](int64_t begin, int64_t end) {
                        for (int64_t o = begin; o < end; ++o) {
                          y[o] = A::finish(reduce_contiguous<T, K>(x + o * r, r), r);
                        }
                      });
    return;
  }
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(r * kColumnBlock, 1));
  pool.parallel_for(outer * blocks, grain, [=](int64_t begin, int64_t end) {
    typename A::type acc[kColumnBlock];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumnBlock;
      const int64_t w = std::min(kColumnBlock, inner - c0);
      for (int64_t c = 0; c < w; ++c) acc[c] = A::init();
      const T* p = x + o * r * inner + c0;
      for (int64_t j = 0; j < r; ++j, p += inner) {
        for (int64_t c = 0; c < w; ++c) acc[c] = A::step(acc[c], p[c]);
      }
      T* q = y + o * inner + c0;
      for (int64_t c = 0; c < w; ++c) q[c] = A::finish(acc[c], r);
    }
  });
}

// x viewed as [a, c, b] -> y[c], reducing a and b.
template <typename T, Kind K>
void reduce_outer_inner(ThreadPool& pool, const T* x, T* y, int64_t a, int64_t c, int64_t b) {
  using A = Acc<T, K>;
  pool.parallel_for(c, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(a * b, 1)),
                    [=](int64_t begin, int64_t end) {
                      for (int64_t j = begin; j < end; ++j) {
                        typename A::type acc = A::init();
                        for (int64_t i = 0; i < a; ++i) {
                          const auto part = reduce_contiguous<T, K>(x + (i * c + j) * b, b);
                          if constexpr (K == Kind::kSum || K == Kind::kMean) acc += part;
                          else acc = A::step(acc, part);
                        }
                        y[j] = A::finish(acc, a * b);
                      }
                    });
}

// Any set of reduced axes: for each output, an odometer over the reduced groups.
struct GeneralPlan {
  std::vector<int64_t> kept_dims, kept_strides;  // Input strides of the kept groups.
  std::vector<int64_t> red_dims, red_strides;
  int64_t count = 1;
};

template <typename T, Kind K>
void reduce_general(ThreadPool& pool, const T* x, T* y, int64_t out_numel,
                    const GeneralPlan& plan) {
  using A = Acc<T, K>;
  const int kr = static_cast<int>(plan.kept_dims.size());
  const int rr = static_cast<int>(plan.red_dims.size());
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(plan.count, 1));
  pool.parallel_for(out_numel, grain, [&](int64_t begin, int64_t end) {
    int64_t ridx[8];  // Coalesced groups alternate, so rank <= 8 leaves <= 4 reduced.
    for (int64_t o = begin; o < end; ++o) {
      int64_t base = 0, rest = o;
      for (int d = kr - 1; d >= 0; --d) {
        base += (rest % plan.kept_dims[d]) * plan.kept_strides[d];
        rest /= plan.kept_dims[d];
      }
      typename A::type a = A::init();
      for (int d = 0; d < rr; ++d) ridx[d] = 0;
      const int64_t n = plan.red_dims[rr - 1], s = plan.red_strides[rr - 1];
      int64_t off = base;
      for (int64_t done = 0; done < plan.count; done += n) {
        for (int64_t i = 0; i < n; ++i) a = A::step(a, x[off + i * s]);
        for (int d = rr - 2; d >= 0; --d) {
          off += plan.red_strides[d];
          if (++ridx[d] < plan.red_dims[d]) break;
          off -= plan.red_strides[d] * plan.red_dims[d];
          ridx[d] = 0;
        }
      }
      y[o] = A::finish(a, plan.count);
    }
  });
}

template <typename T, Kind K>
KernelOr make_reduce(const LibraryCall& call, const T* x, T* y) {
  const Shape& shape = call.operand_types[0].shape;
  const int rank = shape.rank();
  std::vector<bool> mask(rank, !call.node.has_attr("axes"));
  if (call.node.has_attr("axes")) {
    for (int64_t a : call.node.ints_attr("axes")) {
      const int axis = normalize_axis(a, rank);
      if (axis < 0 || mask[axis]) return std::unique_ptr<BoundKernel>();  // Reference's error.
      mask[axis] = true;
    }
  }
  const int64_t out_numel = call.result_type.numel();
  const int64_t count = out_numel == 0 ? 0 : shape.numel() / out_numel;
  if ((K == Kind::kMax || K == Kind::kMin) && count == 0 && out_numel > 0) {
    return std::unique_ptr<BoundKernel>();  // The reference reports the empty axis.
  }
  // Merge adjacent axes of the same kind; size-1 axes change nothing.
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int d = 0; d < rank; ++d) {
    if (shape.dims[d] == 1) continue;
    if (!dims.empty() && reduced.back() == mask[d]) dims.back() *= shape.dims[d];
    else {
      dims.push_back(shape.dims[d]);
      reduced.push_back(mask[d]);
    }
  }
  int num_reduced = 0;
  for (bool r : reduced) num_reduced += r;
  const std::string name = std::string(op_name(call.node.op)) + " " +
                           call.operand_types[0].to_string();
  if (num_reduced <= 1 || out_numel == 0) {
    int64_t outer = 1, r = 1, inner = 1;
    bool seen = false;
    for (size_t g = 0; g < dims.size(); ++g) {
      if (reduced[g]) {
        r = dims[g];
        seen = true;
      } else {
        (seen ? inner : outer) *= dims[g];
      }
    }
    if (out_numel == 0) outer = 0;
    return make_fn_kernel(name + (inner == 1 ? " rows" : " columns"),
                          [=](ThreadPool& pool) -> Status {
                            reduce_3d<T, K>(pool, x, y, outer, r, inner);
                            return Status::ok_status();
                          });
  }
  if (dims.size() == 3 && reduced[0] && !reduced[1] && reduced[2]) {
    const int64_t a = dims[0], c = dims[1], b = dims[2];
    return make_fn_kernel(name + " outer+inner", [=](ThreadPool& pool) -> Status {
      reduce_outer_inner<T, K>(pool, x, y, a, c, b);
      return Status::ok_status();
    });
  }
  GeneralPlan plan;
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (int g = static_cast<int>(dims.size()) - 1; g >= 0; --g) {
    strides[g] = stride;
    stride *= dims[g];
  }
  for (size_t g = 0; g < dims.size(); ++g) {
    (reduced[g] ? plan.red_dims : plan.kept_dims).push_back(dims[g]);
    (reduced[g] ? plan.red_strides : plan.kept_strides).push_back(strides[g]);
  }
  if (plan.red_dims.size() > 8) return std::unique_ptr<BoundKernel>();
  plan.count = count;
  return make_fn_kernel(name + " strided", [=](ThreadPool& pool) -> Status {
    reduce_general<T, K>(pool, x, y, out_numel, plan);
    return Status::ok_status();
  });
}

// argmax over [outer, r, inner]: the first maximum; the first NaN counts as the maximum.
template <typename T>
void argmax_3d(ThreadPool& pool, const T* x, int64_t* y, int64_t outer, int64_t r,
               int64_t inner) {
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(r * std::min(inner, kColumnBlock), 1));
  pool.parallel_for(outer * blocks, grain, [=](int64_t begin, int64_t end) {
    T best_value[kColumnBlock];
    int64_t best[kColumnBlock];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumnBlock;
      const int64_t w = std::min(kColumnBlock, inner - c0);
      const T* p = x + o * r * inner + c0;
      for (int64_t c = 0; c < w; ++c) {
        best_value[c] = p[c];
        best[c] = 0;
      }
      for (int64_t j = 1; j < r; ++j) {
        const T* row = p + j * inner;
        for (int64_t c = 0; c < w; ++c) {
          const T v = row[c], b = best_value[c];
          if (b != b) continue;
          if (v > b || v != v) {
            best_value[c] = v;
            best[c] = j;
          }
        }
      }
      for (int64_t c = 0; c < w; ++c) y[o * inner + c0 + c] = best[c];
    }
  });
}

template <typename T>
KernelOr make_argmax(const LibraryCall& call, const T* x, int64_t* y) {
  const Shape& shape = call.operand_types[0].shape;
  const int axis = normalize_axis(call.node.int_attr("axis"), shape.rank());
  if (axis < 0 || call.result_type.dtype != DType::i64) return std::unique_ptr<BoundKernel>();
  int64_t outer = 1, inner = 1;
  const int64_t r = shape.dims[axis];
  for (int d = 0; d < axis; ++d) outer *= shape.dims[d];
  for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape.dims[d];
  if (r == 0 && outer * inner > 0) return std::unique_ptr<BoundKernel>();
  return make_fn_kernel("argmax " + call.operand_types[0].to_string(),
                        [=](ThreadPool& pool) -> Status {
                          argmax_3d<T>(pool, x, y, outer, r, inner);
                          return Status::ok_status();
                        });
}

template <typename T>
KernelOr make_typed(const LibraryCall& call, const void* in, void* out) {
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  switch (call.node.op) {
    case Op::Sum: return make_reduce<T, Kind::kSum>(call, x, y);
    case Op::Mean: return make_reduce<T, Kind::kMean>(call, x, y);
    case Op::Max: return make_reduce<T, Kind::kMax>(call, x, y);
    case Op::Min: return make_reduce<T, Kind::kMin>(call, x, y);
    case Op::Argmax: return make_argmax<T>(call, x, static_cast<int64_t*>(out));
    default: return std::unique_ptr<BoundKernel>();
  }
}

}  // namespace

KernelOr make_reduction_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                               void* out) {
  const DType dtype = call.operand_types[0].dtype;
  if (call.node.op != Op::Argmax && call.result_type.dtype != dtype) {
    return std::unique_ptr<BoundKernel>();
  }
  if (dtype == DType::f32) return make_typed<float>(call, in[0], out);
  if (dtype == DType::f64) return make_typed<double>(call, in[0], out);
  return std::unique_ptr<BoundKernel>();
}

}  // namespace weft::cpu

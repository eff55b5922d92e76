// Indexed movement kernels: gather, one_hot and scatter_add (gather's adjoint, category
// Other), with i32 or i64 indices. Indices are read, and checked against the reference's
// out-of-range message, when the kernel runs; the copies are then split over the pool.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {
namespace {

constexpr int64_t kGrainElements = 16384;

// The reference's message for an index outside [0, dim), at the first such position.
Status check_indices(const LibraryCall& call, const void* idx, bool is_i64, int64_t n,
                     int axis, int64_t dim) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = index_at(idx, is_i64, j);
    if (i < 0 || i >= dim) {
      return call_error(call, "index " + std::to_string(i) + " at position " + std::to_string(j) +
                                  " is out of range for axis " + std::to_string(axis) +
                                  " of size " + std::to_string(dim));
    }
  }
  return Status::ok_status();
}

// gather(x, idx) {axis}: rows of `inner` elements, (outer x len(idx)) of them.
template <typename E>
KernelOr make_gather(const LibraryCall& call, const std::vector<const void*>& in, void* out) {
  const Shape& xs = call.operand_types[0].shape;
  const int axis = normalize_axis(call.node.int_attr("axis"), xs.rank());
  if (axis < 0) return std::unique_ptr<BoundKernel>();
  const bool is_i64 = call.operand_types[1].dtype == DType::i64;
  const int64_t n = call.operand_types[1].numel(), dim = xs.dims[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= xs.dims[d];
  for (int d = axis + 1; d < xs.rank(); ++d) inner *= xs.dims[d];
  const E* x = static_cast<const E*>(in[0]);
  const void* idx = in[1];
  E* y = static_cast<E*>(out);
  LibraryCall c = call;
  return make_fn_kernel("gather " + xs.to_string(), [=](ThreadPool& pool) -> Status {
    WEFT_RETURN_IF_ERROR(check_indices(c, idx, is_i64, n, axis, dim));
    pool.parallel_for(outer * n, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(inner, 1)),
                      [=](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = r / n, i = index_at(idx, is_i64, r % n);
        const E* s = x + (o * dim + i) * inner;
        E* d = y + r * inner;
        if (inner == 1) *d = *s;
        else std::memcpy(d, s, static_cast<size_t>(inner) * sizeof(E));
      }
    });
    return Status::ok_status();
  });
}

// scatter_add(base, idx, src) {axis}: each task owns a block of columns of one outer
// slice and adds src's rows into it in index order, so duplicates never race and the
// sums are those of the reference, bit for bit.
template <typename T>
KernelOr make_scatter_add(const LibraryCall& call, const std::vector<const void*>& in, void* out) {
  const Shape& bs = call.operand_types[0].shape;
  const int axis = normalize_axis(call.node.int_attr("axis"), bs.rank());
  if (axis < 0) return std::unique_ptr<BoundKernel>();
  const bool is_i64 = call.operand_types[1].dtype == DType::i64;
  const int64_t n = call.operand_types[1].numel(), dim = bs.dims[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= bs.dims[d];
  for (int d = axis + 1; d < bs.rank(); ++d) inner *= bs.dims[d];
  constexpr int64_t kCols = 256;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  const T* base = static_cast<const T*>(in[0]);
  const void* idx = in[1];
  const T* src = static_cast<const T*>(in[2]);
  T* y = static_cast<T*>(out);
  LibraryCall c = call;
  return make_fn_kernel("scatter_add " + bs.to_string(), [=](ThreadPool& pool) -> Status {
    WEFT_RETURN_IF_ERROR(check_indices(c, idx, is_i64, n, axis, dim));
    const int64_t work = std::max<int64_t>(1, (dim + n) * std::min(inner, kCols));
    pool.parallel_for(outer * blocks, std::max<int64_t>(1, kGrainElements / work),
                      [=](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        const int64_t a = u / blocks, c0 = (u % blocks) * kCols, w = std::min(kCols, inner - c0);
        for (int64_t i = 0; i < dim; ++i) {
          const int64_t off = (a * dim + i) * inner + c0;
          std::memcpy(y + off, base + off, static_cast<size_t>(w) * sizeof(T));
        }
        for (int64_t j = 0; j < n; ++j) {
          T* d = y + (a * dim + index_at(idx, is_i64, j)) * inner + c0;
          const T* s = src + (a * n + j) * inner + c0;
          for (int64_t k = 0; k < w; ++k) {
            if constexpr (std::is_integral_v<T>) {
              using U = std::make_unsigned_t<T>;  // Integer sums wrap, as the reference's.
              d[k] = static_cast<T>(static_cast<U>(d[k]) + static_cast<U>(s[k]));
            } else {
              d[k] += s[k];
            }
          }
        }
      }
    });
    return Status::ok_status();
  });
}

// one_hot(idx) {depth, dtype}: rows of `depth` zeros with a one at the index (if inside).
template <typename E>
KernelOr make_one_hot(const LibraryCall& call, const void* idx, void* out) {
  const bool is_i64 = call.operand_types[0].dtype == DType::i64;
  const int64_t n = call.operand_types[0].numel(), depth = call.node.int_attr("depth");
  const E one = static_cast<E>(dtype_bits(call.result_type.dtype, 1.0));
  E* y = static_cast<E*>(out);
  return make_fn_kernel("one_hot " + call.result_type.to_string(), [=](ThreadPool& pool) -> Status {
    pool.parallel_for(n, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(depth, 1)), [=](int64_t begin, int64_t end) {
      std::memset(y + begin * depth, 0, static_cast<size_t>((end - begin) * depth) * sizeof(E));
      for (int64_t j = begin; j < end; ++j) {
        const int64_t i = index_at(idx, is_i64, j);
        if (i >= 0 && i < depth) y[j * depth + i] = one;
      }
    });
    return Status::ok_status();
  });
}

bool is_index(DType d) { return d == DType::i64 || d == DType::i32; }

}  // namespace

KernelOr make_indexing_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out) {
  const Op op = call.node.op;
  const size_t esize = dtype_size(call.result_type.dtype);
  if (op == Op::OneHot) {
    if (!is_index(call.operand_types[0].dtype)) return std::unique_ptr<BoundKernel>();
    return dispatch_size(esize, [&](auto e) { return make_one_hot<decltype(e)>(call, in[0], out); });
  }
  if (call.operand_types[0].dtype != call.result_type.dtype || !is_index(call.operand_types[1].dtype)) {
    return std::unique_ptr<BoundKernel>();
  }
  if (op == Op::Gather) {
    return dispatch_size(esize, [&](auto e) { return make_gather<decltype(e)>(call, in, out); });
  }
  if (op != Op::ScatterAdd) return std::unique_ptr<BoundKernel>();
  switch (call.result_type.dtype) {
    case DType::f32: return make_scatter_add<float>(call, in, out);
    case DType::f64: return make_scatter_add<double>(call, in, out);
    case DType::i32: return make_scatter_add<int32_t>(call, in, out);
    case DType::i64: return make_scatter_add<int64_t>(call, in, out);
    default: return std::unique_ptr<BoundKernel>();
  }
}

}  // namespace weft::cpu

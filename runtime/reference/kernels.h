#pragma once
// Internal to the reference interpreter: the kernel table and helpers the kernel files
// share. Each category file defines `register_*_kernels`, which adds its ops to the
// table; interpreter.cc builds the table once from all of them.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ir/scalar_math.h"
#include "ir/status.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft::reference {

inline Error node_error(const Node& node, const std::string& message);

/// Kernels by op, filled by the category files.
struct KernelTable {
  std::array<Kernel, kNumOps> kernels{};
  std::array<SeveralKernel, kNumOps> several{};
  void add(Op op, Kernel k) { kernels[static_cast<size_t>(op)] = k; }
  /// An op with several results: `run` calls `k`; its `Kernel` entry refuses a lone call.
  void add_several(Op op, SeveralKernel k) {
    several[static_cast<size_t>(op)] = k;
    kernels[static_cast<size_t>(op)] = [](const Node& node, const std::vector<const Tensor*>&,
                                          Tensor&) -> Status {
      return node_error(node, "has several results: it runs through reference::run");
    };
  }
};

void register_elementwise_kernels(KernelTable& table);
void register_reduction_kernels(KernelTable& table);
void register_movement_kernels(KernelTable& table);
void register_contraction_kernels(KernelTable& table);
void register_creation_kernels(KernelTable& table);
void register_composite_kernels(KernelTable& table);

/// A user error at `node`: "OP: MESSAGE" at the node's location.
inline Error node_error(const Node& node, const std::string& message) {
  return Error{std::string(op_name(node.op)) + ": " + message, node.loc};
}

/// An internal consistency check of a kernel's output against the type it computed.
inline Status check_result(const Node& node, const Type& want, const Tensor& out) {
  if (want != out.type()) {
    return node_error(node, "result type " + out.type().to_string() + " should be " +
                                want.to_string());
  }
  return Status::ok_status();
}

/// The error for a dtype a kernel does not implement.
inline Error unsupported_dtype(const Node& node, DType dtype) {
  return node_error(node, "dtype " + std::string(dtype_name(dtype)) +
                              " is not supported by the reference interpreter");
}

/// Strides (in elements) for reading `in` broadcast to `out` (NumPy rules): aligned to
/// `out`'s rank, 0 on broadcast dimensions.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

/// Visits `shape` row by row (the last dimension is the row). For each row, `f(row_start,
/// offsets, inner_strides, n)` gets the row's first element index in `shape` (row-major),
/// the offset of its first element in each of N strided operands, each operand's stride
/// along the last dimension, and the row length. `strides[k]` has shape's rank.
template <size_t N, typename F>
void for_each_row(const Shape& shape, const std::array<std::vector<int64_t>, N>& strides,
                  F&& f) {
  const int rank = shape.rank();
  std::array<int64_t, N> off{};
  std::array<int64_t, N> inner{};
  if (rank == 0) {
    f(int64_t{0}, off, inner, int64_t{1});
    return;
  }
  const int64_t n = shape.dims[rank - 1];
  const int64_t total = shape.numel();
  if (total == 0) return;
  for (size_t k = 0; k < N; ++k) inner[k] = strides[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t row = 0; row * n < total; ++row) {
    f(row * n, off, inner, n);
    for (int d = rank - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < shape.dims[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape.dims[d];
      idx[d] = 0;
    }
  }
}

/// Calls `f(T{})` with the C++ element type of `dtype` for the kinds in `Kinds`
/// (scalar::ElementTypes: kFloats, kInts, kBool).
using scalar::kBool;
using scalar::kFloats;
using scalar::kInts;
template <unsigned Kinds, typename F>
Status dispatch(const Node& node, DType dtype, F&& f) {
  if constexpr ((Kinds & kFloats) != 0) {
    if (dtype == DType::f32) return f(float{});
    if (dtype == DType::f64) return f(double{});
  }
  if constexpr ((Kinds & kInts) != 0) {
    if (dtype == DType::i32) return f(int32_t{});
    if (dtype == DType::i64) return f(int64_t{});
    if (dtype == DType::u8) return f(uint8_t{});
  }
  if constexpr ((Kinds & kBool) != 0) {
    if (dtype == DType::boolean) return f(bool{});
  }
  return unsupported_dtype(node, dtype);
}

/// Reads element `i` of an integer tensor (i32, i64 or u8) as int64.
int64_t int_element(const Tensor& t, int64_t i);

/// A normalized axis, or an error naming the op, the axis and the rank.
StatusOr<int> checked_axis(const Node& node, int64_t axis, int rank);

/// C[M,N] (+)= A[M,K]·B[K,N], all row-major and contiguous (leading dimensions K, N, N).
/// When `accumulate` is false C is overwritten. Cache-friendly i-k-j loops with a
/// contiguous, vectorizable inner loop (gemm.cc).
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
          bool accumulate);
void gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c,
          bool accumulate);
template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, bool accumulate) {
  if (!accumulate) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = T{};
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * k + p];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<T>(c[i * n + j] + av * b[p * n + j]);
    }
  }
}

/// dst[cols, rows] = transpose of src[rows, cols].
template <typename T>
void transpose_2d(int64_t rows, int64_t cols, const T* src, T* dst) {
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const int64_t i1 = std::min(rows, i0 + kBlock), j1 = std::min(cols, j0 + kBlock);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
      }
    }
  }
}

}  // namespace weft::reference

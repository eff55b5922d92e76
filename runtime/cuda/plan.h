#pragma once
// The host-side decisions of the CUDA executor, kept apart from every CUDA call so that
// machines without a GPU (every CI machine) test them: how a matmul becomes cuBLAS calls,
// and whether a Program fits in the device's memory.
//
// cuBLAS is column-major and weft row-major. A row-major matrix read as column-major is
// its transpose, so the row-major C = op(A)·op(B) is computed as the column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS's first matrix is B, its second A, and its m and n are
// the row-major n and m. For f32[64,48]·f32[48,32] (no transposes):
//
//   cublasSgemm(handle, N, N, /*m=*/32, /*n=*/64, /*k=*/48, &one,
//               b, /*ldb=*/32, a, /*lda=*/48, &zero, c, /*ldc=*/32)
//
// A transpose flag keeps the operand where it is and turns on cuBLAS's op for it:
// transpose_b stores B as [n, k] (leading dimension k), transpose_a stores A as [k, m]
// (leading dimension m).

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/program.h"

namespace weft::cuda {

/// One column-major cuBLAS GEMM call, strided-batched when `count` > 1:
/// for e in [0, count): C_e = op(first_e)·op(second_e), where X_e starts
/// `x_offset + e * x_stride` elements into its buffer. `first` is the matmul's B operand
/// and `second` its A (see the top of this file).
struct CublasGemm {
  bool trans_first = false;   ///< cuBLAS's transa (the matmul's transpose_b).
  bool trans_second = false;  ///< cuBLAS's transb (the matmul's transpose_a).
  int64_t m = 0, n = 0, k = 0;  ///< cuBLAS's m, n, k: the row-major n, m, k.
  int64_t ld_first = 1, ld_second = 1, ldc = 1;
  int64_t first_offset = 0, second_offset = 0, c_offset = 0;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;
  int64_t count = 1;
};

/// A matmul as cuBLAS calls: `calls` write every element of C, or, when the contracted
/// dimension is empty (`zero_fill`), C is all zeros. `m`, `n`, `k` and `batch` are the
/// row-major problem, for describe().
struct MatmulPlan {
  std::vector<CublasGemm> calls;
  bool zero_fill = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;

  /// "sgemm 64x32x48", "sgemm_strided_batched 16x8x24 batch 4", "dgemm 3x5x12 batch 6 in
  /// 6 calls".
  std::string describe(DType dtype) const;
};

/// The cuBLAS calls of `node` (a matmul: NumPy semantics, 1-D operands promoted, batch
/// dimensions broadcast as the reference interpreter does, transpose_a/transpose_b) on
/// operands of types `a` and `b`: the batch folds into the rows of one GEMM where B is
/// shared; batch offsets that are a multiple of the entry index become one
/// strided-batched call; any other broadcast, one call per batch entry. False when cuBLAS
/// does not run it: a dtype other than f32/f64, a scalar operand, a transposed 1-D
/// operand, a dimension beyond cuBLAS's int. Errors (naming the op and both types):
/// operands whose shapes do not multiply.
StatusOr<bool> plan_matmul(const Node& node, const Type& a, const Type& b, MatmulPlan& plan);

}  // namespace weft::cuda

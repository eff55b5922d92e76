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
//
// Precision ([Mixed precision]): f32 and f64 run cublasSgemm/Dgemm in pedantic math (the
// reference's arithmetic); f16 and bf16 run cublasGemmEx on tensor cores with f32
// accumulation (CUBLAS_COMPUTE_32F, alpha and beta f32, C rounded once to the dtype);
// f32 with `tf32` (ExecutorOptions::tf32, off by default) runs cublasGemmEx with
// CUBLAS_COMPUTE_32F_FAST_TF32 — operands rounded to TF32's 10-bit mantissa, which
// misses the reference's f32 by far more than its tolerance, hence opt-in.

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

/// How a GEMM or a convolution computes: gemm.cc maps it to cuBLAS's calls and compute
/// types, conv.cc to cuDNN's math type. One decision for both (contraction_math).
enum class ContractionMath {
  /// f32 or f64 as the reference computes it: cublasSgemm/Dgemm, cuDNN's FMA math.
  pedantic,
  /// f16/bf16 operands on tensor cores, f32 accumulation: cublasGemmEx with
  /// CUBLAS_COMPUTE_32F, cuDNN's tensor-op math with an f32 compute type.
  tensor_f32,
  /// f32 operands rounded to TF32 on tensor cores, f32 accumulation:
  /// CUBLAS_COMPUTE_32F_FAST_TF32, cuDNN's default math (which allows TF32).
  tf32,
};

/// The math of a GEMM or convolution on `dtype` operands: tensor_f32 for f16 and bf16,
/// tf32 for f32 when `tf32` is asked for (ExecutorOptions::tf32), pedantic otherwise (f64
/// never uses TF32).
ContractionMath contraction_math(DType dtype, bool tf32);

/// A matmul as cuBLAS calls: `calls` write every element of C, or, when the contracted
/// dimension is empty (`zero_fill`), C is all zeros. `m`, `n`, `k` and `batch` are the
/// row-major problem, for describe().
struct MatmulPlan {
  std::vector<CublasGemm> calls;
  bool zero_fill = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ContractionMath math = ContractionMath::pedantic;  ///< contraction_math of the operands' dtype, set at bind.

  /// "sgemm 64x32x48", "sgemm_strided_batched 16x8x24 batch 4", "dgemm 3x5x12 batch 6 in
  /// 6 calls", "bf16gemm 64x32x48 (tensor cores, f32 accumulation)", "sgemm 64x32x48
  /// (tf32 tensor cores)".
  std::string describe(DType dtype) const;
  /// The floating-point operations of the product: 2·m·n·k·batch (a profile's TFLOP/s).
  double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
};

/// The cuBLAS calls of `node` (a matmul: NumPy semantics, 1-D operands promoted, batch
/// dimensions broadcast as the reference interpreter does, transpose_a/transpose_b) on
/// operands of types `a` and `b`: the batch folds into the rows of one GEMM where B is
/// shared; batch offsets that are a multiple of the entry index become one
/// strided-batched call; any other broadcast, one call per batch entry. False when cuBLAS
/// does not run it: operands of a dtype other than f32, f64, f16 or bf16 or of two
/// dtypes, a scalar operand, a transposed 1-D operand, a dimension beyond cuBLAS's int.
/// The plan's math is contraction_math(dtype, /*tf32=*/false); the executor sets tf32 where
/// asked. Errors (naming the op and both types): operands whose shapes do not multiply.
StatusOr<bool> plan_matmul(const Node& node, const Type& a, const Type& b, MatmulPlan& plan);

}  // namespace weft::cuda

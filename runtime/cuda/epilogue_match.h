#pragma once
// Which contractions cuBLASLt can finish by itself (#31, #30): a `contraction` invocation
// (runtime/program.h: the GEMM into C, then its generated epilogue kernel on C) whose
// whole epilogue is one of cuBLASLt's epilogues runs as one cublasLtMatmul with that
// epilogue instead of a GEMM and a second kernel re-reading C (gemm_lt.cc). Host-only:
// no CUDA header, so machines without a GPU test the decision
// (tests/cuda:cublaslt_match_test, on Programs lowered for the GPU).
//
//   %y = fused(%x, %w, %b) {kind="contraction"} : bf16[128,256] ({
//     ^body(%0: bf16[128,784], %1: bf16[784,256], %2: bf16[256]):
//       %t0 = matmul(%0, %1) : bf16[128,256]
//       %t1 = add(%t0, %2) : bf16[128,256]
//       %t2 = gelu(%t1) {approximate="tanh"} : bf16[128,256]
//       return %t2
//   })
// matches as {gelu_bias, bias operand 2}.
//
// The row-major mapping. plan.h computes the row-major C[M,N] = op(A)·op(B) as the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, whose rows (cuBLAS's m) are weft's N columns, in
// every call of the plan (a batch folded into the rows adds to cuBLAS's n, never to m).
// cuBLASLt's bias vector has one element per row of its column-major D, broadcast over
// D's columns: so weft's bias[N], broadcast along C's rows (C[i,j] + bias[j]), is exactly
// cuBLASLt's bias, with no copy or transpose, in plain, folded and strided-batched calls
// (CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE left 0: one bias for every batch entry).
//
// Matched exactly (anything else is refused with the reason):
//   y = C + bias           CUBLASLT_EPILOGUE_BIAS
//   y = relu(C + bias)     CUBLASLT_EPILOGUE_RELU_BIAS
//   y = gelu(C + bias)     CUBLASLT_EPILOGUE_GELU_BIAS, only with approximate="tanh"
// where the add's operands are C and the bias in either order, the bias holds N elements
// of C's dtype laid out as [N] (leading dimensions of 1 allowed), the invocation has one
// result (C is not read elsewhere: gemm_result 0) and A, B, bias and C share one dtype:
// f32, f16 or bf16. A half epilogue as the CUDA lowering leaves it — C and the bias
// widened to f32, the ops in f32, one cast rounding to C's dtype — is matched through its
// casts: that is cuBLASLt's own arithmetic. Refused: any other cast, f64 (kept on cublasDgemm, the reference's arithmetic, and
// beyond this switch's purpose), a second result, any other op or a cast in the body, a
// plan of several calls (a broadcast batch entry by entry: one cuBLASLt call per entry
// would need per-entry heuristics and alignments for a shape no model here produces), an
// empty product (k = 0) or an empty C, and a B of one row or column (N or K of 1: a
// matrix-vector product, on which cuBLASLt's heuristic fails with INVALID_VALUE).

#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "runtime/cuda/plan.h"
#include "runtime/program.h"

namespace weft::cuda {

/// cuBLASLt's epilogue that replaces the generated one (gemm_lt.cc maps it to
/// cublasLtEpilogue_t).
enum class LtEpilogue { bias, relu_bias, gelu_bias };

/// "bias", "relu_bias", "gelu_bias".
const char* lt_epilogue_name(LtEpilogue e);

struct LtEpilogueMatch {
  LtEpilogue epilogue = LtEpilogue::bias;
  int bias_operand = 2;  ///< Index into the invocation's operands.
};

/// A match, or (match empty) why not in `refused`.
struct LtEpilogueDecision {
  std::optional<LtEpilogueMatch> match;
  std::string refused;
};

/// Whether cuBLASLt runs `inv` (a contraction invocation) with `epilogue_body` (its
/// kernel's body: inputs C then inv.operands[2...], outputs its results) and `plan` (its
/// GEMM's plan_matmul) as one call, and with which epilogue and bias.
LtEpilogueDecision match_lt_epilogue(const Invocation& inv, const Graph& epilogue_body,
                                     const MatmulPlan& plan);

/// One matrix of a cuBLASLt call as cublasLtMatrixLayoutCreate takes it: the stored
/// column-major matrix (before its op), `rows` x `cols` with leading dimension `ld`, and
/// `count` of them `stride` elements apart (a strided batch; count 1: one matrix).
struct LtMatrix {
  int64_t rows = 0, cols = 0, ld = 0, count = 1, stride = 0;
};

/// The layouts of plan.h's call `g` for cuBLASLt (gemm_lt.cc): its first matrix (the
/// matmul's B) m x k, k x m when transposed; its second (A) k x n, n x k when transposed;
/// C (D, written in place) m x n. cublaslt_match_test multiplies by them on the host.
struct LtLayouts {
  LtMatrix first, second, c;
};
LtLayouts lt_layouts(const CublasGemm& g);

/// The alignment cuBLASLt's heuristic is told it may assume of matrix `m` whose first entry
/// is at address `first` (gemm_lt.cc, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES): the
/// largest power of two up to 256 dividing that address and, in a strided batch, the
/// stride in bytes, so that every entry starts at least that aligned (the preference
/// names the buffer, and entry e lies e·stride elements past it).
uint32_t lt_alignment(uintptr_t first, const LtMatrix& m, size_t element_bytes);

}  // namespace weft::cuda

// Matmul through cuBLAS: the calls plan.h derived. f32 and f64 (ContractionMath::pedantic) run
// cublasSgemm/Dgemm on a handle in pedantic math mode (executor.cc), so f32 products are
// true f32, as the reference interpreter computes them. f16/bf16 (tensor_f32) and f32 with
// TF32 (tf32) run cublasGemmEx / cublasGemmStridedBatchedEx with f32 accumulation on
// tensor cores: the handle is switched to default math for the call (reduced-precision
// reductions still disallowed, so split-K partial sums stay f32) and back to pedantic.

#include <cstddef>

#include "runtime/cuda/device.h"

namespace weft::cuda {
namespace {

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

template <typename T>
Status run_calls(cublasHandle_t h, const MatmulPlan& plan, const T* a, const T* b, T* c) {
  const T one = 1, zero = 0;
  for (const CublasGemm& g : plan.calls) {
    // cuBLAS's first matrix is B, its second A (plan.h).
    const T* first = b + g.first_offset;
    const T* second = a + g.second_offset;
    T* out = c + g.c_offset;
    const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    const int ldf = static_cast<int>(g.ld_first), lds = static_cast<int>(g.ld_second);
    const int ldc = static_cast<int>(g.ldc);
    cublasStatus_t s;
    if (g.count == 1) {
      if constexpr (sizeof(T) == 4) {
        s = cublasSgemm(h, op(g.trans_first), op(g.trans_second), m, n, k, &one, first, ldf,
                        second, lds, &zero, out, ldc);
      } else {
        s = cublasDgemm(h, op(g.trans_first), op(g.trans_second), m, n, k, &one, first, ldf,
                        second, lds, &zero, out, ldc);
      }
    } else {
      const int count = static_cast<int>(g.count);
      if constexpr (sizeof(T) == 4) {
        s = cublasSgemmStridedBatched(h, op(g.trans_first), op(g.trans_second), m, n, k, &one,
                                      first, ldf, g.stride_first, second, lds, g.stride_second,
                                      &zero, out, ldc, g.stride_c, count);
      } else {
        s = cublasDgemmStridedBatched(h, op(g.trans_first), op(g.trans_second), m, n, k, &one,
                                      first, ldf, g.stride_first, second, lds, g.stride_second,
                                      &zero, out, ldc, g.stride_c, count);
      }
    }
    const char* name = sizeof(T) == 4 ? (g.count == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched")
                                      : (g.count == 1 ? "cublasDgemm" : "cublasDgemmStridedBatched");
    WEFT_RETURN_IF_ERROR(cublas_status(s, name));
  }
  return Status::ok_status();
}

/// cuBLAS's element type and compute type of a tensor-core GEMM.
struct ExTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

ExTypes ex_types(DType dtype, ContractionMath math) {
  return {gemm_data_type(dtype), math == ContractionMath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
}

Status run_ex_calls(cublasHandle_t h, const MatmulPlan& plan, DType dtype, const void* a,
                    const void* b, void* c) {
  const ExTypes t = ex_types(dtype, plan.math);
  const size_t esize = dtype_size(dtype);
  const float one = 1, zero = 0;  // f32 scalars: CUBLAS_COMPUTE_32F's alpha and beta
  for (const CublasGemm& g : plan.calls) {
    const void* first = static_cast<const char*>(b) + g.first_offset * esize;
    const void* second = static_cast<const char*>(a) + g.second_offset * esize;
    void* out = static_cast<char*>(c) + g.c_offset * esize;
    const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    const int ldf = static_cast<int>(g.ld_first), lds = static_cast<int>(g.ld_second);
    const int ldc = static_cast<int>(g.ldc);
    cublasStatus_t s;
    if (g.count == 1) {
      s = cublasGemmEx(h, op(g.trans_first), op(g.trans_second), m, n, k, &one, first, t.data,
                       ldf, second, t.data, lds, &zero, out, t.data, ldc, t.compute,
                       CUBLAS_GEMM_DEFAULT);
    } else {
      s = cublasGemmStridedBatchedEx(h, op(g.trans_first), op(g.trans_second), m, n, k, &one,
                                     first, t.data, ldf, g.stride_first, second, t.data, lds,
                                     g.stride_second, &zero, out, t.data, ldc, g.stride_c,
                                     static_cast<int>(g.count), t.compute, CUBLAS_GEMM_DEFAULT);
    }
    WEFT_RETURN_IF_ERROR(
        cublas_status(s, g.count == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx"));
  }
  return Status::ok_status();
}

/// The tensor-core calls with the handle in default math for their duration.
Status run_tensor_core_calls(cublasHandle_t h, const MatmulPlan& plan, DType dtype,
                             const void* a, const void* b, void* c) {
  WEFT_RETURN_IF_ERROR(cublas_status(
      cublasSetMathMode(h, static_cast<cublasMath_t>(
                               CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
      "cublasSetMathMode"));
  const Status s = run_ex_calls(h, plan, dtype, a, b, c);
  const Status back = cublas_status(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  return s.ok() ? back : s;
}

}  // namespace

cudaDataType_t gemm_data_type(DType dtype) {
  return dtype == DType::bf16 ? CUDA_R_16BF : dtype == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
}

Status cublas_status(cublasStatus_t status, const std::string& call) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  return Error{call + ": " + cublasGetStatusString(status)};
}

Status run_matmul(cublasHandle_t cublas, cudaStream_t stream, const MatmulPlan& plan,
                  DType dtype, const void* a, const void* b, void* c, size_t c_bytes) {
  if (plan.zero_fill) {
    return cuda_status(cudaMemsetAsync(c, 0, c_bytes, stream), "cudaMemsetAsync (matmul, k = 0)");
  }
  if (plan.math != ContractionMath::pedantic) return run_tensor_core_calls(cublas, plan, dtype, a, b, c);
  if (dtype == DType::f32) {
    return run_calls(cublas, plan, static_cast<const float*>(a), static_cast<const float*>(b),
                     static_cast<float*>(c));
  }
  return run_calls(cublas, plan, static_cast<const double*>(a), static_cast<const double*>(b),
                   static_cast<double*>(c));
}

}  // namespace weft::cuda

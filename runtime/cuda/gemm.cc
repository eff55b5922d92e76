// Matmul through cuBLAS: the calls plan.h derived, in f32 or f64. The handle is in
// pedantic math mode (executor.cc), so f32 products are true f32 (no TF32), as the
// reference interpreter computes them.

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

}  // namespace

Status cublas_status(cublasStatus_t status, const std::string& call) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  return Error{call + ": " + cublasGetStatusString(status)};
}

Status run_matmul(cublasHandle_t cublas, cudaStream_t stream, const MatmulPlan& plan,
                  DType dtype, const void* a, const void* b, void* c, size_t c_bytes) {
  if (plan.zero_fill) {
    return cuda_status(cudaMemsetAsync(c, 0, c_bytes, stream), "cudaMemsetAsync (matmul, k = 0)");
  }
  if (dtype == DType::f32) {
    return run_calls(cublas, plan, static_cast<const float*>(a), static_cast<const float*>(b),
                     static_cast<float*>(c));
  }
  return run_calls(cublas, plan, static_cast<const double*>(a), static_cast<const double*>(b),
                   static_cast<double*>(c));
}

}  // namespace weft::cuda

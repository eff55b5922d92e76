// The cuBLAS entry points of cublas_lazy.h: each resolves its real function in
// libcublas (opened on first use) once, then forwards to it.
#include "third_party/cublas_lazy.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>

namespace weft::cuda_lazy {
namespace {

// Where cuda.BUILD links CUDA's libraries from; tried when the loader's search path
// (RUNPATH of the caller, LD_LIBRARY_PATH, the system's) does not find the soname.
constexpr const char kCudaLibDir[] = "/usr/local/cuda/lib64/";

// The dlopen handle of `soname`, opened at the first call and kept for the process's
// life; nullptr with `error` set when it cannot be opened.
void* open_library(const std::string& soname, std::string* error) {
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen((kCudaLibDir + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) *error = dlerror();
  return handle;
}

// The error met opening cuBLAS, for cublasGetStatusString; empty when it opened.
std::string& cublas_load_error() {
  static std::string error;
  return error;
}

// The real function `symbol` of the library `soname` (cuBLAS's or cuBLASLt's), or nullptr
// (the reason kept for cublasGetStatusString).
void* library_symbol(const std::string& soname, const char* symbol) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string error;
  void* address = find_symbol(soname, symbol, &error);
  if (address == nullptr) cublas_load_error() = error;
  return address;
}

void* cublas_symbol(const char* symbol) { return library_symbol(cublas_soname(), symbol); }

}  // namespace

void* find_symbol(const std::string& soname, const char* symbol, std::string* error) {
  std::string open_error;
  void* handle = open_library(soname, &open_error);
  void* address = handle == nullptr ? nullptr : dlsym(handle, symbol);
  if (address == nullptr) {
    *error = "cannot load " + std::string(symbol) + " from " + soname + ": " +
             (handle == nullptr ? open_error : std::string(dlerror()));
  }
  return address;
}

std::string cublaslt_soname() { return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR); }

std::string cublas_soname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

bool cublas_loaded() {
  return dlopen(cublas_soname().c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr ||
         dlopen((kCudaLibDir + cublas_soname()).c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

}  // namespace weft::cuda_lazy

// One forwarding definition per cuBLAS function weft calls: the parameter list is checked
// against <cublas_v2.h>'s declaration (an extern "C" function declared twice with other
// parameters does not compile), and the real function is looked up once, on the first call.
#define WEFT_CUBLAS_FORWARD(name, params, args)                                          \
  extern "C" cublasStatus_t name params {                                                \
    using Real = cublasStatus_t(*) params;                                               \
    static const auto real = reinterpret_cast<Real>(weft::cuda_lazy::cublas_symbol(#name)); \
    return real == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : real args;                  \
  }

WEFT_CUBLAS_FORWARD(cublasCreate_v2, (cublasHandle_t * handle), (handle))
WEFT_CUBLAS_FORWARD(cublasDestroy_v2, (cublasHandle_t handle), (handle))
WEFT_CUBLAS_FORWARD(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                    (handle, stream))
WEFT_CUBLAS_FORWARD(cublasSetWorkspace_v2,
                    (cublasHandle_t handle, void* workspace, size_t bytes),
                    (handle, workspace, bytes))
WEFT_CUBLAS_FORWARD(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode),
                    (handle, mode))
WEFT_CUBLAS_FORWARD(cublasSgemm_v2,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const float* alpha, const float* a, int lda,
                     const float* b, int ldb, const float* beta, float* c, int ldc),
                    (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
WEFT_CUBLAS_FORWARD(cublasDgemm_v2,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const double* alpha, const double* a, int lda,
                     const double* b, int ldb, const double* beta, double* c, int ldc),
                    (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
WEFT_CUBLAS_FORWARD(cublasSgemmStridedBatched,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const float* alpha, const float* a, int lda,
                     long long int sa, const float* b, int ldb, long long int sb,
                     const float* beta, float* c, int ldc, long long int sc, int batch),
                    (h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                     batch))
WEFT_CUBLAS_FORWARD(cublasDgemmStridedBatched,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const double* alpha, const double* a, int lda,
                     long long int sa, const double* b, int ldb, long long int sb,
                     const double* beta, double* c, int ldc, long long int sc, int batch),
                    (h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                     batch))
WEFT_CUBLAS_FORWARD(cublasGemmEx,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const void* alpha, const void* a, cudaDataType at,
                     int lda, const void* b, cudaDataType bt, int ldb, const void* beta,
                     void* c, cudaDataType ct, int ldc, cublasComputeType_t compute,
                     cublasGemmAlgo_t algo),
                    (h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc,
                     compute, algo))
WEFT_CUBLAS_FORWARD(cublasGemmStridedBatchedEx,
                    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                     int n, int k, const void* alpha, const void* a, cudaDataType at,
                     int lda, long long int sa, const void* b, cudaDataType bt, int ldb,
                     long long int sb, const void* beta, void* c, cudaDataType ct, int ldc,
                     long long int sc, int batch, cublasComputeType_t compute,
                     cublasGemmAlgo_t algo),
                    (h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct,
                     ldc, sc, batch, compute, algo))

// cuBLASLt (runtime/cuda/gemm_lt.cc): the same lazy forwarding from libcublasLt. Its
// statuses are cublasStatus_t, described by cublasGetStatusString below.

#define WEFT_CUBLASLT_FORWARD(name, params, args)                                     \
  extern "C" cublasStatus_t name params {                                             \
    using Real = cublasStatus_t(*) params;                                            \
    static const auto real = reinterpret_cast<Real>(                                  \
        weft::cuda_lazy::library_symbol(weft::cuda_lazy::cublaslt_soname(), #name));  \
    return real == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : real args;               \
  }

WEFT_CUBLASLT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
WEFT_CUBLASLT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulDescCreate,
                      (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute,
                       cudaDataType_t scale),
                      (desc, compute, scale))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulDescSetAttribute,
                      (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                       const void* buf, size_t bytes),
                      (desc, attr, buf, bytes))
WEFT_CUBLASLT_FORWARD(cublasLtMatrixLayoutCreate,
                      (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows,
                       uint64_t cols, int64_t ld),
                      (layout, type, rows, cols, ld))
WEFT_CUBLASLT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
WEFT_CUBLASLT_FORWARD(cublasLtMatrixLayoutSetAttribute,
                      (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                       const void* buf, size_t bytes),
                      (layout, attr, buf, bytes))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                      (cublasLtMatmulPreference_t pref,
                       cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                       size_t bytes),
                      (pref, attr, buf, bytes))
WEFT_CUBLASLT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                      (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                       cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref,
                       int requested, cublasLtMatmulHeuristicResult_t results[],
                       int* returned),
                      (h, desc, a, b, c, d, pref, requested, results, returned))
WEFT_CUBLASLT_FORWARD(cublasLtMatmul,
                      (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                       const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                       cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                       cublasLtMatrixLayout_t c_layout, void* d,
                       cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                       void* workspace, size_t workspace_bytes, cudaStream_t stream),
                      (h, desc, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d,
                       d_layout, algo, workspace, workspace_bytes, stream))

// The status's description from cuBLAS; when cuBLAS could not be opened, why not.
extern "C" const char* cublasGetStatusString(cublasStatus_t status) {
  static const auto real =
      reinterpret_cast<decltype(&cublasGetStatusString)>(
          weft::cuda_lazy::cublas_symbol("cublasGetStatusString"));
  if (real == nullptr) return weft::cuda_lazy::cublas_load_error().c_str();
  return real(status);
}

// Tensor-core GEMM throughput ([Mixed precision], #30): weft's matmul invocation (a
// one-op Program on runtime/cuda's Executor: plan.h's calls through gemm.cc's
// cublasGemmEx, f32 accumulation) beside cuBLASLt's own best heuristic algorithm on the
// same row-major shapes, bf16 and f16, and f32 with TF32 (ExecutorOptions::tf32). Times
// are CUDA events around the GEMM alone (Executor::profile_step for weft), the median of
// --reps; prints TFLOP/s each and weft's share of cuBLASLt's (the goal: ≥ 80%
// on large GEMMs). Prints the reason and exits 0 without a GPU. A benchmark: it asserts
// nothing about time.
//
//   gemm_bench [--reps=20] [--shapes=MxNxK,...]

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cuda/executor.h"
#include "runtime/cuda/plan.h"
#include "runtime/tensor.h"

namespace weft::cuda {
namespace {

struct GemmShape {
  int64_t m, n, k;
};

/// C[m,n] = A[m,k]·B[k,n] in `dtype` as a Program of one library matmul.
Program matmul_program(const GemmShape& s, DType dtype) {
  const Type a{dtype, Shape{s.m, s.k}}, b{dtype, Shape{s.k, s.n}}, c{dtype, Shape{s.m, s.n}};
  Program p;
  p.name = "gemm";
  p.inputs = {{"a", a, InputKind::data}, {"b", b, InputKind::data}};
  Invocation inv;
  inv.kind = Invocation::Kind::library;
  inv.node.op = Op::Matmul;
  inv.label = "c";
  inv.operands = {BufferRef{Space::input, 0, 0, a}, BufferRef{Space::input, 1, 0, b}};
  inv.results = {BufferRef{Space::arena, -1, 0, c}};
  p.code = {inv};
  p.outputs = inv.results;
  p.arena_bytes = (static_cast<int64_t>(c.bytes()) + 255) / 256 * 256;
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// weft's GEMM: the median milliseconds of the matmul invocation and its describe().
std::optional<std::pair<double, std::string>> weft_ms(const GemmShape& s, DType dtype, bool tf32,
                                                      int reps) {
  StatusOr<std::unique_ptr<Executor>> ex =
      Executor::create(matmul_program(s, dtype), "", {}, {.tf32 = tf32});
  if (!ex.ok()) {
    std::fprintf(stderr, "weft: %s\n", ex.error().to_string().c_str());
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    Tensor t((*ex)->program().inputs[i].type);
    for (int64_t e = 0; e < t.numel(); ++e) t.set_double(e, ((e * 7 + i) % 13 - 6) / 8.0);
    if (!(*ex)->set_input(i, t).ok()) return std::nullopt;
  }
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    StatusOr<std::vector<double>> prof = (*ex)->profile_step();
    if (!prof.ok()) {
      std::fprintf(stderr, "weft: %s\n", prof.error().to_string().c_str());
      return std::nullopt;
    }
    if (r >= 2) ms.push_back((*prof)[0]);
  }
  std::string what = (*ex)->describe();
  what = what.substr(0, what.find('\n'));
  return std::pair{median(ms), what};
}

#define LT_CHECK(call)                                                             \
  do {                                                                             \
    const cublasStatus_t st = (call);                                              \
    if (st != CUBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "%s: %s\n", #call, cublasGetStatusString(st));          \
      return std::nullopt;                                                         \
    }                                                                              \
  } while (0)

/// cuBLASLt's best heuristic algorithm for the same row-major GEMM (as the column-major
/// Cᵀ = Bᵀ·Aᵀ, plan.h's trick), 32 MiB of workspace: median milliseconds.
std::optional<double> cublaslt_ms(const GemmShape& s, DType dtype, bool tf32, int reps) {
  const cudaDataType_t type = dtype == DType::bf16  ? CUDA_R_16BF
                              : dtype == DType::f16 ? CUDA_R_16F
                                                    : CUDA_R_32F;
  const cublasComputeType_t compute =
      dtype == DType::f32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const size_t esize = dtype_size(dtype), workspace_bytes = size_t{32} << 20;
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  cudaMalloc(&a, s.m * s.k * esize);
  cudaMalloc(&b, s.k * s.n * esize);
  cudaMalloc(&c, s.m * s.n * esize);
  cudaMalloc(&workspace, workspace_bytes);
  cudaMemset(a, 0, s.m * s.k * esize);
  cudaMemset(b, 0, s.k * s.n * esize);
  std::optional<double> result;
  [&]() -> std::optional<double> {
    cublasLtHandle_t lt;
    LT_CHECK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t desc;
    LT_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, lc;  // cuBLASLt's A is B [n x k], its B is A [k x m]
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, type, s.n, s.k, s.n));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, type, s.k, s.m, s.k));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, type, s.n, s.m, s.n));
    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heuristic, &found));
    if (found == 0) return std::nullopt;
    const float one = 1, zero = 0;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<double> ms;
    for (int r = 0; r < reps + 2; ++r) {
      cudaEventRecord(start, stream);
      LT_CHECK(cublasLtMatmul(lt, desc, &one, b, la, a, lb, &zero, c, lc, c, lc,
                              &heuristic.algo, workspace, workspace_bytes, stream));
      cudaEventRecord(stop, stream);
      cudaEventSynchronize(stop);
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      if (r >= 2) ms.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(lt);
    return result = median(ms);
  }();
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(workspace);
  return result;
}

std::vector<GemmShape> parse_shapes(const std::string& text) {
  std::vector<GemmShape> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    GemmShape s{};
    if (std::sscanf(item.c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) == 3) out.push_back(s);
  }
  return out;
}

int run(int argc, char** argv) {
  int reps = 20;
  // Large square GEMMs (the goal's), the transformer's projections and MLP's layers
  // (bench/models.h, paper preset), batch folded into m.
  std::vector<GemmShape> shapes = parse_shapes(
      "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,16384x3072x768,"
      "16384x768x3072,128x256x784");
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--reps=", 0) == 0) reps = std::atoi(a.c_str() + 7);
    else if (a.rfind("--shapes=", 0) == 0) shapes = parse_shapes(a.substr(9));
    else {
      std::fprintf(stderr, "usage: gemm_bench [--reps=N] [--shapes=MxNxK,...]\n");
      return 2;
    }
  }
  if (!available()) {
    std::printf("gemm_bench: no GPU: %s\n", unavailable_reason().c_str());
    return 0;
  }
  std::printf("%-7s %-20s %10s %10s %9s  %s\n", "dtype", "m x n x k", "weft TF/s", "cuBLASLt",
              "weft/Lt", "weft's call");
  for (const auto& [dtype, tf32] : {std::pair{DType::bf16, false}, std::pair{DType::f16, false},
                                    std::pair{DType::f32, true}}) {
    for (const GemmShape& s : shapes) {
      const double flops = 2.0 * s.m * s.n * s.k;
      const auto weft = weft_ms(s, dtype, tf32, reps);
      const auto lt = cublaslt_ms(s, dtype, tf32, reps);
      const double weft_tf = weft ? flops / (weft->first * 1e-3) / 1e12 : 0;
      const double lt_tf = lt ? flops / (*lt * 1e-3) / 1e12 : 0;
      const std::string name = std::string(dtype_name(dtype)) + (tf32 ? "/tf32" : "");
      std::printf("%-7s %6ldx%6ldx%6ld %10.1f %10.1f %8.0f%%  %s\n", name.c_str(), s.m, s.n,
                  s.k, weft_tf, lt_tf, lt_tf > 0 ? 100 * weft_tf / lt_tf : 0.0,
                  weft ? weft->second.c_str() : "(failed)");
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::cuda

int main(int argc, char** argv) { return weft::cuda::run(argc, argv); }

// The matrix-multiply core of the reference interpreter (matmul and, through im2col,
// convolution). Plain C++ that GCC vectorizes: blocked i-k-j loops whose inner loop
// runs over contiguous rows of B and C, four rows of C at a time so that each loaded
// row of B is used four times. Built twice (x86-64-v3 with AVX2/FMA, and baseline) and
// picked at load time, so it is fast on current machines and still runs anywhere.

#include <algorithm>

#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

template <typename T>
__attribute__((always_inline)) inline void gemm_body(int64_t m, int64_t n, int64_t k,
                                                     const T* __restrict a,
                                                     const T* __restrict b, T* __restrict c,
                                                     bool accumulate) {
  if (!accumulate) std::fill(c, c + m * n, T{});
  // Blocks sized so that a K-block of B rows (kKb × kNb) stays in L2; measured on Zen 4,
  // kKb = 256 halved the throughput of 128×784×256 while 64..128 kept ~50 GFLOP/s.
  constexpr int64_t kKb = 128;
  constexpr int64_t kNb = 512;
  for (int64_t j0 = 0; j0 < n; j0 += kNb) {
    const int64_t nb = std::min(kNb, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKb) {
      const int64_t p1 = std::min(k, p0 + kKb);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        T* __restrict c0 = c + (i + 0) * n + j0;
        T* __restrict c1 = c + (i + 1) * n + j0;
        T* __restrict c2 = c + (i + 2) * n + j0;
        T* __restrict c3 = c + (i + 3) * n + j0;
        for (int64_t p = p0; p < p1; ++p) {
          const T a0 = a[(i + 0) * k + p], a1 = a[(i + 1) * k + p];
          const T a2 = a[(i + 2) * k + p], a3 = a[(i + 3) * k + p];
          const T* __restrict bp = b + p * n + j0;
          for (int64_t j = 0; j < nb; ++j) {
            const T bv = bp[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < m; ++i) {
        T* __restrict ci = c + i * n + j0;
        for (int64_t p = p0; p < p1; ++p) {
          const T av = a[i * k + p];
          const T* __restrict bp = b + p * n + j0;
          for (int64_t j = 0; j < nb; ++j) ci[j] += av * bp[j];
        }
      }
    }
  }
}

}  // namespace

__attribute__((target_clones("arch=x86-64-v3", "default"))) void gemm(
    int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
    bool accumulate) {
  gemm_body(m, n, k, a, b, c, accumulate);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void gemm(
    int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c,
    bool accumulate) {
  gemm_body(m, n, k, a, b, c, accumulate);
}

}  // namespace weft::reference

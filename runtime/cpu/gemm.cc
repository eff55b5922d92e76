// The GEMM core of the CPU runtime and the matmul kernel built on it.
//
// How the pool and oneDNN share the cores. Debian's oneDNN is built on the OpenMP
// runtime, which would start its own team of threads on each sgemm call and keep them
// spinning afterwards: a second pool fighting weft's ThreadPool for the same 2 cores
// (ENVIRONMENT.md). So oneDNN never parallelizes here. Each GEMM is cut into the pool's
// chunks (rows of C, or column blocks when C has few rows), and every chunk calls
// dnnl_sgemm on its own thread after `use_one_omp_thread()` has set that thread's
// OpenMP thread count to 1 (the count is a per-thread setting in OpenMP, so the worker
// threads and the caller each set it the first time they run a chunk). With one
// thread, oneDNN runs inline and OpenMP never creates a team; contraction_test checks
// that no thread appears in /proc/self/task. The cut is a pure function of the shapes
// and the pool's thread count, and each element of C is computed by one call, so the
// results are bitwise reproducible for a given thread count.

#include <dnnl.h>
#include <omp.h>

#include <algorithm>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/matmul_geometry.h"

namespace weft::cpu {

void use_one_omp_thread() {
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
}

GemmPlan GemmPlan::single(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  GemmPlan p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = trans_a ? m : k;
  p.ldb = trans_b ? k : n;
  p.ldc = n;
  p.c_stride = m * n;
  return p;
}

std::string GemmPlan::describe(bool f32) const {
  std::string s = f32 ? "onednn sgemm " : "loop dgemm ";
  if (trans_a || trans_b) s += std::string(trans_a ? "T" : "N") + (trans_b ? "T " : "N ");
  s += std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (batch() > 1) s += " batch " + std::to_string(batch());
  return s;
}

template <>
void gemm_serial<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // oneDNN rejects k = 0; C = beta·C.
    if (beta == 0.0f) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  use_one_omp_thread();
  const dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f,
                                     a, lda, b, ldb, beta, c, ldc);
  WEFT_CHECK(s == dnnl_success, "dnnl_sgemm failed");
}

template <>
void gemm_serial<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         const double* a, int64_t lda, const double* b, int64_t ldb,
                         double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    double* row = c + i * ldc;
    if (beta == 0.0) std::fill(row, row + n, 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + p];
      } else {
        const double* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
    }
  }
}

namespace {

// Column chunks are cut in blocks of this many columns (one AVX-512 vector of f32).
constexpr int64_t kColumnBlock = 16;

}  // namespace

bool cuts_columns(const GemmPlan& p, int threads) {
  // Few rows but wide: cut the columns instead, in blocks of kColumnBlock.
  // With B transposed each chunk packs the part of B it reads, so cutting the columns
  // lets each thread pack only its share.
  const bool wide = p.n >= 2 * kColumnBlock * threads;
  return wide && (p.batch() * p.m < 4 * threads || (p.trans_b && p.batch() == 1));
}

template <typename T>
void run_gemm(ThreadPool& pool, const GemmPlan& p, const T* a, const T* b, T* c) {
  const T beta = p.accumulate ? T{1} : T{0};
  const int64_t rows = p.batch() * p.m;
  const int64_t row_flops = std::max<int64_t>(1, 2 * p.n * p.k);
  if (cuts_columns(p, pool.num_threads())) {
    const int64_t blocks = (p.n + kColumnBlock - 1) / kColumnBlock;
    const int64_t grain = std::max<int64_t>(
        1, kMinChunkFlops / std::max<int64_t>(1, 2 * rows * p.k * kColumnBlock));
    pool.parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
      const int64_t j0 = begin * kColumnBlock, j1 = std::min(p.n, end * kColumnBlock);
      for (int64_t i = 0; i < p.batch(); ++i) {
        const T* bi = b + p.b_offsets[i] + (p.trans_b ? j0 * p.ldb : j0);
        gemm_serial<T>(p.trans_a, p.trans_b, p.m, j1 - j0, p.k, a + p.a_offsets[i], p.lda, bi,
                       p.ldb, beta, c + i * p.c_stride + j0, p.ldc);
      }
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kMinChunkFlops / row_flops);
  pool.parallel_for(rows, grain,
                    [&](int64_t begin, int64_t end) { gemm_rows<T>(p, a, b, c, begin, end); });
}

template <typename T>
void gemm_rows(const GemmPlan& p, const T* a, const T* b, T* c, int64_t begin, int64_t end) {
  const T beta = p.accumulate ? T{1} : T{0};
  // [begin, end) spans the rows of one or more batch entries: one call per entry.
  while (begin < end) {
    const int64_t i = begin / p.m, r0 = begin % p.m;
    const int64_t r1 = std::min(p.m, r0 + (end - begin));
    const T* ai = a + p.a_offsets[i] + (p.trans_a ? r0 : r0 * p.lda);
    gemm_serial<T>(p.trans_a, p.trans_b, r1 - r0, p.n, p.k, ai, p.lda, b + p.b_offsets[i], p.ldb,
                   beta, c + i * p.c_stride + r0 * p.ldc, p.ldc);
    begin += r1 - r0;
  }
}

template void gemm_rows<float>(const GemmPlan&, const float*, const float*, float*, int64_t,
                               int64_t);
template void gemm_rows<double>(const GemmPlan&, const double*, const double*, double*, int64_t,
                                int64_t);

template void run_gemm<float>(ThreadPool&, const GemmPlan&, const float*, const float*, float*);
template void run_gemm<double>(ThreadPool&, const GemmPlan&, const double*, const double*,
                               double*);

namespace {

template <typename T>
class MatmulKernel final : public BoundKernel {
 public:
  MatmulKernel(GemmPlan plan, const void* a, const void* b, void* c)
      : plan_(std::move(plan)), a_(static_cast<const T*>(a)), b_(static_cast<const T*>(b)),
        c_(static_cast<T*>(c)) {}

  Status run(ThreadPool& pool) override {
    run_gemm<T>(pool, plan_, a_, b_, c_);
    return Status::ok_status();
  }

  std::string describe() const override { return plan_.describe(std::is_same_v<T, float>); }

 private:
  GemmPlan plan_;
  const T* a_;
  const T* b_;
  T* c_;
};


}  // namespace

StatusOr<bool> plan_matmul(const LibraryCall& call, GemmPlan& plan) {
  StatusOr<std::optional<MatmulGeometry>> geometry =
      matmul_geometry(call.node, call.operand_types[0], call.operand_types[1]);
  if (!geometry.ok()) return call_error(call, geometry.error().message);
  if (!geometry->has_value()) return false;
  const MatmulGeometry& geo = **geometry;
  const bool trans_a = geo.trans_a, trans_b = geo.trans_b;
  const int64_t m = geo.m, k = geo.k, n = geo.n;
  const Shape& batch = geo.batch;
  WEFT_CHECK(call.result_type.numel() == batch.numel() * m * n,
             "matmul: result type does not match the operands");
  plan = GemmPlan::single(m, n, k, trans_a, trans_b);
  const std::vector<int64_t>& ea = geo.a_entries;
  const std::vector<int64_t>& eb = geo.b_entries;
  const bool b_shared = std::all_of(eb.begin(), eb.end(), [](int64_t e) { return e == 0; });
  bool a_dense = true;
  for (size_t i = 0; i < ea.size(); ++i) a_dense = a_dense && ea[i] == static_cast<int64_t>(i);
  if (b_shared && a_dense && !trans_a) {
    // [..., m, k] x [k, n]: the batch folds into the rows of one GEMM.
    plan.m = batch.numel() * m;
    plan.c_stride = plan.m * n;
  } else {
    plan.a_offsets.resize(ea.size());
    plan.b_offsets.resize(eb.size());
    for (size_t i = 0; i < ea.size(); ++i) {
      plan.a_offsets[i] = ea[i] * m * k;
      plan.b_offsets[i] = eb[i] * k * n;
    }
  }
  return true;
}

KernelOr make_matmul_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                            void* out) {
  if (call.operand_types[0].dtype == DType::bf16 && call.operand_types[1].dtype == DType::bf16) {
    return make_onednn_matmul_kernel(call, in, out);
  }
  GemmPlan plan;
  WEFT_ASSIGN_OR_RETURN(bool planned, plan_matmul(call, plan));
  if (!planned) return std::unique_ptr<BoundKernel>();
  if (call.operand_types[0].dtype == DType::f32) {
    return std::unique_ptr<BoundKernel>(new MatmulKernel<float>(std::move(plan), in[0], in[1], out));
  }
  return std::unique_ptr<BoundKernel>(new MatmulKernel<double>(std::move(plan), in[0], in[1], out));
}

}  // namespace weft::cpu

// A GEMM followed by a generated elementwise epilogue in one invocation (a `fused` node
// of kind "contraction", passes/fuse_contraction_epilogue.h).
//
// The product C and the epilogue's iteration space have the same elements in the same
// order (every epilogue member has C's shape), so a block of C's rows is a range of the
// epilogue's rows as soon as the block's boundaries fall on epilogue row boundaries.
// The epilogue's rows have `row_length` elements and C's rows `n`, so blocks are cut in
// multiples of g = row_length / gcd(row_length, n) GEMM rows (g = 1 for the usual
// [M, N] + bias[N] epilogue, whose rows are C's rows). Each chunk of the pool computes
// its block with gemm_rows (oneDNN sgemm on one thread, as run_gemm's row split) and
// then calls the epilogue on the same rows while they are in cache: one pass over
// memory instead of the product written, then re-read by a second kernel.
//
// When there are too few blocks to give every thread one, or when run_gemm would cut
// the columns of an x·Wᵀ with fewer rows than columns (each thread then packs its share
// of W and all of the smaller x; a row split would make each pack all of W: measured by
// codegen/epilogue_bench as "separate" vs "rows+sep"), the GEMM runs as run_gemm splits
// it and the epilogue follows over its own rows (still one invocation). Either
// way the split is a pure function of the shapes and the thread count, and the
// epilogue is elementwise (each element computed once, from the same inputs, whatever
// the split), so results are bitwise reproducible for a given thread count.
//
// An f16 or bf16 GEMM (both operands and C of one half dtype) runs its matmul kernel —
// oneDNN's bf16 matmul, or f32 on converted copies (half.cc) — and then the epilogue
// over C's rows, the kAfterGemm way.

#include <numeric>

#include "runtime/cpu/contraction_internal.h"

namespace weft::cpu {
namespace {

// The epilogue over all its rows, split over the pool.
void run_epilogue(ThreadPool& pool, const Epilogue& e) {
  void* const* buffers = e.buffers;
  GeneratedFn fn = e.fn;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, e.row_length));
  pool.parallel_for(e.rows, grain, [=](int64_t begin, int64_t end) { fn(buffers, begin, end); });
}

}  // namespace

template <typename T>
void run_gemm_epilogue(ThreadPool& pool, const GemmPlan& p, const T* a, const T* b, T* c,
                       const Epilogue& e, EpilogueSplit split) {
  const int64_t rows = p.batch() * p.m;
  WEFT_CHECK(e.rows * e.row_length == rows * p.n, "gemm epilogue: iteration spaces differ");
  void* const* buffers = e.buffers;
  GeneratedFn fn = e.fn;
  const int64_t g = rows * p.n == 0 ? 1 : e.row_length / std::gcd(e.row_length, p.n);
  const int64_t blocks = (rows + g - 1) / g;
  // A row split makes every thread pack all of B (rows·K of A are packed once in all),
  // a column split all of A: where run_gemm cuts columns for x·Wᵀ and A is the smaller
  // operand (fewer rows than columns: the MLP's 128x784 · 784x256), its split stays.
  const bool keep_columns = cuts_columns(p, pool.num_threads()) && rows < p.n;
  if (split == EpilogueSplit::kAfterGemm || blocks < pool.num_threads() || keep_columns) {
    run_gemm<T>(pool, p, a, b, c);
    run_epilogue(pool, e);
    return;
  }
  const int64_t block_flops = std::max<int64_t>(1, 2 * p.n * p.k * g);
  const int64_t grain = std::max<int64_t>(1, kMinChunkFlops / block_flops);
  const int64_t n = p.n, row_length = e.row_length, erows = e.rows;
  pool.parallel_for(blocks, grain, [&, fn, buffers](int64_t begin, int64_t end) {
    const int64_t r0 = begin * g, r1 = std::min(rows, end * g);
    gemm_rows<T>(p, a, b, c, r0, r1);
    fn(buffers, r0 * n / row_length, r1 == rows ? erows : r1 * n / row_length);
  });
}

template void run_gemm_epilogue<float>(ThreadPool&, const GemmPlan&, const float*, const float*,
                                       float*, const Epilogue&, EpilogueSplit);
template void run_gemm_epilogue<double>(ThreadPool&, const GemmPlan&, const double*,
                                        const double*, double*, const Epilogue&, EpilogueSplit);

namespace {

template <typename T>
class GemmEpilogueKernel final : public BoundKernel {
 public:
  GemmEpilogueKernel(GemmPlan plan, const void* a, const void* b, void* c, GeneratedFn fn,
                     std::vector<void*> buffers, int64_t rows, int64_t row_length,
                     std::string name)
      : plan_(std::move(plan)), a_(static_cast<const T*>(a)), b_(static_cast<const T*>(b)),
        c_(static_cast<T*>(c)), buffers_(std::move(buffers)), name_(std::move(name)) {
    epilogue_ = Epilogue{fn, buffers_.data(), rows, row_length};
  }

  Status run(ThreadPool& pool) override {
    run_gemm_epilogue<T>(pool, plan_, a_, b_, c_, epilogue_, EpilogueSplit::kRowBlocks);
    return Status::ok_status();
  }

  std::string describe() const override {
    return plan_.describe(std::is_same_v<T, float>) + " + " + name_;
  }

 private:
  GemmPlan plan_;
  const T* a_;
  const T* b_;
  T* c_;
  std::vector<void*> buffers_;
  std::string name_;
  Epilogue epilogue_;
};

// A half GEMM's kernel, then the epilogue over C's rows.
class HalfGemmEpilogueKernel final : public BoundKernel {
 public:
  HalfGemmEpilogueKernel(std::unique_ptr<BoundKernel> gemm, GeneratedFn fn,
                         std::vector<void*> buffers, int64_t rows, int64_t row_length,
                         std::string name)
      : gemm_(std::move(gemm)), buffers_(std::move(buffers)), name_(std::move(name)) {
    epilogue_ = Epilogue{fn, buffers_.data(), rows, row_length};
  }

  Status run(ThreadPool& pool) override {
    ensure_scratch();
    WEFT_RETURN_IF_ERROR(gemm_->run(pool));
    run_epilogue(pool, epilogue_);
    return Status::ok_status();
  }

  std::string describe() const override { return gemm_->describe() + " + " + name_; }
  int64_t scratch_bytes() const override { return gemm_->scratch_bytes(); }

 private:
  void bind_scratch(std::byte* scratch) override { gemm_->set_scratch(scratch); }

  std::unique_ptr<BoundKernel> gemm_;
  std::vector<void*> buffers_;
  std::string name_;
  Epilogue epilogue_;
};

bool is_half_gemm(const LibraryCall& gemm) {
  return is_half(gemm.result_type.dtype) && gemm.operand_types[0].dtype == gemm.result_type.dtype &&
         gemm.operand_types[1].dtype == gemm.result_type.dtype;
}

}  // namespace

bool supports_gemm_epilogue(const LibraryCall& gemm) {
  GemmPlan plan;
  const bool half = is_half_gemm(gemm);
  StatusOr<bool> planned = plan_matmul(half ? widened_call(gemm) : gemm, plan);
  return planned.ok() && *planned &&
         (half || gemm.result_type.dtype == gemm.operand_types[0].dtype);
}

StatusOr<std::unique_ptr<BoundKernel>> make_gemm_epilogue_kernel(
    const LibraryCall& gemm, const void* a, const void* b, void* c, GeneratedFn epilogue,
    std::vector<void*> buffers, int64_t rows, int64_t row_length, std::string name) {
  if (is_half_gemm(gemm)) {
    if (!supports_gemm_epilogue(gemm)) return std::unique_ptr<BoundKernel>();
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<BoundKernel> matmul, make_library_kernel(gemm, {a, b}, c));
    return std::unique_ptr<BoundKernel>(new HalfGemmEpilogueKernel(
        std::move(matmul), epilogue, std::move(buffers), rows, row_length, std::move(name)));
  }
  GemmPlan plan;
  WEFT_ASSIGN_OR_RETURN(bool planned, plan_matmul(gemm, plan));
  if (!planned) return std::unique_ptr<BoundKernel>();
  if (gemm.operand_types[0].dtype == DType::f32) {
    return std::unique_ptr<BoundKernel>(new GemmEpilogueKernel<float>(
        std::move(plan), a, b, c, epilogue, std::move(buffers), rows, row_length,
        std::move(name)));
  }
  return std::unique_ptr<BoundKernel>(new GemmEpilogueKernel<double>(
      std::move(plan), a, b, c, epilogue, std::move(buffers), rows, row_length, std::move(name)));
}

}  // namespace weft::cpu

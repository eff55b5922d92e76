#pragma once
// Internal to the contraction-category kernels (contraction.cc dispatches to gemm.cc,
// conv.cc and pool.cc): the pool-partitioned GEMM core they share, and one factory per
// op family. gemm_bench uses the GEMM core directly for its transposed shapes.
//
//   GemmPlan plan = GemmPlan::single(/*m=*/128, /*n=*/256, /*k=*/784);
//   run_gemm<float>(pool, plan, x, w, y);   // y = x·w, split over the pool's chunks

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/conv_geometry.h"
#include "runtime/cpu/packed_weight.h"
#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {

/// A batch of row-major GEMMs C_i = op(A_i)·op(B_i) (+ C_i when `accumulate`), op()
/// transposing when trans_a / trans_b is set. Fixed when a kernel is bound.
struct GemmPlan {
  bool trans_a = false, trans_b = false, accumulate = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::vector<int64_t> a_offsets{0}, b_offsets{0};  ///< Per batch entry, in elements.
  int64_t c_stride = 0;                              ///< Elements between C_i and C_i+1.
  /// B is given pre-packed (packed_weight.h; ldb and trans_b then say nothing): read only
  /// by the bf16 oneDNN kernel (make_onednn_matmul_kernel), one B for the whole batch.
  bool b_packed = false;

  int64_t batch() const { return static_cast<int64_t>(a_offsets.size()); }
  /// What runs it, as the GEMM kernels' describe() says: "onednn sgemm" (`f32`) or "loop
  /// dgemm", the transposes when either is set ("NT"), m x n x k, and the batch when over 1:
  /// "onednn sgemm NT 64x256x784 batch 4".
  std::string describe(bool f32) const;
  /// One dense GEMM with the leading dimensions its transposes imply.
  static GemmPlan single(int64_t m, int64_t n, int64_t k, bool trans_a = false,
                         bool trans_b = false);
};

/// One GEMM on the calling thread: C = op(A)·op(B) + beta·C (beta 0 or 1; with beta 0, C
/// is only written). f32 goes to oneDNN limited to this thread; f64 is a plain loop.
template <typename T>
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                 int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

/// Runs every GEMM of `plan`, split over the pool's chunks (rows of all the batch's C
/// matrices together, or columns when there are few rows). The split depends only on
/// the plan and the pool's thread count, so results are bitwise reproducible.
template <typename T>
void run_gemm(ThreadPool& pool, const GemmPlan& plan, const T* a, const T* b, T* c);

/// Whether run_gemm cuts the columns of C over the pool rather than its rows (few rows
/// but wide, or a single x·Wᵀ wide enough to share the packing of W).
bool cuts_columns(const GemmPlan& plan, int threads);

/// Rows [begin, end) of every C_i of `plan` together (row r is row r % m of entry
/// r / m), computed on the calling thread: what one chunk of run_gemm's row split does.
template <typename T>
void gemm_rows(const GemmPlan& plan, const T* a, const T* b, T* c, int64_t begin, int64_t end);

/// A chunk should hold at least this many flops, so that waking a worker (about 1 µs
/// when it spins) costs little next to its share of the work.
inline constexpr int64_t kMinChunkFlops = int64_t{1} << 18;

/// The plan of a matmul call (its operands' batch broadcasting, transposes, a batch
/// folded into the rows where B is shared), or false when no CPU GEMM implements it
/// (not a matmul, a dtype other than f32/f64, a scalar operand). Errors: operands whose
/// shapes do not multiply.
StatusOr<bool> plan_matmul(const LibraryCall& call, GemmPlan& plan);

/// A generated elementwise kernel over a GEMM's result (gemm_epilogue.cc): `fn` over
/// `buffers`, `rows` rows of `row_length` elements, the product's elements in order.
struct Epilogue {
  GeneratedFn fn = nullptr;
  void* const* buffers = nullptr;
  int64_t rows = 0;
  int64_t row_length = 0;
};

/// How run_gemm_epilogue splits the work: kRowBlocks, each chunk's GEMM rows then the
/// epilogue on them (falling back to kAfterGemm when there are fewer aligned row blocks
/// than threads, or when run_gemm would cut the columns and C has fewer rows than
/// columns); kAfterGemm, run_gemm and then the epilogue split over its own rows.
enum class EpilogueSplit { kRowBlocks, kAfterGemm };

/// C = op(A)·op(B) for every GEMM of `plan`, then the epilogue on C.
template <typename T>
void run_gemm_epilogue(ThreadPool& pool, const GemmPlan& plan, const T* a, const T* b, T* c,
                       const Epilogue& epilogue, EpilogueSplit split);

/// Limits OpenMP (hence oneDNN) to the calling thread; cheap when already so.
void use_one_omp_thread();

enum class ConvOp { kForward, kBackwardInput, kBackwardWeight };

/// How a convolution kernel describes its op and sizes: "conv_backward_weight 16x3x3x3",
/// the op's name and the weight's shape (O, C/groups, kernel).
std::string conv_describe(ConvOp op, const ConvGeometry& g);

/// The f32 or bf16 (`dtype`, operands and result alike) convolution through oneDNN's
/// convolution primitives (conv_onednn.cc), or nullptr when oneDNN has no implementation
/// for it (for bf16: none but its slow reference one). Operands as the op's (x, w),
/// (gy, w) or (x, gy).
std::unique_ptr<BoundKernel> make_onednn_conv_kernel(ConvOp op, const ConvGeometry& g,
                                                     DType dtype, const void* in0,
                                                     const void* in1, void* out);

/// The bf16 matmul of `call` (bf16 operands; bf16 or f32 result) through oneDNN's matmul
/// primitive with f32 accumulation (matmul_onednn.cc), or nullptr when this CPU has no
/// native bf16 (native_bf16()) or oneDNN has only its reference implementation for it.
/// With `b_packed`, in[1] holds B pre-packed (packed_weight.h: packed_weight_layout(call)
/// says how), and every case that would return nullptr is an error instead, since no
/// other kernel reads that layout.
KernelOr make_onednn_matmul_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                                   void* out, bool b_packed = false);

/// How the bf16 matmul kernel (make_onednn_matmul_kernel) cuts C into its parts, one
/// per pool chunk. oneDNN's bf16 brgemm packs the part of B a part reads in every call,
/// so a row split packs all of B in each part, a column split only the part's columns.
enum class Bf16Split {
  kRows,     ///< Blocks of rows of one GEMM, or runs of whole matrices of a batch.
  kColumns,  ///< Blocks of whole 64-column blocks of C: all rows of every batch entry.
};

/// The split of `plan` over `parts` parts (the rule, matmul_onednn.cc): columns where
/// rows are few and C has at least one 64-column block per part, rows otherwise.
/// `forced` (WEFT_BF16_SPLIT, bf16_split_from_env) overrides the rule, except that a C of
/// a single 64-column block is never cut by columns. Depends only on its arguments.
Bf16Split bf16_split(const GemmPlan& plan, int parts, std::optional<Bf16Split> forced);

/// The split WEFT_BF16_SPLIT asks for: "rows" or "columns", or nullopt when it is unset
/// or empty (the rule decides). Errors: any other value.
StatusOr<std::optional<Bf16Split>> bf16_split_from_env();

/// The number of parts the bf16 matmul kernel cuts C into: default_num_threads(), at
/// least 2 (so that the split, and so the bits, are those of a 2-thread pool on one).
int bf16_split_parts();

/// The layout in which make_onednn_matmul_kernel reads `call`'s B pre-packed, or nullopt
/// when it cannot: not a bf16 matmul, a B per batch entry, an empty product, or a CPU
/// without AVX512_BF16. The one fact a lowering that stores a weight packed would ask.
std::optional<PackedWeightLayout> packed_weight_layout(const LibraryCall& call);

/// The convolution through im2col and gemm_serial (conv.cc), for f32 or f64.
std::unique_ptr<BoundKernel> make_im2col_conv_kernel(ConvOp op, const ConvGeometry& g,
                                                     DType dtype, const void* in0,
                                                     const void* in1, void* out);

KernelOr make_matmul_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                            void* out);
KernelOr make_conv_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                          void* out);
KernelOr make_pool_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                          void* out);

}  // namespace weft::cpu

// bf16 matmuls through oneDNN's matmul primitive: bf16 operands, f32 accumulation (the
// AVX512_BF16 dot products), a bf16 or f32 result as the node's result type says, on a
// CPU with AVX512_BF16 (native_bf16(); elsewhere make_library_kernel converts to f32,
// half.cc).
//
// As conv_onednn.cc does, everything is created when the kernel is bound, with oneDNN
// planning for one OpenMP thread: C is cut into parts — blocks of rows of a single GEMM,
// runs of whole matrices of a batch, or blocks of whole 64-column blocks of C
// (bf16_split, below) — as many as bf16_split_parts() (default_num_threads(), at least
// 2), each part with its primitive (one per distinct block shape), its user-mode
// scratchpad in the kernel's scratch and its stream. Transposed operands are read in
// place through their strides. run() executes the parts on the pool's chunks and
// allocates nothing; each element of C is computed by one primitive call, so results are
// bitwise reproducible for a given part count.
//
// The split (bf16_split, the one rule; WEFT_BF16_SPLIT=rows|columns overrides it for
// A/B runs). oneDNN's bf16 brgemm packs B into its blocked layout (packed_weight.h) in
// every call, so each row part packs all of B; a column part reads only its columns of B
// and packs only those. Columns are chosen where rows are few (a GEMM of at most
// kColumnSplitMaxRows rows, or a batch of fewer entries than parts), C has a 64-column
// block per part, and each part reads its block of B in place: B transposed (x·Wᵀ, the
// block is a dense run of W's rows) or pre-packed. Per call, least of 400 calls
// (half_bench --splits; bench/RESULTS.md "[Mixed precision] #30: bf16 GEMMs split by
// columns"): mlp's x·Wᵀ at 64 rows 0.91–0.96× the row split on 1 and 2 threads,
// residual_tower's 0.87–0.97×. Everything else was slower cut by columns and keeps its
// rows: a plain B (dY·W), whose strided block brgemm declines (it would pick gemm:jit),
// costs more packed by the part first (packs_b, oneDNN's reorder) than packed inside
// brgemm (1.05–1.27×); a GEMM of 512 rows 1.02–1.13× on one thread; a transposed A
// copied dense whole by every part 1.17–1.21× on one thread. A column block of C is strided, which brgemm declines too, so a
// part writes it dense in its scratch and copies it out (a oneDNN reorder).
//
// The same bits either way: every element of C is one brgemm dot product over all of K
// in the same order, whichever block it lies in (matmul_bf16_test, `HalfMatmulSplitTest`). The
// exception is a transposed A read in place (K > kCopyTransposedAMaxK): its row blocks
// are strided columns, which brgemm declines (gemm:jit computes them), while a column
// part's whole A is dense and brgemm takes it, with other bits; such a GEMM always keeps
// its rows.
//
// A transposed A (the weight gradient dYᵀ·x) cut into row blocks is a strided block of
// columns, which oneDNN's bf16 brgemm declines (it then picks its older gemm:jit). Where
// K is short (at most kCopyTransposedAMaxK: the suite's weight gradients over a batch of
// 64 rows), each part first copies its block into a dense [rows, K] buffer in the
// scratch (a oneDNN reorder) and multiplies that with brgemm: on one core, min of 200
// calls (runtime/cpu/half_bench, "training GEMMs"), 512x512x64 85 -> 77 us per part,
// 256x256x64 22.1 -> 20.8, 512x512x128 160 -> 152; at K = 512 (the transformer's
// 128x512x512) the two are equal, so longer K keeps the strided read. The copy is
// exact and each element of C is still one primitive call's.
//
// A B given pre-packed (GemmPlan::b_packed; packed_weight.h) is described to oneDNN in
// its blocked layout (format tag BA16a64b2a), so brgemm reads it as it is instead of
// packing it in every part of every call; the products are the same bits (matmul_bf16_test,
// `PrePackedWeightGivesTheSameBits`).

#include <dnnl.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/onednn_internal.h"

namespace weft::cpu {
namespace {

using dnnl::memory;
using onednn::cpu_engine;
using onednn::Part;
using onednn::Scratch;
using onednn::user_scratchpad;

// The longest K for which a transposed A is copied dense before the product (above).
constexpr int64_t kCopyTransposedAMaxK = 128;
// The most rows of a single GEMM that bf16_split cuts by columns (above).
constexpr int64_t kColumnSplitMaxRows = 128;

class OnednnMatmulKernel final : public BoundKernel {
 public:
  OnednnMatmulKernel(GemmPlan plan, DType result, const void* a, const void* b, void* c,
                     Bf16Split split)
      : plan_(std::move(plan)),
        a_(static_cast<const uint16_t*>(a)),
        b_(static_cast<const uint16_t*>(b)),
        c_(static_cast<char*>(c)),
        c_type_(result == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16),
        copy_a_(plan_.trans_a && plan_.batch() == 1 && plan_.k <= kCopyTransposedAMaxK),
        split_(split) {
    use_one_omp_thread();  // oneDNN plans its primitives for the creating thread's count.
    const int slots = bf16_split_parts();
    if (split_ == Bf16Split::kColumns) {
      const int64_t block = PackedWeightLayout::kColumnBlock;
      const int64_t block_flops = 2 * plan_.batch() * plan_.m * plan_.k * block;
      const Partition blocks = Partition::make((plan_.n + block - 1) / block,
                                               kMinChunkFlops / std::max<int64_t>(1, block_flops), slots);
      for (int s = 0; s < blocks.num_chunks; ++s) {
        const int64_t j0 = blocks.begin(s) * block, j1 = std::min(plan_.n, blocks.end(s) * block);
        add_part({0, plan_.batch(), 0, plan_.m, j0, j1 - j0});
      }
    } else if (plan_.batch() == 1) {
      const int64_t grain = std::max<int64_t>(1, kMinChunkFlops / std::max<int64_t>(1, 2 * plan_.n * plan_.k));
      const Partition rows = Partition::make(plan_.m, grain, slots);
      for (int s = 0; s < rows.num_chunks; ++s) {
        add_part({0, 1, rows.begin(s), rows.end(s) - rows.begin(s), 0, plan_.n});
      }
    } else {
      const Partition entries = Partition::make(plan_.batch(), 1, slots);
      for (int s = 0; s < entries.num_chunks; ++s) {
        add_part({entries.begin(s), entries.end(s), 0, plan_.m, 0, plan_.n});
      }
    }
  }

  int64_t scratch_bytes() const override { return scratch_.bytes; }

  Status run(ThreadPool& pool) override {
    ensure_scratch();
    onednn::run_parts(pool, parts_);
    return Status::ok_status();
  }

  std::string describe() const override {
    std::string s = "onednn bf16 matmul ";
    if (plan_.trans_a || plan_.trans_b) {
      s += std::string(plan_.trans_a ? "T" : "N") + (plan_.trans_b ? "T " : "N ");
    }
    s += std::to_string(plan_.m) + "x" + std::to_string(plan_.n) + "x" + std::to_string(plan_.k);
    if (plan_.batch() > 1) s += " batch " + std::to_string(plan_.batch());
    return s + " " + impl_ + (split_ == Bf16Split::kColumns ? " (columns split)" : "") +
           (copy_a_ ? " (A copied dense)" : "") +
           (plan_.b_packed ? " (B pre-packed)" : "");
  }

  /// Whether oneDNN chose its reference (non-JIT) implementation.
  bool uses_reference() const { return impl_.rfind("ref", 0) == 0; }

 private:
  void bind_scratch(std::byte* scratch) override { scratch_.bind(scratch); }

  // A's block of `rows` rows as it lies in memory.
  memory::desc a_desc(int64_t rows) const {
    return {{rows, plan_.k}, memory::data_type::bf16,
            plan_.trans_a ? memory::dims{1, plan_.lda} : memory::dims{plan_.lda, 1}};
  }
  // The A operand the primitive reads: the block itself, or its dense copy.
  memory::desc product_a_desc(int64_t rows) const {
    if (!copy_a_) return a_desc(rows);
    return {{rows, plan_.k}, memory::data_type::bf16, memory::dims{plan_.k, 1}};
  }
  // B's block of `cols` columns as it lies in memory (packed or plain).
  memory::desc b_desc(int64_t cols) const {
    if (plan_.b_packed) return packed_b_desc(cols);
    return {{plan_.k, cols}, memory::data_type::bf16,
            plan_.trans_b ? memory::dims{1, plan_.ldb} : memory::dims{plan_.ldb, 1}};
  }
  static_assert(PackedWeightLayout::kColumnBlock == 64, "BA16a64b2a's column block");
  memory::desc packed_b_desc(int64_t cols) const {
    return {{plan_.k, cols}, memory::data_type::bf16, memory::format_tag::BA16a64b2a};
  }
  // Whether a part of the column split packs its block of B itself first: a block of a
  // plain (not transposed) B is strided, which oneDNN's brgemm declines (it picks its
  // older gemm:jit, other bits), so the part reorders it into the layout brgemm would pack
  // it into anyway (packed_weight.h) and the product reads that.
  bool packs_b(int64_t cols) const {
    if (split_ != Bf16Split::kColumns || plan_.b_packed) return false;
    return plan_.trans_b ? plan_.ldb != plan_.k : plan_.ldb != cols;
  }
  // The B operand the primitive reads: the block itself, or its packed copy.
  memory::desc product_b_desc(int64_t cols) const {
    return packs_b(cols) ? packed_b_desc(cols) : b_desc(cols);
  }
  // Where B's column `j0` (a multiple of the packed layout's column block) starts.
  int64_t b_column_offset(int64_t j0) const {
    if (plan_.b_packed) return PackedWeightLayout{plan_.k, plan_.n}.offset(0, j0);
    return plan_.trans_b ? j0 * plan_.ldb : j0;
  }
  memory::desc c_desc(int64_t rows, int64_t cols) const {
    return {{rows, cols}, c_type_, memory::dims{plan_.ldc, 1}};
  }
  // The C the primitive writes: the block itself, or (a block of columns, which oneDNN's
  // brgemm declines as a strided destination) a dense [rows, cols] buffer copied out.
  bool copies_c(int64_t cols) const { return split_ == Bf16Split::kColumns && cols != plan_.ldc; }
  memory::desc product_c_desc(int64_t rows, int64_t cols) const {
    if (!copies_c(cols)) return c_desc(rows, cols);
    return {{rows, cols}, c_type_, memory::dims{cols, 1}};
  }

  // The primitive for blocks of `rows` x `cols`, created once per block shape.
  const dnnl::matmul::primitive_desc& primitive_desc(int64_t rows, int64_t cols) {
    auto it = pds_.find({rows, cols});
    if (it == pds_.end()) {
      dnnl::matmul::primitive_desc pd(
          {product_a_desc(rows), product_b_desc(cols), product_c_desc(rows, cols)},
                                      user_scratchpad(), cpu_engine());
      impl_ = pd.impl_info_str();
      it = pds_.emplace(std::pair{rows, cols}, pd).first;
    }
    return it->second;
  }

  // A part: rows [r0, r0 + rows) x columns [j0, j0 + cols) of C_i for every batch entry
  // i in [e0, e1).
  struct Block {
    int64_t e0, e1, r0, rows, j0, cols;
  };
  void add_part(const Block& blk) {
    const dnnl::matmul::primitive_desc& pd = primitive_desc(blk.rows, blk.cols);
    const dnnl::matmul primitive(pd);
    Part part;
    std::optional<memory> scratchpad;
    if (pd.scratchpad_desc().get_size() > 0) scratchpad = scratch_.make(pd.scratchpad_desc());
    const int64_t c_size = c_type_ == memory::data_type::f32 ? 4 : 2;
    // One dense C buffer serves every batch entry of the part (they run in turn).
    std::optional<memory> dense_c;
    if (copies_c(blk.cols)) dense_c = scratch_.make(product_c_desc(blk.rows, blk.cols));
    std::optional<memory> packed_b;  // Likewise one packed B block, when the part packs it.
    if (packs_b(blk.cols)) packed_b = scratch_.make(product_b_desc(blk.cols));
    for (int64_t i = blk.e0; i < blk.e1; ++i) {
      const uint16_t* a = a_ + plan_.a_offsets[i] + (plan_.trans_a ? blk.r0 : blk.r0 * plan_.lda);
      const uint16_t* b = b_ + plan_.b_offsets[i] + b_column_offset(blk.j0);
      char* c = c_ + (i * plan_.c_stride + blk.r0 * plan_.ldc + blk.j0) * c_size;
      memory src(a_desc(blk.rows), cpu_engine(), const_cast<uint16_t*>(a));
      if (copy_a_) {
        memory dense = scratch_.make(product_a_desc(blk.rows));
        const dnnl::reorder::primitive_desc copy(cpu_engine(), src.get_desc(), cpu_engine(),
                                                 dense.get_desc());
        part.steps.push_back({dnnl::reorder(copy), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dense}}});
        src = dense;
      }
      memory weights(b_desc(blk.cols), cpu_engine(), const_cast<uint16_t*>(b));
      if (packed_b) {
        const dnnl::reorder::primitive_desc pack(cpu_engine(), weights.get_desc(), cpu_engine(),
                                                 packed_b->get_desc());
        part.steps.push_back(
            {dnnl::reorder(pack), {{DNNL_ARG_FROM, weights}, {DNNL_ARG_TO, *packed_b}}});
        weights = *packed_b;
      }
      const memory dst(c_desc(blk.rows, blk.cols), cpu_engine(), c);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, src},
          {DNNL_ARG_WEIGHTS, weights},
          {DNNL_ARG_DST, dense_c ? *dense_c : dst}};
      if (scratchpad) args[DNNL_ARG_SCRATCHPAD] = *scratchpad;
      part.steps.push_back({primitive, std::move(args)});
      if (dense_c) {
        const dnnl::reorder::primitive_desc copy(cpu_engine(), dense_c->get_desc(), cpu_engine(),
                                                 dst.get_desc());
        part.steps.push_back({dnnl::reorder(copy), {{DNNL_ARG_FROM, *dense_c}, {DNNL_ARG_TO, dst}}});
      }
    }
    parts_.push_back(std::move(part));
  }

  GemmPlan plan_;
  const uint16_t* a_;
  const uint16_t* b_;
  char* c_;
  memory::data_type c_type_;
  bool copy_a_;  // Each part copies its block of a transposed A dense first (above).
  Bf16Split split_;
  std::map<std::pair<int64_t, int64_t>, dnnl::matmul::primitive_desc> pds_;
  std::string impl_;
  std::vector<Part> parts_;
  Scratch scratch_;  // The parts' scratchpads.
};

}  // namespace

Bf16Split bf16_split(const GemmPlan& plan, int parts, std::optional<Bf16Split> forced) {
  // A transposed A read in place (K longer than kCopyTransposedAMaxK) is a strided block
  // of columns in each row part, which brgemm declines (gemm:jit computes it), but whole
  // in each column part, which brgemm takes: other bits, so such a GEMM keeps its rows.
  const bool strided_a_rows = plan.trans_a && plan.batch() == 1 && plan.k > kCopyTransposedAMaxK;
  if (plan.n <= PackedWeightLayout::kColumnBlock || strided_a_rows) return Bf16Split::kRows;
  if (forced) return *forced;
  const bool wide = plan.n >= PackedWeightLayout::kColumnBlock * parts;
  const bool few_rows = plan.batch() == 1 ? plan.m <= kColumnSplitMaxRows : plan.batch() < parts;
  // A block of a plain B would have to be packed by its part first (packs_b), which
  // costs more than the row parts' packing inside brgemm (half_bench --splits).
  const bool b_in_place = plan.b_packed || (plan.trans_b && plan.ldb == plan.k);
  return wide && few_rows && b_in_place ? Bf16Split::kColumns : Bf16Split::kRows;
}

StatusOr<std::optional<Bf16Split>> bf16_split_from_env() {
  const char* env = std::getenv("WEFT_BF16_SPLIT");
  if (env == nullptr || *env == '\0') return std::optional<Bf16Split>();
  const std::string value = env;
  if (value == "rows") return std::optional<Bf16Split>(Bf16Split::kRows);
  if (value == "columns") return std::optional<Bf16Split>(Bf16Split::kColumns);
  return Error("WEFT_BF16_SPLIT=" + value +
               ": expected rows or columns (or unset, for the rule that chooses per GEMM)");
}

int bf16_split_parts() { return std::max(default_num_threads(), 2); }

std::optional<PackedWeightLayout> packed_weight_layout(const LibraryCall& call) {
  if (call.node.op != Op::Matmul || call.operand_types.size() != 2) return std::nullopt;
  if (call.operand_types[0].dtype != DType::bf16 || call.operand_types[1].dtype != DType::bf16) {
    return std::nullopt;
  }
  const DType result = call.result_type.dtype;
  if (result != DType::bf16 && result != DType::f32) return std::nullopt;
  GemmPlan plan;
  StatusOr<bool> planned = plan_matmul(widened_call(call), plan);
  if (!planned.ok() || !*planned || plan.m == 0 || plan.n == 0 || plan.k == 0) return std::nullopt;
  const bool shared_b = std::all_of(plan.b_offsets.begin(), plan.b_offsets.end(),
                                    [](int64_t e) { return e == 0; });
  if (!shared_b || !native_bf16()) return std::nullopt;
  return PackedWeightLayout{plan.k, plan.n};
}

KernelOr make_onednn_matmul_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                                   void* out, bool b_packed) {
  // No other kernel reads a packed B, so where this one cannot run is an error.
  const auto refused = [&]() -> KernelOr {
    return call_error(call, "a pre-packed bf16 weight needs oneDNN's bf16 brgemm matmul (bf16 "
                            "operands, one 2-D weight for the whole batch, a CPU with "
                            "AVX512_BF16); this call has none: store its weight plain");
  };
  if (b_packed && !packed_weight_layout(call)) return refused();
  const DType result = call.result_type.dtype;
  if (result != DType::bf16 && result != DType::f32) return std::unique_ptr<BoundKernel>();
  GemmPlan plan;
  WEFT_ASSIGN_OR_RETURN(bool planned, plan_matmul(widened_call(call), plan));
  // An empty product (oneDNN rejects k = 0) goes through f32 as well.
  if (!planned || plan.m == 0 || plan.n == 0 || plan.k == 0 || !native_bf16()) {
    return std::unique_ptr<BoundKernel>();
  }
  plan.b_packed = b_packed;
  WEFT_ASSIGN_OR_RETURN(std::optional<Bf16Split> forced, bf16_split_from_env());
  const Bf16Split split = bf16_split(plan, bf16_split_parts(), forced);
  const auto unavailable = [&]() -> KernelOr {
    return b_packed ? refused() : std::unique_ptr<BoundKernel>();  // else through f32
  };
  try {
    auto kernel = std::make_unique<OnednnMatmulKernel>(std::move(plan), result, in[0], in[1], out,
                                                       split);
    if (kernel->uses_reference()) return unavailable();
    return std::unique_ptr<BoundKernel>(std::move(kernel));
  } catch (const dnnl::error&) {
    return unavailable();  // No oneDNN implementation.
  }
}

void pack_weight(const uint16_t* b, bool trans_b, int64_t ldb, const PackedWeightLayout& layout,
                 uint16_t* packed) {
  std::fill_n(packed, layout.elements(), uint16_t{0});
  for (int64_t r = 0; r < layout.k; ++r) {
    for (int64_t c = 0; c < layout.n; ++c) {
      packed[layout.offset(r, c)] = trans_b ? b[c * ldb + r] : b[r * ldb + c];
    }
  }
}

}  // namespace weft::cpu

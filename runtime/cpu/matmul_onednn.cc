// bf16 matmuls through oneDNN's matmul primitive: bf16 operands, f32 accumulation (the
// AVX512_BF16 dot products), a bf16 or f32 result as the node's result type says, on a
// CPU with AVX512_BF16 (native_bf16(); elsewhere make_library_kernel converts to f32,
// half.cc).
//
// As conv_onednn.cc does, everything is created when the kernel is bound, with oneDNN
// planning for one OpenMP thread: C is cut into parts — blocks of rows of a single GEMM,
// or runs of whole matrices of a batch — as many as default_num_threads() (at least 2),
// each part with its primitive (one per distinct row count), its user-mode scratchpad in
// the kernel's scratch and its stream. Transposed operands are read in place through
// their strides. run() executes the parts on the pool's chunks and allocates nothing;
// each element of C is computed by one primitive call, so results are bitwise
// reproducible for a given part count.
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
// packing it in every part of every call; the products are the same bits (half_test,
// `PrePackedWeightGivesTheSameBits`).

#include <dnnl.hpp>

#include <algorithm>
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

class OnednnMatmulKernel final : public BoundKernel {
 public:
  OnednnMatmulKernel(GemmPlan plan, DType result, const void* a, const void* b, void* c)
      : plan_(std::move(plan)),
        a_(static_cast<const uint16_t*>(a)),
        b_(static_cast<const uint16_t*>(b)),
        c_(static_cast<char*>(c)),
        c_type_(result == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16),
        copy_a_(plan_.trans_a && plan_.batch() == 1 && plan_.k <= kCopyTransposedAMaxK) {
    use_one_omp_thread();  // oneDNN plans its primitives for the creating thread's count.
    const int slots = std::max(default_num_threads(), 2);
    if (plan_.batch() == 1) {
      const int64_t grain = std::max<int64_t>(1, kMinChunkFlops / std::max<int64_t>(1, 2 * plan_.n * plan_.k));
      const Partition rows = Partition::make(plan_.m, grain, slots);
      for (int s = 0; s < rows.num_chunks; ++s) {
        add_part(0, 1, rows.begin(s), rows.end(s) - rows.begin(s));
      }
    } else {
      const Partition entries = Partition::make(plan_.batch(), 1, slots);
      for (int s = 0; s < entries.num_chunks; ++s) {
        add_part(entries.begin(s), entries.end(s), 0, plan_.m);
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
    return s + " " + impl_ + (copy_a_ ? " (A copied dense)" : "") +
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
  memory::desc b_desc() const {
    if (plan_.b_packed) {
      return {{plan_.k, plan_.n}, memory::data_type::bf16, memory::format_tag::BA16a64b2a};
    }
    return {{plan_.k, plan_.n}, memory::data_type::bf16,
            plan_.trans_b ? memory::dims{1, plan_.ldb} : memory::dims{plan_.ldb, 1}};
  }
  memory::desc c_desc(int64_t rows) const {
    return {{rows, plan_.n}, c_type_, memory::dims{plan_.ldc, 1}};
  }

  // The primitive for blocks of `rows` rows, created once per row count.
  const dnnl::matmul::primitive_desc& primitive_desc(int64_t rows) {
    auto it = pds_.find(rows);
    if (it == pds_.end()) {
      dnnl::matmul::primitive_desc pd({product_a_desc(rows), b_desc(), c_desc(rows)},
                                      user_scratchpad(), cpu_engine());
      impl_ = pd.impl_info_str();
      it = pds_.emplace(rows, pd).first;
    }
    return it->second;
  }

  // A part: rows [r0, r0 + rows) of C_i for every batch entry i in [e0, e1).
  void add_part(int64_t e0, int64_t e1, int64_t r0, int64_t rows) {
    const dnnl::matmul::primitive_desc& pd = primitive_desc(rows);
    const dnnl::matmul primitive(pd);
    Part part;
    std::optional<memory> scratchpad;
    if (pd.scratchpad_desc().get_size() > 0) scratchpad = scratch_.make(pd.scratchpad_desc());
    const size_t c_size = c_type_ == memory::data_type::f32 ? 4 : 2;
    for (int64_t i = e0; i < e1; ++i) {
      const uint16_t* a = a_ + plan_.a_offsets[i] + (plan_.trans_a ? r0 : r0 * plan_.lda);
      char* c = c_ + (i * plan_.c_stride + r0 * plan_.ldc) * static_cast<int64_t>(c_size);
      memory src(a_desc(rows), cpu_engine(), const_cast<uint16_t*>(a));
      if (copy_a_) {
        memory dense = scratch_.make(product_a_desc(rows));
        const dnnl::reorder::primitive_desc copy(cpu_engine(), src.get_desc(), cpu_engine(),
                                                 dense.get_desc());
        part.steps.push_back({dnnl::reorder(copy), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dense}}});
        src = dense;
      }
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, src},
          {DNNL_ARG_WEIGHTS,
           memory(b_desc(), cpu_engine(), const_cast<uint16_t*>(b_ + plan_.b_offsets[i]))},
          {DNNL_ARG_DST, memory(c_desc(rows), cpu_engine(), c)}};
      if (scratchpad) args[DNNL_ARG_SCRATCHPAD] = *scratchpad;
      part.steps.push_back({primitive, std::move(args)});
    }
    parts_.push_back(std::move(part));
  }

  GemmPlan plan_;
  const uint16_t* a_;
  const uint16_t* b_;
  char* c_;
  memory::data_type c_type_;
  bool copy_a_;  // Each part copies its block of a transposed A dense first (above).
  std::map<int64_t, dnnl::matmul::primitive_desc> pds_;
  std::string impl_;
  std::vector<Part> parts_;
  Scratch scratch_;  // The parts' scratchpads.
};

}  // namespace

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
  const auto unavailable = [&]() -> KernelOr {
    return b_packed ? refused() : std::unique_ptr<BoundKernel>();  // else through f32
  };
  try {
    auto kernel = std::make_unique<OnednnMatmulKernel>(std::move(plan), result, in[0], in[1], out);
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

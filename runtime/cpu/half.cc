// f16 and bf16 in the CPU's library kernels: the conversion path and the bf16 ISA check.
//
// The reference interpreter computes an f16 or bf16 op whose half rule is Widen (ir/op.h:
// all but bit copies, select, cast, bodies and all_reduce) by widening its half operands
// to f32, running the f32 kernel and rounding the result to nearest even. computes_widened
// reads that rule; make_widened_kernel does the same with the f32 library kernels: it is
// how f16 runs everywhere (oneDNN 2.6 has no f16 on x86 CPUs without AVX512_FP16, which
// Zen 4 lacks), how reductions, pooling, composites and
// scatter_add run in both half dtypes (they accumulate in f32 and round once, as the
// interpreter does), and how bf16 matmuls and convolutions run on a CPU without
// AVX512_BF16. The f32 copies of the operands and the f32 result live in the kernel's
// scratch (BoundKernel::scratch_bytes), the block the Executor shares among its kernels.

#include <dnnl.h>  // the C API: dnnl.hpp is ~60k lines for one query
#include <immintrin.h>

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

#include "runtime/cpu/kernels_internal.h"
#include "runtime/tensor.h"

namespace weft::cpu {

bool computes_widened(const LibraryCall& call) {
  if (!computes_half_in_f32(call.node.op)) return false;
  bool half = is_half(call.result_type.dtype);
  for (const Type& t : call.operand_types) half = half || is_half(t.dtype);
  return half;
}

LibraryCall widened_call(const LibraryCall& call) {
  LibraryCall wide = call;
  for (Type& t : wide.operand_types) {
    if (is_half(t.dtype)) t.dtype = DType::f32;
  }
  if (is_half(wide.result_type.dtype)) wide.result_type.dtype = DType::f32;
  return wide;
}

namespace {

std::atomic<bool> bf16_conversion_forced{false};

bool cpu_has_avx512_bf16() {
  static const bool has = (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) &
                           static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16)) ==
                          static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return has;
}

// One half buffer (operand `index`, or the result) and its f32 copy, `at` bytes into the
// kernel's scratch.
struct Converted {
  DType dtype;
  uint16_t* half;
  int64_t n;
  int64_t at = 0;
  size_t index = 0;
  float* wide = nullptr;  // Once the scratch is bound.
};

constexpr int64_t kConvertGrain = 16384;

// f16 <-> f32 16 at a time with the F16C/AVX-512 conversions, which are exact one way
// and round to nearest even the other, with subnormals, as float_to_f16 does (a NaN
// keeps its payload's high bits: still a NaN). Returns the first index not converted.
// The masked forms with every lane set: the unmasked intrinsics pass GCC 12 an undefined
// vector that it reports as maybe-uninitialized where they are inlined.
#if defined(__AVX512F__)
constexpr __mmask16 kAllLanes = 0xFFFF;
#endif
int64_t widen_f16_vector(const uint16_t* half, float* wide, int64_t begin, int64_t end) {
  int64_t i = begin;
#if defined(__AVX512F__)
  for (; i + 16 <= end; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(half + i));
    _mm512_storeu_ps(wide + i, _mm512_mask_cvtph_ps(_mm512_setzero_ps(), kAllLanes, h));
  }
#endif
  return i;
}

int64_t round_f16_vector(const float* wide, uint16_t* half, int64_t begin, int64_t end) {
  int64_t i = begin;
#if defined(__AVX512F__)
  for (; i + 16 <= end; i += 16) {
    const __m256i h = _mm512_mask_cvtps_ph(_mm256_setzero_si256(), kAllLanes, _mm512_loadu_ps(wide + i),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(half + i), h);
  }
#endif
  return i;
}

void widen(ThreadPool& pool, const Converted& c) {
  pool.parallel_for(c.n, kConvertGrain, [&](int64_t begin, int64_t end) {
    if (c.dtype == DType::bf16) {  // bf16_to_float, inline so that it vectorizes.
      for (int64_t i = begin; i < end; ++i) {
        c.wide[i] = std::bit_cast<float>(static_cast<uint32_t>(c.half[i]) << 16);
      }
    } else {
      for (int64_t i = widen_f16_vector(c.half, c.wide, begin, end); i < end; ++i) {
        c.wide[i] = f16_to_float(c.half[i]);
      }
    }
  });
}

void round_to_half(ThreadPool& pool, const Converted& c) {
  pool.parallel_for(c.n, kConvertGrain, [&](int64_t begin, int64_t end) {
    if (c.dtype == DType::bf16) {
      for (int64_t i = begin; i < end; ++i) c.half[i] = float_to_bf16(c.wide[i]);
    } else {
      for (int64_t i = round_f16_vector(c.wide, c.half, begin, end); i < end; ++i) {
        c.half[i] = float_to_f16(c.wide[i]);
      }
    }
  });
}

// Runs an f32 kernel bound to f32 copies: widen the half operands, run, round the result.
// The copies live in the kernel's scratch (the Executor's one block), followed by the f32
// kernel's own; since an f32 kernel is bound to its buffers when it is created, it is
// created when the scratch is bound (its size learned from a first one, bound to
// temporary copies when this kernel is made).
class WidenedKernel final : public BoundKernel {
 public:
  WidenedKernel(LibraryCall wide, std::vector<const void*> in, void* out,
                std::vector<Converted> operands, std::optional<Converted> result,
                int64_t copies_bytes, int64_t f32_scratch_bytes, std::string f32_describe)
      : wide_(std::move(wide)), in_(std::move(in)), out_(out), operands_(std::move(operands)),
        result_(result), copies_bytes_(copies_bytes), f32_scratch_bytes_(f32_scratch_bytes),
        f32_describe_(std::move(f32_describe)) {}

  Status run(ThreadPool& pool) override {
    ensure_scratch();
    for (const Converted& c : operands_) widen(pool, c);
    WEFT_RETURN_IF_ERROR(f32_kernel_->run(pool));
    if (result_) round_to_half(pool, *result_);
    return Status::ok_status();
  }

  std::string describe() const override { return "via f32 (converted): " + f32_describe_; }

  int64_t scratch_bytes() const override { return copies_bytes_ + f32_scratch_bytes_; }

 private:
  void bind_scratch(std::byte* scratch) override {
    std::vector<const void*> in = in_;
    void* out = out_;
    for (Converted& c : operands_) {
      c.wide = reinterpret_cast<float*>(scratch + c.at);
      in[c.index] = c.wide;
    }
    if (result_) {
      result_->wide = reinterpret_cast<float*>(scratch + result_->at);
      out = result_->wide;
    }
    StatusOr<std::unique_ptr<BoundKernel>> kernel = make_library_kernel(wide_, in, out);
    WEFT_CHECK(kernel.ok() && *kernel, "make_widened_kernel: the f32 kernel no longer binds");
    f32_kernel_ = std::move(*kernel);
    f32_kernel_->set_scratch(scratch + copies_bytes_);
  }

  LibraryCall wide_;
  std::vector<const void*> in_;
  void* out_;
  std::vector<Converted> operands_;
  std::optional<Converted> result_;
  int64_t copies_bytes_;
  int64_t f32_scratch_bytes_;
  std::string f32_describe_;
  std::unique_ptr<BoundKernel> f32_kernel_;
};

int64_t aligned_floats(int64_t n) { return (n * 4 + 63) / 64 * 64; }

}  // namespace

KernelOr make_widened_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                             void* out) {
  const LibraryCall wide = widened_call(call);
  // Where the copies go in the scratch, and temporary ones to learn the f32 kernel's need.
  int64_t bytes = 0;
  std::vector<Converted> operands;
  std::optional<Converted> result;
  for (size_t i = 0; i < in.size(); ++i) {
    const Type& t = call.operand_types[i];
    if (!is_half(t.dtype)) continue;
    operands.push_back({t.dtype, const_cast<uint16_t*>(static_cast<const uint16_t*>(in[i])),
                        t.numel(), bytes, i});
    bytes += aligned_floats(t.numel());
  }
  if (is_half(call.result_type.dtype)) {
    result = Converted{call.result_type.dtype, static_cast<uint16_t*>(out),
                       call.result_type.numel(), bytes};
    bytes += aligned_floats(call.result_type.numel());
  }
  std::unique_ptr<std::byte[]> probe_copies(new std::byte[bytes + 64]);
  std::vector<const void*> probe_in = in;
  void* probe_out = out;
  for (const Converted& c : operands) probe_in[c.index] = probe_copies.get() + c.at;
  if (result) probe_out = probe_copies.get() + result->at;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<BoundKernel> probe,
                        make_library_kernel(wide, probe_in, probe_out));
  if (!probe) return std::unique_ptr<BoundKernel>();
  return std::unique_ptr<BoundKernel>(new WidenedKernel(wide, in, out, std::move(operands), result,
                                                        bytes, probe->scratch_bytes(),
                                                        probe->describe()));
}

bool native_bf16() {
  const bool forced = bf16_conversion_forced.load();
  if (cpu_has_avx512_bf16() && !forced) return true;
  static std::once_flag noted;
  std::call_once(noted, [forced] {
    std::fprintf(stderr,
                 "weft: note: bf16 matmuls and convolutions on the CPU convert to f32, run the "
                 "f32 kernels and round (runtime/cpu/half.cc): %s\n",
                 forced ? "the conversion path is forced (a test)"
                        : "this CPU lacks AVX512_BF16");
  });
  return false;
}

void force_bf16_conversion_for_testing(bool force) { bf16_conversion_forced.store(force); }

}  // namespace weft::cpu

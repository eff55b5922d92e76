#pragma once
// Internal to runtime/cpu's library kernels: one factory per op category, each in its
// own file (contraction.cc, reduction.cc, movement.cc + indexing.cc, creation.cc,
// composite.cc), and helpers they share. kernel.cc dispatches on the op table's
// category, never on names. Each factory returns nullptr for an op or dtype it does
// not implement.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace weft::cpu {

using KernelOr = StatusOr<std::unique_ptr<BoundKernel>>;

KernelOr make_contraction_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                                 void* out);
KernelOr make_reduction_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                               void* out);
KernelOr make_movement_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out);
/// gather, one_hot and scatter_add (indexing.cc), called by make_movement_kernel.
KernelOr make_indexing_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out);
KernelOr make_creation_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out);
/// The composites the CPU's column of the composite table states (ir/kernel_support.h,
/// library_composite_gap), in f32 and f64.
KernelOr make_composite_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                               void* out);

/// Whether `dtype` is f16 or bf16.

/// Whether the reference interpreter computes `call` by widening: an op whose half rule
/// is Widen (ir/op.h, `computes_half_in_f32`) with an f16 or bf16 operand or result, which
/// the interpreter widens to f32, computes, and rounds to nearest even.
bool computes_widened(const LibraryCall& call);

/// `call` with every f16 and bf16 type made f32.
LibraryCall widened_call(const LibraryCall& call);

/// The conversion path for a call that computes_widened (half.cc): its half operands are
/// converted to f32, the f32 library kernel of widened_call(call) runs, and a half result
/// is rounded to nearest even — the interpreter's own steps, so only the f32 kernel's
/// summation order differs. nullptr when the f32 call has no kernel.
KernelOr make_widened_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                             void* out);

/// Whether bf16 contractions run natively (oneDNN's bf16 primitives, f32 accumulation):
/// the CPU has AVX512_BF16 (oneDNN's effective ISA) and no test has forced the conversion
/// path. The first time it is false it prints one note to stderr saying bf16 matmuls and
/// convolutions convert to f32.
bool native_bf16();

/// For tests: forces (true) or stops forcing (false) the conversion path for bf16, as on a
/// CPU without AVX512_BF16. Affects kernels bound afterwards.
void force_bf16_conversion_for_testing(bool force);

/// A user error at the call's node: "OP: MESSAGE" at its location (the reference
/// interpreter's format, so both backends report the same text).
inline Error call_error(const LibraryCall& call, const std::string& message) {
  return Error{std::string(op_name(call.node.op)) + ": " + message, call.node.loc};
}

}  // namespace weft::cpu

namespace weft::cpu {

/// A BoundKernel whose `run` is a callable holding everything bound at load time
/// (pointers, loop bounds, scratch), so each op's factory stays one function.
template <typename F>
class FnKernel final : public BoundKernel {
 public:
  FnKernel(std::string description, F fn)
      : description_(std::move(description)), fn_(std::move(fn)) {}
  Status run(ThreadPool& pool) override { return fn_(pool); }
  std::string describe() const override { return description_; }

 private:
  std::string description_;
  F fn_;
};

template <typename F>
std::unique_ptr<BoundKernel> make_fn_kernel(std::string description, F fn) {
  return std::make_unique<FnKernel<F>>(std::move(description), std::move(fn));
}

/// Calls `f(E{})` with an unsigned integer type of `size` bytes (1, 2, 4 or 8): data
/// movement copies elements of that size, whatever the dtype.
template <typename F>
auto dispatch_size(size_t size, F&& f) {
  switch (size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

/// Fills n elements of type E at `dst` with `value`, in parallel.
template <typename E>
void parallel_fill(ThreadPool& pool, E* dst, int64_t n, E value) {
  pool.parallel_for(n, /*grain=*/32768, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = value;
  });
}

/// The bits of `value` converted to `dtype` as the reference does (Tensor::set_double:
/// round to nearest even, saturate integers, `v != 0` for bool), in the low bytes.
uint64_t dtype_bits(DType dtype, double value);

/// The element index -> int64 read of a 1-D index operand (i32 or i64).
inline int64_t index_at(const void* idx, bool is_i64, int64_t j) {
  return is_i64 ? static_cast<const int64_t*>(idx)[j]
                : static_cast<const int32_t*>(idx)[j];
}

/// A normalized axis in [0, rank), or -1 when `axis` is out of range.
inline int normalize_axis(int64_t axis, int rank) {
  if (axis < 0) axis += rank;
  return axis < 0 || axis >= rank ? -1 : static_cast<int>(axis);
}

}  // namespace weft::cpu

#include "runtime/cpu/kernel.h"

#include <cstdlib>
#include <new>

#include "ir/kernel_support.h"
#include "runtime/cpu/kernels_internal.h"
#include "runtime/matmul_geometry.h"

namespace weft::cpu {

void BoundKernel::ensure_scratch() {
  if (scratch_given_) return;
  const int64_t bytes = scratch_bytes();
  if (bytes > 0) {
    void* p = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
    if (p == nullptr) throw std::bad_alloc();
    own_scratch_ = {static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); }};
  }
  set_scratch(own_scratch_.get());
}

namespace {

bool is_f32_or_f64(DType d) { return d == DType::f32 || d == DType::f64; }

bool all_f32_or_f64(const LibraryCall& call) {
  for (const Type& t : call.operand_types) {
    if (!is_f32_or_f64(t.dtype)) return false;
  }
  return is_f32_or_f64(call.result_type.dtype);
}

}  // namespace

std::optional<std::string_view> cpu_library_gap(const LibraryCall& call) {
  // f16 and bf16 run natively or through f32 (make_widened_kernel): as f32 does.
  if (computes_widened(call)) return cpu_library_gap(widened_call(call));
  switch (call.node.info().category) {
    case OpCategory::Reduction:
      if (!is_f32_or_f64(call.operand_types[0].dtype)) {
        return "the CPU's reduction kernels compute f32 and f64 only (reduction.cc); integer "
               "and bool reductions run on the reference interpreter";
      }
      return std::nullopt;
    case OpCategory::Contraction:
      if (call.node.op == Op::Matmul) {
        StatusOr<std::optional<MatmulGeometry>> geometry =
            matmul_geometry(call.node, call.operand_types[0], call.operand_types[1]);
        if (geometry.ok() && !geometry->has_value()) {
          return "the GEMM kernels run f32 and f64 matmuls of one dtype with no scalar or "
                 "transposed 1-D operand (matmul_geometry); the rest run on the reference "
                 "interpreter";
        }
        return std::nullopt;
      }
      if (!all_f32_or_f64(call)) {
        return "the CPU's convolution and pooling kernels compute f32 and f64 only (conv.cc, "
               "pool.cc); integer ones run on the reference interpreter";
      }
      return std::nullopt;
    case OpCategory::Composite:
      // The op table's CPU column (ir/kernel_support.h).
      return library_composite_gap(call.node.op, call.operand_types[0].dtype, CodeTarget::cpu);
    default: break;
  }
  if (call.node.op == Op::ScatterAdd && !is_f32_or_f64(call.result_type.dtype) &&
      call.result_type.dtype != DType::i32 && call.result_type.dtype != DType::i64) {
    return "scatter_add accumulates in f32, f64, i32 and i64 only (indexing.cc); u8 and bool "
           "run on the reference interpreter";
  }
  return std::nullopt;
}

namespace {

// The kernel of the call's own category and dtypes, or nullptr.
KernelOr make_category_kernel(const LibraryCall& call, const std::vector<const void*>& operands,
                              void* result) {
  switch (call.node.info().category) {
    case OpCategory::Contraction: return make_contraction_kernel(call, operands, result);
    case OpCategory::Reduction: return make_reduction_kernel(call, operands, result);
    case OpCategory::Movement: return make_movement_kernel(call, operands, result);
    case OpCategory::Creation: return make_creation_kernel(call, operands, result);
    case OpCategory::Composite: return make_composite_kernel(call, operands, result);
    case OpCategory::Other:
      // scatter_add is the one "other" op with a library kernel (movement.cc).
      return make_movement_kernel(call, operands, result);
    default: return std::unique_ptr<BoundKernel>();
  }
}

}  // namespace

StatusOr<std::unique_ptr<BoundKernel>> make_library_kernel(const LibraryCall& call,
                                                           std::vector<const void*> operands,
                                                           void* result) {
  WEFT_CHECK(operands.size() == call.operand_types.size(),
             "make_library_kernel: operand pointers and types differ in number");
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<BoundKernel> kernel,
                        make_category_kernel(call, operands, result));
  // f16, and bf16 without a kernel of its own: the interpreter's f32 steps (half.cc).
  if (!kernel && computes_widened(call)) return make_widened_kernel(call, operands, result);
  return kernel;
}

}  // namespace weft::cpu

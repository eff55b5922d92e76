#include "runtime/cpu/kernel.h"

#include <cstdlib>
#include <new>

#include "runtime/cpu/kernels_internal.h"

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

StatusOr<std::unique_ptr<BoundKernel>> make_library_kernel(const LibraryCall& call,
                                                           std::vector<const void*> operands,
                                                           void* result) {
  WEFT_CHECK(operands.size() == call.operand_types.size(),
             "make_library_kernel: operand pointers and types differ in number");
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

}  // namespace weft::cpu

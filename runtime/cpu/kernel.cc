#include "runtime/cpu/kernel.h"

#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {

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

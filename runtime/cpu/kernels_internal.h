#pragma once
// Internal to runtime/cpu's library kernels: one factory per op category, each in its
// own file (contraction.cc, reduction.cc, movement.cc, creation.cc, composite.cc), and
// helpers they share. kernel.cc dispatches on the op table's category, never on names.
// Each factory returns nullptr for an op or dtype it does not implement.

#include <memory>
#include <string>
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
KernelOr make_creation_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out);
KernelOr make_composite_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                               void* out);

/// A user error at the call's node: "OP: MESSAGE" at its location (the reference
/// interpreter's format, so both backends report the same text).
inline Error call_error(const LibraryCall& call, const std::string& message) {
  return Error{std::string(op_name(call.node.op)) + ": " + message, call.node.loc};
}

}  // namespace weft::cpu

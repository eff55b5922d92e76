#pragma once
// The host-side plans of the CUDA library kernels (library_kernels.cu): a movement op as
// StridedMaps, gather/scatter_add geometry, the operand maps of a broadcast elementwise
// op, and dtype bit patterns. Host-only, like plan.h, so CI tests them
// (library_plan_test runs the kernels' per-element functions from index_maps.h over host
// buffers against the reference interpreter).

#include <optional>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/cuda/attention_shape.h"
#include "runtime/cuda/index_maps.h"

namespace weft::cuda {

/// The maps of a movement op (transpose, broadcast_to, slice, pad, reshape: one; concat:
/// one per operand) writing a result of type `result`. Errors (internal: the shape rules
/// have checked the attributes) for a rank above kMaxRank.
StatusOr<std::vector<StridedMap>> plan_strided_copy(const Node& node,
                                                    const std::vector<Type>& operands,
                                                    const Type& result);

/// The map reading an operand of shape `operand` broadcast (NumPy rules) to `result`,
/// for each of `result`'s elements in row-major order.
StridedMap broadcast_map(const Shape& operand, const Shape& result);

/// gather (x, idx) and scatter_add (base, idx, src) along `node`'s axis: `data` is x or
/// base, `n` the number of indices.
GatherGeometry plan_gather(const Node& node, const Shape& data, int64_t n);

/// The IndexType of an index operand (i32, i64, u8).
IndexType index_type(DType dtype);

/// The library's elementwise kernels, registered by op (library_kernels.cu computes each):
/// the ElementwiseOp of `op`, or nullopt when the library has no kernel for it. library.h
/// sends an op here where the GPU's generated code lacks it (ir/kernel_support.h).
std::optional<ElementwiseOp> library_elementwise_op(Op op);

/// library_elementwise_op(op), which must exist: the op of a LibraryKind::elementwise call.
ElementwiseOp elementwise_op(Op op);

/// What attention's kernel (attention_kernels.h) is given for one attention node: the
/// problems' sizes, the map from each score [batch, sq, sk] (row-major) to the mask's
/// element (when `masked`), the scale and causal.
struct AttentionPlan {
  AttentionShape shape;
  bool masked = false;
  StridedMap mask_map;
  float scale = 1;
  bool causal = false;
};

/// The plan of an `attention` node on operands of types `operands`, or nullopt where the
/// kernel does not take it: not f32, a head dim above kAttentionMaxDim, a rank above
/// kMaxRank. library_kind sends the node to the kernel exactly where this is a plan.
std::optional<AttentionPlan> plan_attention(const Node& node, const std::vector<Type>& operands);

/// The plan of an `attention_grad(q, k, v, y, dy[, mask])` node for
/// launch_attention_backward (attention_kernels.h): plan_attention's of q, k, v and the
/// mask, with y and dy f32 of the result's shape [..., sq, dv]. Errors, each saying why
/// the kernel refuses the node: not f32, a head dim above kAttentionMaxDim, operands of
/// different ranks or a rank above kMaxRank (index_maps.h), y or dy not of the forward's
/// result shape. library_kind sends the node to the kernel exactly where this is a plan,
/// and the CUDA lowering keeps the node exactly there (codegen/cuda_program.cc).
StatusOr<AttentionPlan> plan_attention_grad(const Node& node, const std::vector<Type>& operands);

/// The bytes of `value` in `dtype`, in the low bytes of the result (one_hot's and
/// random_bernoulli's 0 and 1, pad's fill).
uint64_t dtype_bits(DType dtype, double value);

}  // namespace weft::cuda

#pragma once
// decompose-composites: softmax, log_softmax and layer_norm over the trailing axes of
// an f32/f64 value become the primitive ops they are made of, so that fuse-elementwise
// groups them with their neighbours into one row kernel (codegen/emit_rows): the
// attention scores' scale before softmax and the mask after it, the residual add before
// layer norm. Loop bodies (`scan`) are decomposed too, inside out. Both lowerings run it
// first (codegen::LowerOptions::decompose_composites), before hoist-loop-invariants, which
// then takes the constants it made in a body (layer norm's eps) out of the loop;
// codegen/row_kernel_bench measures it against the composites' library kernels.
//
//   %y = softmax(%x) {axis=-1} : f32[8,16]
// becomes
//   %0 = max(%x) {axes=[-1], keepdims=true} : f32[8,1]
//   %1 = sub(%x, %0) : f32[8,16]
//   %2 = exp(%1) : f32[8,16]
//   %3 = sum(%2) {axes=[-1], keepdims=true} : f32[8,1]
//   %y = div(%2, %3) : f32[8,16]
// An empty softmax, log_softmax or layer_norm (f32/f64, rows of length 0 or no rows, over
// any axes) becomes `full` of its type: nothing to compute, on every backend.
// log_softmax ends in `sub(%1, log(%3))`; layer_norm(%x, %w, %b) computes
// (x - mean) · rsqrt(mean((x - mean)²) + eps) · w + b with eps a `full` scalar.
// attention(%q, %k, %v[, %mask]) {scale, causal} becomes what frontend/modules/attention.cc
// emits: matmul(q · scale, k, transpose_b), select(gt(iota col, iota row), -inf, ·) when
// causal, select(mask, -inf, ·), softmax's primitives and matmul(·, v);
// attention_grad's three results (dq, dk, dv) end in matmul(dS, k) · scale (dq, which
// the node itself becomes), matmul(dSᵀ, q · scale) (dk) and matmul(Pᵀ, dy) (dv), each
// keeping its result's name, with dS = P (dP - rowsum(dP P)) and dP = dy · vᵀ computed
// once. The nodes of one problem (the same q, k, v, mask, scale, causal) share P: a
// step's gradients read the forward's probabilities, as the primitives' own gradient
// does.
//
// Left alone: f16/bf16 composites (attention too: passes/fuse_attention.h makes none), a
// softmax over another axis (its reductions would not be rows: the
// library kernel is faster), other dtypes, and cross_entropy (the library kernel checks
// that each label is in range; a one_hot would silently drop a bad label).
// Requires: a type-inferred graph after autodiff (the gradient rules read the
// composites). Guarantees: the same values up to float rounding (the library kernels
// compute the exponential sums and layer norm's statistics in f64, the decomposition
// sums in f64 but rounds each per-row value to the dtype); the result keeps its name
// and location; the graph stays in topological order.

#include <functional>
#include <utility>

#include "passes/pass.h"

namespace weft {

class DecomposeCompositesPass : public Pass {
 public:
  /// A composite node the target runs on a kernel of its own, left as it is (the CUDA
  /// lowering: attention where its library kernel takes it); none when empty.
  using Keep = std::function<bool(const Graph& g, const Node& node)>;
  explicit DecomposeCompositesPass(Keep keep = nullptr) : keep_(std::move(keep)) {}
  std::string_view name() const override { return "decompose-composites"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  Keep keep_;
};

}  // namespace weft

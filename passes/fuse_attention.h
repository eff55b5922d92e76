#pragma once
// fuse-attention: the attention pattern softmax(q·scale·kᵀ + mask)·v, as
// frontend/modules/attention.cc emits it (and as a .wir writes it by hand), becomes one
// `attention` composite (ir/ops.def), so that autodiff gives it one `attention_grad`
// (three results: dq, dk, dv) instead of differentiating the primitives. Run before
// autodiff by the Trainer with TrainOptions::fuse_attention (off by default; the CUDA
// lowering runs both on runtime/cuda's attention kernels: the forward, and
// FlashAttention-2's backward).
//
//   %qs = mul(%q, %c) : f32[2,4,9,16]              %c = full() {value=0.25} : f32[]
//   %kt = transpose(%k) {perm=[0,1,3,2]} : f32[2,4,16,9]
//   %s = matmul(%qs, %kt) : f32[2,4,9,9]
//   %s1 = select(%later, %ninf, %s) : f32[2,4,9,9]  %later = gt(iota axis 1, iota axis 0)
//   %s2 = select(%pad, %ninf, %s1) : f32[2,4,9,9]  %ninf = full() {value=-inf} : f32[]
//   %p = softmax(%s2) {axis=-1} : f32[2,4,9,9]
//   %y = matmul(%p, %v) : f32[2,4,9,16]
// becomes
//   %y = attention(%q, %k, %v, %pad) {causal=true, scale=0.25} : f32[2,4,9,16]
//
// Matched, from the final product back:
//   - y = matmul(p, v) with no transpose flags; p = softmax over the last axis;
//   - the scores through any number of select(cond, -inf, s) (a `full` of -inf of any
//     all-ones shape), where cond is either causal — gt(iota{axis=1}, iota{axis=0}) or
//     lt(iota{axis=0}, iota{axis=1}) over [Sq, Sk] — or one bool mask that broadcasts to
//     the scores (at most one of each);
//   - s = matmul(a, kᵀ): `transpose_b`, or a transpose whose last two axes swap back to
//     k (k = the transpose's operand when that is all it does, else the transpose
//     rewritten without the swap);
//   - a = mul(q, c) or mul(c, q) with c a `full` scalar (its value is the scale); any
//     other a is q itself (scale 1);
//   - q, k, v f32 or f64 (what decompose-composites writes back on every target), one
//     dtype, q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] with the same leading dims
//     (attention's shape rule).
// Every intermediate (the scaled q, kᵀ, the scores, each select, the softmax) must have
// the pattern as its only user: a softmax that is also returned, dropout on the weights
// (a mul between softmax and the product), an additive float mask, a mask kept as
// select(keep, s, -inf), a softmax over another axis or f16/bf16 operands are left alone.
//
// Requires: a type-inferred graph. Guarantees: the same values up to float rounding
// (decompose-composites writes back exactly the primitives matched, in their order: the
// forward is bitwise the same on targets that decompose it); the nodes the pattern leaves
// unused (its intermediates, the iotas, the -inf constants when nothing else reads them)
// are removed; the graph stays in topological order; nothing else changes.

#include "passes/pass.h"

namespace weft {

class FuseAttentionPass : public Pass {
 public:
  std::string_view name() const override { return "fuse-attention"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

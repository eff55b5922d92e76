#pragma once
// fold-batch-matmul: a batched product whose batch is summed away becomes one GEMM
// with the batch folded into the contraction. The weight gradient of a linear layer on
// a [B, T, D] input is exactly this: Σ_b x_bᵀ·g_b, which autodiff writes as a batched
// matmul followed by the sum that undoes the weight's broadcast.
//
//   graph @f(%x: f32[8,64,512], %g: f32[8,64,128]) {
//     %p = matmul(%g, %x) {transpose_a=true} : f32[8,128,512]
//     %w = sum(%p) {axes=[0]} : f32[128,512]
//     return %w
//   }
// becomes
//   graph @f(%x: f32[8,64,512], %g: f32[8,64,128]) {
//     %g2 = reshape(%g) {shape=[512,128]} : f32[512,128]
//     %x2 = reshape(%x) {shape=[512,512]} : f32[512,512]
//     %w = matmul(%g2, %x2) {transpose_a=true} : f32[128,512]
//     return %w
//   }
// (one 128×512×512 GEMM instead of eight 128×512×64 ones and a sum over a [8,128,512]
// intermediate; reshapes of contiguous buffers are views).
//
// Applies when: the matmul has transpose_a set and transpose_b not (its operands are
// [..., K, M] and [..., K, N], so batch and K are adjacent and merge), both operands have
// the same batch dims, the sum reduces exactly those leading batch axes without
// keepdims, and the sum is the product's only user.
// Requires: a type-inferred graph. Guarantees: the same values up to float rounding (the
// batch partial products are summed inside the GEMM).

#include "passes/pass.h"

namespace weft {

class FoldBatchMatmulPass : public Pass {
 public:
  std::string_view name() const override { return "fold-batch-matmul"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

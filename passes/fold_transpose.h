#pragma once
// fold-transpose: a matmul operand that is a transpose of its last two dimensions is
// read in place by the GEMM instead (BLAS's 'T' flag): the flag is set and the
// transpose disappears once nothing else uses it. Backward passes are full of these:
// dX = dY·Wᵀ and dW = Xᵀ·dY for every linear layer.
//
//   graph @f(%x: f32[8,4], %w: f32[3,4], %g: f32[8,3]) {
//     %wt = transpose(%w) {perm=[1,0]} : f32[4,3]
//     %y = matmul(%x, %wt) : f32[8,3]
//     return %y
//   }
// becomes
//   graph @f(%x: f32[8,4], %w: f32[3,4], %g: f32[8,3]) {
//     %y = matmul(%x, %w) {transpose_b=true} : f32[8,3]
//     return %y
//   }
//
// Requires: a type-inferred graph. Guarantees: the same values (the reference
// interpreter computes flagged products from transposed copies, bit for bit the same);
// transposes with other users stay.

#include "passes/pass.h"

namespace weft {

class FoldTransposePass : public Pass {
 public:
  std::string_view name() const override { return "fold-transpose"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

#pragma once
// split-gradients: in a data-parallel step (DESIGN.md, decision 11), a large weight
// gradient computed by one GEMM and averaged over the ranks by one all_reduce is computed
// as row blocks instead, each reduced on its own, so the first block's reduction starts
// (runtime/collective/bucket_plan.h: each block closes its bucket) while the next block's
// GEMM runs. Rows of a row-major gradient are contiguous chunks of it; the blocks are
// concatenated back along the rows for the optimizer update (a copy of the gradient:
// bench/RESULTS.md, "a weight gradient split across buckets", says what it costs).
//
//   %gt = transpose(%h) {perm=[1,0]} : f32[512,128]
//   %m = matmul(%gt, %g) : f32[512,512]                  # dWᵀ = hᵀ·g
//   %dw = transpose(%m) {perm=[1,0]} : f32[512,512]
//   %r = all_reduce(%dw) {reduction="mean"} : f32[512,512]
// becomes (2 blocks; rows of dW are columns of dWᵀ, so the blocks slice g's columns)
//   %dw.rows0.g = slice(%g) {start=[0,0], stop=[128,256]} : f32[128,256]
//   %dw.rows0.m = matmul(%gt, %dw.rows0.g) : f32[512,256]
//   %dw.rows0 = transpose(%dw.rows0.m) {perm=[1,0]} : f32[256,512]
//   %dw.rows0.all_reduce = all_reduce(%dw.rows0) {reduction="mean"} : f32[256,512]
//   ... the same for rows 256..512 ...
//   %r = concat(%dw.rows0.all_reduce, %dw.rows1.all_reduce) {axis=0} : f32[512,512]
//
// Split: an all_reduce of one operand (not a predicated one: gradient accumulation reduces
// an accumulator, no GEMM) whose operand is a 2-D f32/f64/f16/bf16 value of at least
// `min_bytes` bytes and at least `blocks` rows, produced by a 2-D matmul, or by a
// transpose {perm=[1,0]} of one, read by nothing else (nor a graph output or assigned),
// the matmul read by that transpose alone. Rows of matmul(a, b) {transpose_a,
// transpose_b} are rows of op(a): a slice of a's rows (columns where transposed); rows
// of its transpose are columns of op(b). Blocks are as equal as the rows allow (the
// first ones a row longer). The new nodes stand where the all_reduce stood; the GEMM and
// its transpose, read by nothing else, are removed. Each element of a block is the same
// dot product as before (the same K), so the step computes the same function; the
// GEMMs' bits may differ from the whole GEMM's (the library blocks them differently),
// identically on every rank.
//
// Requires: a graph whose node result types are known. Guarantees: the same outputs and
// assigns; every new node typed; a valid topological order. No change where `min_bytes`
// is 0, `blocks` below 2, or no all_reduce qualifies (one process: no all_reduce ops).

#include <cstdint>

#include "passes/pass.h"

namespace weft {

struct SplitGradientsOptions {
  /// Gradients of at least this many bytes are split; 0: none.
  int64_t min_bytes = int64_t{1} << 20;
  /// Row blocks per split gradient (at least 2 to split).
  int blocks = 2;
};

class SplitGradientsPass : public Pass {
 public:
  explicit SplitGradientsPass(SplitGradientsOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "split-gradients"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  SplitGradientsOptions options_;
};

}  // namespace weft

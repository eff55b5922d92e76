#include "passes/split_gradients.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {
namespace split_gradients_test {  // this file's names, apart in its package's unity test

// A linear layer's weight gradient as autodiff emits it (dW = (hᵀ·g)ᵀ), 4 rows in 2 blocks:
// rows of dW are columns of g.
TEST(SplitGradientsTest, TransposedProductSlicesTheRightOperandsColumns) {
  SplitGradientsPass pass({.min_bytes = 48, .blocks = 2});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: f32[8,3], %g: f32[8,4]) {
  %ht = transpose(%h) {perm=[1,0]} : f32[3,8]
  %m = matmul(%ht, %g) : f32[3,4]
  %dw = transpose(%m) {perm=[1,0]} : f32[4,3]
  %r = all_reduce(%dw) : f32[4,3]
  %y = neg(%r) : f32[4,3]
  return %y
})"),
            R"(graph @f(%h: f32[8,3], %g: f32[8,4]) -> (f32[4,3]) {
  %ht = transpose(%h) {perm=[1, 0]} : f32[3,8]
  %dw.rows0.in = slice(%g) {start=[0, 0], stop=[8, 2]} : f32[8,2]
  %dw.rows0.t = matmul(%ht, %dw.rows0.in) : f32[3,2]
  %dw.rows0 = transpose(%dw.rows0.t) {perm=[1, 0]} : f32[2,3]
  %dw.rows0.all_reduce = all_reduce(%dw.rows0) : f32[2,3]
  %dw.rows1.in = slice(%g) {start=[0, 2], stop=[8, 4]} : f32[8,2]
  %dw.rows1.t = matmul(%ht, %dw.rows1.in) : f32[3,2]
  %dw.rows1 = transpose(%dw.rows1.t) {perm=[1, 0]} : f32[2,3]
  %dw.rows1.all_reduce = all_reduce(%dw.rows1) : f32[2,3]
  %dw.rows = concat(%dw.rows0.all_reduce, %dw.rows1.all_reduce) {axis=0} : f32[4,3]
  %y = neg(%dw.rows) : f32[4,3]
  return %y
}
)");
}

// A product whose rows are op(a)'s: a's columns when transpose_a is set. 5 rows in 2
// blocks: 3 and 2.
TEST(SplitGradientsTest, ProductRowsComeFromTheLeftOperand) {
  SplitGradientsPass pass({.min_bytes = 48, .blocks = 2});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,5], %h: f32[8,3]) {
  %dw = matmul(%g, %h) {transpose_a=true} : f32[5,3]
  %r = all_reduce(%dw) {reduction="sum"} : f32[5,3]
  return %r
})"),
            R"(graph @f(%g: f32[8,5], %h: f32[8,3]) -> (f32[5,3]) {
  %dw.rows0.in = slice(%g) {start=[0, 0], stop=[8, 3]} : f32[8,3]
  %dw.rows0 = matmul(%dw.rows0.in, %h) {transpose_a=true} : f32[3,3]
  %dw.rows0.all_reduce = all_reduce(%dw.rows0) {reduction="sum"} : f32[3,3]
  %dw.rows1.in = slice(%g) {start=[0, 3], stop=[8, 5]} : f32[8,2]
  %dw.rows1 = matmul(%dw.rows1.in, %h) {transpose_a=true} : f32[2,3]
  %dw.rows1.all_reduce = all_reduce(%dw.rows1) {reduction="sum"} : f32[2,3]
  %dw.rows = concat(%dw.rows0.all_reduce, %dw.rows1.all_reduce) {axis=0} : f32[5,3]
  return %dw.rows
}
)");
}

// Left alone: a gradient under the threshold, one read elsewhere too (the GEMM would run
// twice), a predicated all_reduce (gradient accumulation reduces an accumulator) and an
// operand that no GEMM computes.
TEST(SplitGradientsTest, SmallSharedPredicatedOrNotAProductIsNoChange) {
  SplitGradientsPass pass({.min_bytes = 48, .blocks = 2});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,5], %h: f32[8,3], %s: f32[2,2], %p: bool[]) {
  %small = matmul(%s, %s) : f32[2,2]
  %rs = all_reduce(%small) : f32[2,2]
  %dw = matmul(%g, %h) {transpose_a=true} : f32[5,3]
  %r = all_reduce(%dw) : f32[5,3]
  %dp = matmul(%g, %h) {transpose_a=true} : f32[5,3]
  %rp = all_reduce(%dp, %p) : f32[5,3]
  %e = exp(%dp) : f32[5,3]
  %re = all_reduce(%e) : f32[5,3]
  return %rs, %r, %dw, %rp, %re
})"),
            R"(graph @f(%g: f32[8,5], %h: f32[8,3], %s: f32[2,2], %p: bool[]) -> (f32[2,2], f32[5,3], f32[5,3], f32[5,3], f32[5,3]) {
  %small = matmul(%s, %s) : f32[2,2]
  %rs = all_reduce(%small) : f32[2,2]
  %dw = matmul(%g, %h) {transpose_a=true} : f32[5,3]
  %r = all_reduce(%dw) : f32[5,3]
  %dp = matmul(%g, %h) {transpose_a=true} : f32[5,3]
  %rp = all_reduce(%dp, %p) : f32[5,3]
  %e = exp(%dp) : f32[5,3]
  %re = all_reduce(%e) : f32[5,3]
  return %rs, %r, %dw, %rp, %re
}
(no change)
)");
}

}  // namespace split_gradients_test
}  // namespace
}  // namespace weft

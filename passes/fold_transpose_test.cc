#include "passes/fold_transpose.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

TEST(FoldTransposeTest, FlagsReplaceTransposes) {
  FoldTransposePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,4], %w: f32[3,4], %g: f32[8,3]) {
  %wt = transpose(%w) {perm=[1,0]} : f32[4,3]
  %y = matmul(%x, %wt) : f32[8,3]
  %xt = transpose(%x) {perm=[1,0]} : f32[4,8]
  %gw = matmul(%xt, %g) : f32[4,3]
  return %y, %gw, %xt
})"),
            R"(graph @f(%x: f32[8,4], %w: f32[3,4], %g: f32[8,3]) -> (f32[8,3], f32[4,3], f32[4,8]) {
  %y = matmul(%x, %w) {transpose_b=true} : f32[8,3]
  %xt = transpose(%x) {perm=[1, 0]} : f32[4,8]
  %gw = matmul(%x, %g) {transpose_a=true} : f32[4,3]
  return %y, %gw, %xt
}
)");
}

TEST(FoldTransposeTest, TransposedProductsSwapTheirOperands) {
  FoldTransposePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,4], %g: f32[8,3]) {
  %xt = transpose(%x) {perm=[1,0]} : f32[4,8]
  %gw = matmul(%xt, %g) : f32[4,3]
  %w = transpose(%gw) {perm=[1,0]} : f32[3,4]
  return %w
})"),
            R"(graph @f(%x: f32[8,4], %g: f32[8,3]) -> (f32[3,4]) {
  %w = matmul(%g, %x) {transpose_a=true} : f32[3,4]
  return %w
}
)");
}

TEST(FoldTransposeTest, OnlyTheLastTwoDimensions) {
  FoldTransposePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[2,3,4], %w: f32[3,4,3]) {
  %t = transpose(%x) {perm=[1,0,2]} : f32[3,2,4]
  %y = matmul(%t, %w) : f32[3,2,3]
  return %y
})"),
            R"(graph @f(%x: f32[2,3,4], %w: f32[3,4,3]) -> (f32[3,2,3]) {
  %t = transpose(%x) {perm=[1, 0, 2]} : f32[3,2,4]
  %y = matmul(%t, %w) : f32[3,2,3]
  return %y
}
(no change)
)");
}

}  // namespace
}  // namespace weft

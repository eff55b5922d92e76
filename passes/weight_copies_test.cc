// The weight-copies pass's rewrite, golden: a trained parameter's cast becomes a state
// copy written after its update; a frozen parameter's and an activation's casts stay.
#include "passes/weight_copies.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

TEST(WeightCopiesTest, TrainedParameterCastBecomesStateWrittenAfterTheUpdate) {
  WeightCopiesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @step(%x: f32[8,4], %w: f32[3,4] {param}, %f: f32[3,4] {param}) {
  %0 = cast(%x) {dtype=bf16} : bf16[8,4]
  %1 = cast(%w) {dtype=bf16} : bf16[3,4]
  %h = matmul(%0, %1) {transpose_b=true} : bf16[8,3]
  %2 = cast(%f) {dtype=bf16} : bf16[3,4]
  %k = matmul(%0, %2) {transpose_b=true} : bf16[8,3]
  %3 = add(%h, %k) : bf16[8,3]
  %4 = cast(%3) {dtype=f32} : f32[8,3]
  %s = sum(%4) : f32[]
  %w1 = mul(%w, %w) : f32[3,4]
  assign(%w, %w1)
  return %s
})"),
            R"(graph @step(%x: f32[8,4], %w: f32[3,4] {param}, %f: f32[3,4] {param}, %weft.copy.w: bf16[3,4] {state}) -> (f32[]) {
  %0 = cast(%x) {dtype=bf16} : bf16[8,4]
  %h = matmul(%0, %weft.copy.w) {transpose_b=true} : bf16[8,3]
  %2 = cast(%f) {dtype=bf16} : bf16[3,4]
  %k = matmul(%0, %2) {transpose_b=true} : bf16[8,3]
  %3 = add(%h, %k) : bf16[8,3]
  %4 = cast(%3) {dtype=f32} : f32[8,3]
  %s = sum(%4) : f32[]
  %w1 = mul(%w, %w) : f32[3,4]
  assign(%w, %w1)
  %5 = cast(%w1) {dtype=bf16} : bf16[3,4]
  assign(%weft.copy.w, %5)
  return %s
}
)");
  ASSERT_EQ(pass.copies().size(), 1u);
  EXPECT_EQ(pass.copies()[0].first, "weft.copy.w");
  EXPECT_EQ(pass.copies()[0].second, "w");
}

TEST(WeightCopiesTest, NoParameterCastNoChange) {
  WeightCopiesPass pass;
  const std::string text = R"(graph @step(%x: f32[8,4], %w: f32[3,4] {param}) -> (f32[8,3]) {
  %h = matmul(%x, %w) {transpose_b=true} : f32[8,3]
  %w1 = mul(%w, %w) : f32[3,4]
  assign(%w, %w1)
  return %h
}
)";
  EXPECT_EQ(run_pass_on_text(pass, text), text + "(no change)\n");
  EXPECT_TRUE(pass.copies().empty());
}

}  // namespace
}  // namespace weft

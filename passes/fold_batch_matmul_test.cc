#include "passes/fold_batch_matmul.h"

#include <gtest/gtest.h>

#include <random>

#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

TEST(FoldBatchMatmulTest, SummedBatchFoldsIntoTheContraction) {
  FoldBatchMatmulPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) {
  %p = matmul(%g, %x) {transpose_a=true} : f32[3,5,6]
  %w = sum(%p) {axes=[0]} : f32[5,6]
  %y = neg(%w) : f32[5,6]
  return %y
})"),
            R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) -> (f32[5,6]) {
  %0 = reshape(%g) {shape=[12, 5]} : f32[12,5]
  %1 = reshape(%x) {shape=[12, 6]} : f32[12,6]
  %2 = matmul(%0, %1) {transpose_a=true} : f32[5,6]
  %y = neg(%2) : f32[5,6]
  return %y
}
)");
}

TEST(FoldBatchMatmulTest, ATransposeOfTheSumSwapsTheOperands) {
  FoldBatchMatmulPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) {
  %p = matmul(%x, %g) {transpose_a=true} : f32[3,6,5]
  %s = sum(%p) {axes=[0]} : f32[6,5]
  %w = transpose(%s) {perm=[1,0]} : f32[5,6]
  return %w
})"),
            R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) -> (f32[5,6]) {
  %0 = reshape(%x) {shape=[12, 6]} : f32[12,6]
  %1 = reshape(%g) {shape=[12, 5]} : f32[12,5]
  %2 = matmul(%1, %0) {transpose_a=true} : f32[5,6]
  return %2
}
)");
}

TEST(FoldBatchMatmulTest, KeepdimsSumsFollowedByAReshape) {
  // How autodiff sums a weight's broadcast away: keepdims, then a reshape.
  FoldBatchMatmulPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) {
  %p = matmul(%x, %g) {transpose_a=true} : f32[3,6,5]
  %s = sum(%p) {axes=[0], keepdims=true} : f32[1,6,5]
  %r = reshape(%s) {shape=[6,5]} : f32[6,5]
  %w = transpose(%r) {perm=[1,0]} : f32[5,6]
  return %w
})"),
            R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) -> (f32[5,6]) {
  %0 = reshape(%x) {shape=[12, 6]} : f32[12,6]
  %1 = reshape(%g) {shape=[12, 5]} : f32[12,5]
  %2 = matmul(%1, %0) {transpose_a=true} : f32[5,6]
  return %2
}
)");
}

TEST(FoldBatchMatmulTest, OnlyWhenTheWholeBatchIsSummedAndNothingElseUsesTheProduct) {
  FoldBatchMatmulPass pass;
  const char* partial = R"(graph @f(%x: f32[2,3,4,6], %g: f32[2,3,4,5]) {
  %p = matmul(%g, %x) {transpose_a=true} : f32[2,3,5,6]
  %w = sum(%p) {axes=[1]} : f32[2,5,6]
  return %w
})";
  EXPECT_NE(run_pass_on_text(pass, partial).find("(no change)"), std::string::npos);
  const char* shared = R"(graph @f(%x: f32[3,4,6], %g: f32[3,4,5]) {
  %p = matmul(%g, %x) {transpose_a=true} : f32[3,5,6]
  %w = sum(%p) {axes=[0]} : f32[5,6]
  return %w, %p
})";
  EXPECT_NE(run_pass_on_text(pass, shared).find("(no change)"), std::string::npos);
  const char* plain = R"(graph @f(%x: f32[3,6,4], %g: f32[3,4,5]) {
  %p = matmul(%x, %g) : f32[3,6,5]
  %w = sum(%p) {axes=[0]} : f32[6,5]
  return %w
})";
  EXPECT_NE(run_pass_on_text(pass, plain).find("(no change)"), std::string::npos);
}

TEST(FoldBatchMatmulTest, SameValuesOnTheReferenceInterpreter) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%x: f32[2,3,7,6], %g: f32[2,3,7,5]) {
  %p = matmul(%g, %x) {transpose_a=true} : f32[2,3,5,6]
  %w = sum(%p) {axes=[0, 1]} : f32[5,6]
  return %w
})", "f.wir");
  ASSERT_TRUE(g.ok());
  std::mt19937 rng(2);
  std::vector<Tensor> inputs;
  for (const Input& in : g->inputs()) {
    Tensor t(g->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.set_double(i, std::uniform_real_distribution<>(-1, 1)(rng));
    }
    inputs.push_back(std::move(t));
  }
  auto before = reference::run(*g, inputs);
  FoldBatchMatmulPass pass;
  ASSERT_TRUE(*pass.run(*g));
  auto after = reference::run(*g, inputs);
  ASSERT_TRUE(before.ok() && after.ok());
  std::string why;
  EXPECT_TRUE(all_close(after->outputs[0], before->outputs[0], 1e-5, &why)) << why;
}

}  // namespace
}  // namespace weft

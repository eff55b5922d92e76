#include "passes/split_reductions.h"

#include <gtest/gtest.h>

#include <random>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

TEST(SplitReductionsTest, HeaderExample) {
  SplitReductionsPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,4,6,5]) {
  %m = mean(%x) {axes=[0, 2, 3], keepdims=true} : f32[1,4,1,1]
  return %m
})"),
            R"(graph @f(%x: f32[8,4,6,5]) -> (f32[1,4,1,1]) {
  %0 = mean(%x) {axes=[2, 3], keepdims=true} : f32[8,4,1,1]
  %1 = mean(%0) {axes=[0, 2, 3], keepdims=true} : f32[1,4,1,1]
  return %1
}
)");
}

TEST(SplitReductionsTest, AColumnSumOverSeveralAxesTakesTheLastFirst) {
  // A bias gradient summed over batch and sequence: the sequence first (one column sum
  // per batch element, 4·8 results), then the batch.
  SplitReductionsPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[4,16,8]) {
  %b = sum(%g) {axes=[0, 1]} : f32[8]
  return %b
})"),
            R"(graph @f(%g: f32[4,16,8]) -> (f32[8]) {
  %0 = sum(%g) {axes=[1], keepdims=true} : f32[4,1,8]
  %1 = sum(%0) {axes=[0, 1]} : f32[8]
  return %1
}
)");
}

TEST(SplitReductionsTest, LeavesRowsColumnsAndManyResults) {
  SplitReductionsPass pass;
  // Innermost axes only (a row reduction), one outer axis (a column reduction), every
  // axis, too short an inner run, too many results: unchanged.
  const char* text = R"(graph @f(%x: f32[8,4,6,5], %y: f32[2,5000,8], %z: f32[8,4,6,3]) {
  %a = sum(%x) {axes=[2, 3]} : f32[8,4]
  %b = sum(%x) {axes=[0]} : f32[4,6,5]
  %c = sum(%x) : f32[]
  %d = max(%z) {axes=[0, 3]} : f32[4,6]
  %e = sum(%y) {axes=[0, 2]} : f32[5000]
  return %a, %b, %c, %d, %e
})";
  EXPECT_NE(run_pass_on_text(pass, text).find("(no change)"), std::string::npos);
}

// Reductions of a scalar (`sum(%s)`, with keepdims too) have no axis: unchanged. The pass
// read the flag of axis rank - 1 = -1 and crashed (`weftc check --backend=cuda` of a
// scalar-only graph, SIGSEGV).
TEST(SplitReductionsTest, LeavesScalars) {
  SplitReductionsPass pass;
  const char* text = R"(graph @f(%s: f32[]) {
  %a = sum(%s) : f32[]
  %b = max(%s) {keepdims=true} : f32[]
  %c = mean(%s) {axes=[]} : f32[]
  return %a, %b, %c
})";
  EXPECT_NE(run_pass_on_text(pass, text).find("(no change)"), std::string::npos);
}

TEST(SplitReductionsTest, SameValuesForEveryReductionAndKeepdims) {
  for (const char* op : {"sum", "mean", "max", "min"}) {
    for (bool keepdims : {false, true}) {
      SCOPED_TRACE(std::string(op) + (keepdims ? " keepdims" : ""));
      const std::string text = std::string("graph @f(%x: f64[5,3,4,7]) {\n  %r = ") + op +
                               "(%x) {axes=[0, 2, 3], keepdims=" + (keepdims ? "true" : "false") +
                               "}\n  %c = " + op + "(%x) {axes=[0, 1, 2], keepdims=" +
                               (keepdims ? "true" : "false") + "}\n  return %r, %c\n}\n";
      StatusOr<Graph> g = parse_graph(text, "t.wir");
      ASSERT_TRUE(g.ok()) << g.error().to_string();
      ASSERT_TRUE(InferTypesPass().run(*g).ok());
      Graph split = *g;
      SplitReductionsPass pass;
      StatusOr<bool> changed = pass.run(split);
      ASSERT_TRUE(changed.ok() && *changed);
      std::mt19937_64 rng(3);
      Tensor x(Type{DType::f64, Shape{5, 3, 4, 7}});
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.set_double(i, std::uniform_real_distribution<double>(-2, 2)(rng));
      }
      auto want = reference::run(*g, {x});
      auto got = reference::run(split, {x});
      ASSERT_TRUE(want.ok() && got.ok());
      for (size_t o = 0; o < 2; ++o) {
        ASSERT_EQ(got->outputs[o].type(), want->outputs[o].type());
        for (int64_t i = 0; i < want->outputs[o].numel(); ++i) {
          EXPECT_NEAR(got->outputs[o].get_double(i), want->outputs[o].get_double(i), 1e-12);
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft

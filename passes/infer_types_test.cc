#include "passes/infer_types.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

TEST(InferTypesTest, TypesEveryValue) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(
graph @f(%x: f32[4,6], %w: f32[6,5] {param}, %s: f32[4] {state}) {
  %h = matmul(%x, %w)
  %m = sum(%h) {axes=[-1]}
  %c = lt(%m, %m)
  %n = argmax(%h) {axis=1, keepdims=true}
  assign(%s, %m)
  return %c, %n
}
)"),
            R"(graph @f(%x: f32[4,6], %w: f32[6,5] {param}, %s: f32[4] {state}) -> (bool[4], i64[4,1]) {
  %h = matmul(%x, %w) : f32[4,5]
  %m = sum(%h) {axes=[-1]} : f32[4]
  %c = lt(%m, %m) : bool[4]
  %n = argmax(%h) {axis=1, keepdims=true} : i64[4,1]
  assign(%s, %m)
  return %c, %n
}
)");
}

TEST(InferTypesTest, NoChangeWhenEverythingIsTyped) {
  InferTypesPass pass;
  const char* typed = R"(graph @f(%x: f32[4,6], %w: f32[6,5]) -> (f32[4,5]) {
  %h = matmul(%x, %w) : f32[4,5]
  %y = relu(%h) : f32[4,5]
  return %y
}
)";
  EXPECT_EQ(run_pass_on_text(pass, typed), std::string(typed) + "(no change)\n");
}

TEST(InferTypesTest, DeclaredTypeMustMatch) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,6], %w: f32[6,5]) {
  %h = matmul(%x, %w) : f32[4,6]
  return %h
}
)"),
            "test.wir:2:3: error: %h is declared f32[4,6] but matmul gives f32[4,5]");
}

TEST(InferTypesTest, ShapeRuleErrorsCarryTheLocation) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,6], %w: f32[5,5]) {
  %h = relu(%x)
  %y = matmul(%h, %w)
  return %y
}
)"),
            "test.wir:3:3: error: matmul: contraction dims differ: lhs f32[4,6] has 6 columns "
            "but rhs f32[5,5] has 5 rows");
}

TEST(InferTypesTest, SignatureMustMatch) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,6]) -> (f32[4,6], f32[4]) {
  %y = exp(%x)
  %s = sum(%y) {axes=[0]}
  return %y, %s
}
)"),
            "test.wir:3:3: error: output 1 %s is f32[6] but the signature declares f32[4]");
}

TEST(InferTypesTest, SignatureCountErrorPointsAtTheHeader) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(# comment
graph @f(%x: f32[4,6]) -> (f32[4,6], f32[4]) {
  %y = exp(%x)
  return %y
}
)"),
            "test.wir:2:1: error: the signature declares 2 output types but the graph returns 1 "
            "value");
  // An output with no known producer location (an input declared without one) falls back
  // to the header too.
  Graph g("f");
  g.set_loc({"m.wir", 1, 1, ""});
  ValueId x = g.add_input("x", {DType::f32, {4}});
  g.add_output(x);
  g.set_declared_output_types({Type{DType::f32, {5}}});
  StatusOr<bool> r = pass.run(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "m.wir:1:1: error: output 0 %x is f32[4] but the signature declares f32[5]");
}

TEST(InferTypesTest, ZeroDimsDoNotExcuseHugeOnes) {
  InferTypesPass pass;
  // NumPy's rule (ir/checked_math.h): the others must still fit, so strides always do.
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[0,4294967296,4294967296]) {
  return %x
}
)"),
            "test.wir:1:10: error: graph input %x has type f32[0,4294967296,4294967296], whose "
            "size in bytes does not fit in 64 bits; check its dims");
}

TEST(InferTypesTest, AssignTypesMustMatch) {
  InferTypesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%w: f32[4] {param}, %x: f32[5]) {
  assign(%w, %x)
  return
}
)"),
            "test.wir:2:3: error: assign: value f32[5] must have the target's type f32[4]");
}

TEST(InferTypesTest, InputsNeedTypes) {
  StatusOr<Graph> g = parse_graph("graph @f(%x: f32[4]) {\n  return %x\n}\n", "test.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  g->mutable_value(g->inputs()[0].value).type.reset();
  InferTypesPass pass;
  StatusOr<bool> changed = pass.run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "test.wir:1:10: error: graph input %x has no type; declare it, e.g. %x: f32[4,6]");
}

}  // namespace
}  // namespace weft

#include "passes/cse.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

TEST(CseTest, MergesEqualNodes) {
  CsePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4]) {
  %a = exp(%x)
  %b = exp(%x)
  %c = add(%a, %b)
  %d = add(%b, %a)
  %e = add(%a, %a)
  %f = softmax(%e) {axis=-1}
  %g = softmax(%c)
  return %d, %f, %g
}
)"),
            // %b merges into %a, which makes %e the same as %c; %d is add(%a, %a) too.
            // %g's implied axis=-1 equals %f's explicit one.
            R"(graph @f(%x: f32[4]) {
  %a = exp(%x)
  %c = add(%a, %a)
  %f = softmax(%c) {axis=-1}
  return %c, %f, %f
}
)");
}

TEST(CseTest, IntAndFloatAttributesCompareByValue) {
  CsePass pass;
  Graph g("f");
  ValueId a = g.add_node(Op::Full, {}, {{"shape", IntList{2}}, {"value", int64_t{1}}});
  ValueId b = g.add_node(Op::Full, {}, {{"shape", IntList{2}}, {"value", 1.0}});
  ValueId c = g.add_node(Op::Full, {}, {{"shape", IntList{2}}, {"value", 2.0}});
  g.set_outputs({a, b, c});
  StatusOr<bool> changed = pass.run(g);
  ASSERT_TRUE(changed.ok() && *changed);
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{a, a, c}));
}

TEST(CseTest, MergesRandomOpsOfOneKey) {
  CsePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%k: i64[2], %k2: i64[2], %s: f32[4] {state}) {
  %r1 = random_uniform(%k) {shape=[4]}
  %r2 = random_uniform(%k) {shape=[4]}
  %r3 = random_uniform(%k2) {shape=[4]}
  %t = add(%r2, %r3)
  assign(%s, %t)
  return %r1
}
)"),
            R"(graph @f(%k: i64[2], %k2: i64[2], %s: f32[4] {state}) {
  %r1 = random_uniform(%k) {shape=[4]}
  %r3 = random_uniform(%k2) {shape=[4]}
  %t = add(%r1, %r3)
  assign(%s, %t)
  return %r1
}
)");
}

TEST(CseTest, NeverMergesStatements) {
  // Two equal assigns are invalid IR (the verifier says so), but CSE must not hide that.
  CsePass pass;
  Graph g("f");
  ValueId s = g.add_input("s", {DType::f32, {4}}, InputKind::state);
  g.add_node(Op::Assign, {s, s});
  g.add_node(Op::Assign, {s, s});
  StatusOr<bool> changed = pass.run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g.nodes().size(), 2u);
}

TEST(CseTest, NoChangeWhenAllNodesDiffer) {
  CsePass pass;
  const char* distinct = R"(graph @f(%x: f32[4], %y: f32[4]) -> (f32[4], f32[4], f32[]) {
  %a = add(%x, %y) : f32[4]
  %b = add(%y, %x) : f32[4]
  %c = sum(%a) : f32[]
  %d = sum(%a) {axes=[0], keepdims=true} : f32[1]
  return %a, %b, %c
}
)";
  EXPECT_EQ(run_pass_on_text(pass, distinct), std::string(distinct) + "(no change)\n");
}

}  // namespace
}  // namespace weft

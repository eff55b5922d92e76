// fuse-elementwise (passes/fuse_elementwise.h): grouping, reduction roots, extra results,
// the predicate, and an f32 training step fused bitwise as before. Row groups are in
// fuse_elementwise_rows_test.cc, f16/bf16 graphs in fuse_elementwise_half_test.cc.
#include "passes/fuse_elementwise.h"

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "passes/pass_testing.h"
#include "passes/step_testing.h"

namespace weft {
namespace {

int count_op(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

TEST(FuseElementwiseTest, GroupsAChainAndKeepsASharedValue) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,5], %b: f32[5]) {
  %h = add(%x, %b) : f32[4,5]
  %g = gelu(%h) : f32[4,5]
  %y = mul(%g, %x) : f32[4,5]
  %s = sum(%y) : f32[]
  return %s, %h
})"),
            R"(graph @f(%x: f32[4,5], %b: f32[5]) -> (f32[], f32[4,5]) {
  %h = fused(%x, %b) : f32[4,5] ({
    ^body(%0: f32[4,5], %1: f32[5]):
      %t0 = add(%0, %1) : f32[4,5]
      return %t0
  })
  %s = fused(%h, %x) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,5], %1: f32[4,5]):
      %t0 = gelu(%0) : f32[4,5]
      %t1 = mul(%t0, %1) : f32[4,5]
      %t2 = sum(%t1) : f32[]
      return %t2
  })
  return %s, %h
}
)");
}

// Layer-norm backward's row sums: the reduction absorbs the producers of its input's
// shape; a broadcast operand joins as a kernel operand.
TEST(FuseElementwiseTest, AReductionIsTheRootOfItsProducers) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,6], %y: f32[8,6], %w: f32[6]) {
  %gw = mul(%g, %w) : f32[8,6]
  %p = mul(%gw, %y) : f32[8,6]
  %s = mean(%p) {axes=[-1], keepdims=true} : f32[8,1]
  return %s
})"),
            R"(graph @f(%g: f32[8,6], %y: f32[8,6], %w: f32[6]) -> (f32[8,1]) {
  %s = fused(%g, %w, %y) {kind="reduction"} : f32[8,1] ({
    ^body(%0: f32[8,6], %1: f32[6], %2: f32[8,6]):
      %t0 = mul(%0, %1) : f32[8,6]
      %t1 = mul(%t0, %2) : f32[8,6]
      %t2 = mean(%t1) {axes=[-1], keepdims=true} : f32[8,1]
      return %t2
  })
  return %s
}
)");
}

// A producer used outside the group stays a kernel of its own; a reduction that would
// absorb nothing stays the library's reduction; argmax (i64) is never a root.
TEST(FuseElementwiseTest, AReductionAbsorbsOnlyPrivateProducers) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,6], %x: f32[8,6]) {
  %p = mul(%g, %x) : f32[8,6]
  %s = sum(%p) {axes=[0]} : f32[6]
  %m = max(%x) {axes=[1]} : f32[8]
  %i = argmax(%p) {axis=1} : i64[8]
  return %s, %m, %i
})"),
            R"(graph @f(%g: f32[8,6], %x: f32[8,6]) -> (f32[6], f32[8], i64[8]) {
  %p = fused(%g, %x) : f32[8,6] ({
    ^body(%0: f32[8,6], %1: f32[8,6]):
      %t0 = mul(%0, %1) : f32[8,6]
      return %t0
  })
  %s = sum(%p) {axes=[0]} : f32[6]
  %m = max(%x) {axes=[1]} : f32[8]
  %i = argmax(%p) {axis=1} : i64[8]
  return %s, %m, %i
}
)");
}

// For a backend without library reductions (CUDA), lone reductions are kernels of one.
TEST(FuseElementwiseTest, LoneReductionsBecomeKernelsWhenAsked) {
  FuseOptions options;
  options.lone_reductions = true;
  FuseElementwisePass pass(options);
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,6], %x: f32[8,6]) {
  %p = mul(%g, %x) : f32[8,6]
  %s = sum(%p) {axes=[0]} : f32[6]
  %m = max(%x) {axes=[1]} : f32[8]
  return %s, %m, %p
})"),
            R"(graph @f(%g: f32[8,6], %x: f32[8,6]) -> (f32[6], f32[8], f32[8,6]) {
  %p = fused(%g, %x) : f32[8,6] ({
    ^body(%0: f32[8,6], %1: f32[8,6]):
      %t0 = mul(%0, %1) : f32[8,6]
      return %t0
  })
  %s = fused(%p) {kind="reduction"} : f32[6] ({
    ^body(%0: f32[8,6]):
      %t0 = sum(%0) {axes=[0]} : f32[6]
      return %t0
  })
  %m = fused(%x) {kind="reduction"} : f32[8] ({
    ^body(%0: f32[8,6]):
      %t0 = max(%0) {axes=[1]} : f32[8]
      return %t0
  })
  return %s, %m, %p
}
)");
}

// Batch-norm statistics: a producer of a different shape than the reduction's input
// (here the [C] scale) is not absorbed; the predicate can keep reductions out.
TEST(FuseElementwiseTest, ReductionRootsFollowShapesAndThePredicate) {
  const char* text = R"(graph @f(%d: f32[2,3,4,4], %x: f32[2,3,4,4], %c: f32[3,1,1]) {
  %e = exp(%c) : f32[3,1,1]
  %s = sub(%x, %e) : f32[2,3,4,4]
  %p = mul(%d, %s) : f32[2,3,4,4]
  %r = sum(%p) {axes=[0,2,3]} : f32[3]
  return %r
})";
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, text),
            R"(graph @f(%d: f32[2,3,4,4], %x: f32[2,3,4,4], %c: f32[3,1,1]) -> (f32[3]) {
  %e = fused(%c) : f32[3,1,1] ({
    ^body(%0: f32[3,1,1]):
      %t0 = exp(%0) : f32[3,1,1]
      return %t0
  })
  %r = fused(%x, %e, %d) {kind="reduction"} : f32[3] ({
    ^body(%0: f32[2,3,4,4], %1: f32[3,1,1], %2: f32[2,3,4,4]):
      %t0 = sub(%0, %1) : f32[2,3,4,4]
      %t1 = mul(%2, %t0) : f32[2,3,4,4]
      %t2 = sum(%t1) {axes=[0, 2, 3]} : f32[3]
      return %t2
  })
  return %r
}
)");
  FuseElementwisePass no_reductions(FuseOptions{.fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise && default_fusible(g, n);
  }});
  const std::string unfused = run_pass_on_text(no_reductions, text);
  EXPECT_NE(unfused.find("%r = sum(%p) {axes=[0, 2, 3]} : f32[3]"), std::string::npos) << unfused;
}

TEST(FuseElementwiseTest, SmallerProducersStayKernelsOfTheirOwn) {
  // exp(%b) has 5 elements but would be recomputed for each of 20: not absorbed.
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,5], %b: f32[5]) {
  %e = exp(%b) : f32[5]
  %y = add(%x, %e) : f32[4,5]
  return %y
})"),
            R"(graph @f(%x: f32[4,5], %b: f32[5]) -> (f32[4,5]) {
  %e = fused(%b) : f32[5] ({
    ^body(%0: f32[5]):
      %t0 = exp(%0) : f32[5]
      return %t0
  })
  %y = fused(%x, %e) : f32[4,5] ({
    ^body(%0: f32[4,5], %1: f32[5]):
      %t0 = add(%0, %1) : f32[4,5]
      return %t0
  })
  return %y
}
)");
}

// A value that leaves the group only through assigns becomes one more result of the
// kernel (an optimizer's moment estimate), and its assign moves after the kernel.
TEST(FuseElementwiseTest, AssignedValuesBecomeExtraResults) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%p: f32[4] {param}, %m: f32[4] {state}, %g: f32[4]) {
  %m1 = add(%m, %g) : f32[4]
  assign(%m, %m1)
  %s = mul(%m1, %g) : f32[4]
  %p1 = sub(%p, %s) : f32[4]
  assign(%p, %p1)
  %l = sum(%p) : f32[]
  return %l
})"),
            R"(graph @f(%p: f32[4] {param}, %m: f32[4] {state}, %g: f32[4]) -> (f32[]) {
  %p1, %m1 = fused(%m, %g, %p) : f32[4], f32[4] ({
    ^body(%0: f32[4], %1: f32[4], %2: f32[4]):
      %t0 = add(%0, %1) : f32[4]
      %t1 = mul(%t0, %1) : f32[4]
      %t2 = sub(%2, %t1) : f32[4]
      return %t2, %t0
  })
  assign(%m, %m1)
  assign(%p, %p1)
  %l = sum(%p) : f32[]
  return %l
}
)");
}

// An LSTM cell's shape: the gate activations feed the cell's kernel and are read again
// later (by its backward): they leave that kernel as extra results instead of being
// kernels of their own.
TEST(FuseElementwiseTest, ValuesReadAfterTheRootBecomeExtraResults) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%i: f32[2,2], %g: f32[2,2], %c: f32[2,2], %w: f32[2,2]) {
  %si = sigmoid(%i) : f32[2,2]
  %tg = tanh(%g) : f32[2,2]
  %u = mul(%si, %tg) : f32[2,2]
  %c1 = add(%c, %u) : f32[2,2]
  %m = matmul(%w, %c1) : f32[2,2]
  %d = mul(%m, %si) : f32[2,2]
  %e = mul(%d, %tg) : f32[2,2]
  return %e
})"),
            R"(graph @f(%i: f32[2,2], %g: f32[2,2], %c: f32[2,2], %w: f32[2,2]) -> (f32[2,2]) {
  %c1, %si, %tg = fused(%i, %g, %c) : f32[2,2], f32[2,2], f32[2,2] ({
    ^body(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]):
      %t0 = sigmoid(%0) : f32[2,2]
      %t1 = tanh(%1) : f32[2,2]
      %t2 = mul(%t0, %t1) : f32[2,2]
      %t3 = add(%2, %t2) : f32[2,2]
      return %t3, %t0, %t1
  })
  %m = matmul(%w, %c1) : f32[2,2]
  %e = fused(%m, %si, %tg) : f32[2,2] ({
    ^body(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]):
      %t0 = mul(%0, %1) : f32[2,2]
      %t1 = mul(%t0, %2) : f32[2,2]
      return %t1
  })
  return %e
}
)");
}

TEST(FuseElementwiseTest, NoChangeWithoutElementwiseNodes) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,5], %w: f32[5,3]) {
  %y = matmul(%x, %w) : f32[4,3]
  return %y
})"),
            R"(graph @f(%x: f32[4,5], %w: f32[5,3]) -> (f32[4,3]) {
  %y = matmul(%x, %w) : f32[4,3]
  return %y
}
(no change)
)");
}

TEST(FuseElementwiseTest, ThePredicateDecides) {
  FuseElementwisePass pass(FuseOptions{.fusible = [](const Graph& g, const Node& n) {
    return default_fusible(g, n) && n.op != Op::Exp;
  }});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[3]) {
  %a = neg(%x) : f32[3]
  %e = exp(%a) : f32[3]
  %y = relu(%e) : f32[3]
  return %y
})"),
            R"(graph @f(%x: f32[3]) -> (f32[3]) {
  %a = fused(%x) : f32[3] ({
    ^body(%0: f32[3]):
      %t0 = neg(%0) : f32[3]
      return %t0
  })
  %e = exp(%a) : f32[3]
  %y = fused(%e) : f32[3] ({
    ^body(%0: f32[3]):
      %t0 = relu(%0) : f32[3]
      return %t0
  })
  return %y
}
)");
}

TEST(FuseElementwiseTest, RequiresTypes) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, "graph @f(%x: f32[3]) {\n  %a = neg(%x)\n  return %a\n}"),
            "test.wir:2:3: error: fuse-elementwise: %a has no type; run infer-types first");
}

// The training step of a small MLP with Adam: kernel counts after fusion (golden), and
// the fused step computes bitwise what the unfused one does on the reference interpreter.
TEST(FuseElementwiseTest, TrainingStepOfAnMlp) {
  auto net = FlowBuilder::from(Linear(12, 16)).through(GELU()).through(Linear(16, 5)).build();
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), OptimizerSpec::adam());
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  const Graph& before = trainer->step_graph();
  Graph after = before;
  FuseElementwisePass pass;
  ASSERT_TRUE(pass.run(after).ok());
  ASSERT_TRUE(verify(after).ok()) << verify(after).to_string();
  int elementwise_before = 0;
  for (const Node& n : before.nodes()) {
    elementwise_before += n.info().category == OpCategory::Elementwise;
  }
  int elementwise_after = 0;
  for (const Node& n : after.nodes()) {
    elementwise_after += n.info().category == OpCategory::Elementwise;
  }
  EXPECT_EQ(elementwise_after, 0);
  std::printf("elementwise nodes %d -> fused kernels %d; nodes %zu -> %zu\n", elementwise_before,
              count_op(after, Op::Fused), before.nodes().size(), after.nodes().size());
  // From 78 elementwise nodes; each Adam update (moments and parameter) is one kernel,
  // and values the backward reads again leave their forward kernel as extra results
  // instead of being kernels of their own.
  EXPECT_EQ(count_op(after, Op::Fused), 11);
  int reductions = 0;
  for (const Node& n : after.nodes()) {
    reductions += n.op == Op::Fused && n.str_attr("kind") == "reduction";
  }
  std::printf("fused kernels with a reduction root: %d\n", reductions);

  expect_same_step(before, after);
}

}  // namespace
}  // namespace weft

#include "passes/fuse_elementwise.h"

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "passes/decompose_composites.h"
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

// Softmax backward as autodiff writes it (dx = y (g - sum(g y))): the keepdims sum and
// its consumers are one row kernel.
TEST(FuseElementwiseTest, SoftmaxBackwardIsOneRowKernel) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8,6], %y: f32[8,6]) {
  %p = mul(%g, %y) : f32[8,6]
  %dot = sum(%p) {axes=[1], keepdims=true} : f32[8,1]
  %c = sub(%g, %dot) : f32[8,6]
  %dx = mul(%y, %c) : f32[8,6]
  return %dx
})"),
            R"(graph @f(%g: f32[8,6], %y: f32[8,6]) -> (f32[8,6]) {
  %dx = fused(%g, %y) {kind="row"} : f32[8,6] ({
    ^body(%0: f32[8,6], %1: f32[8,6]):
      %t0 = mul(%0, %1) : f32[8,6]
      %t1 = sum(%t0) {axes=[1], keepdims=true} : f32[8,1]
      %t2 = sub(%0, %t1) : f32[8,6]
      %t3 = mul(%1, %t2) : f32[8,6]
      return %t3
  })
  return %dx
}
)");
}

/// The top-level nodes of a printed graph.
int count_nodes(const std::string& printed) {
  int n = 0;
  for (size_t at = 0; (at = printed.find("\n  %", at)) != std::string::npos; ++at) ++n;
  return n;
}

// Log-softmax, decomposed: the per-row log of the sum opens the row group (a row
// reduction computes it), %d feeds the exp and the result, %e joins once the sum has.
TEST(FuseElementwiseTest, LogSoftmaxIsOneRowKernel) {
  FuseElementwisePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[2,4,16]) {
  %m = max(%x) {axes=[-1], keepdims=true} : f32[2,4,1]
  %d = sub(%x, %m) : f32[2,4,16]
  %e = exp(%d) : f32[2,4,16]
  %s = sum(%e) {axes=[-1], keepdims=true} : f32[2,4,1]
  %l = log(%s) : f32[2,4,1]
  %y = sub(%d, %l) : f32[2,4,16]
  return %y
})"),
            R"(graph @f(%x: f32[2,4,16]) -> (f32[2,4,16]) {
  %y = fused(%x) {kind="row"} : f32[2,4,16] ({
    ^body(%0: f32[2,4,16]):
      %t0 = max(%0) {axes=[-1], keepdims=true} : f32[2,4,1]
      %t1 = sub(%0, %t0) : f32[2,4,16]
      %t2 = exp(%t1) : f32[2,4,16]
      %t3 = sum(%t2) {axes=[-1], keepdims=true} : f32[2,4,1]
      %t4 = log(%t3) : f32[2,4,1]
      %t5 = sub(%t1, %t4) : f32[2,4,16]
      return %t5
  })
  return %y
}
)");
  // Softmax after a scale (attention's 1/√d) and before a dropout-like mask: one kernel.
  const std::string softmax = run_pass_on_text(pass, R"(graph @f(%x: f32[2,4,16], %c: f32[], %k: f32[2,4,16]) {
  %z = mul(%x, %c) : f32[2,4,16]
  %m = max(%z) {axes=[-1], keepdims=true} : f32[2,4,1]
  %d = sub(%z, %m) : f32[2,4,16]
  %e = exp(%d) : f32[2,4,16]
  %s = sum(%e) {axes=[-1], keepdims=true} : f32[2,4,1]
  %y = div(%e, %s) : f32[2,4,16]
  %o = mul(%y, %k) : f32[2,4,16]
  return %o
})");
  EXPECT_EQ(count_nodes(softmax), 1) << softmax;
  EXPECT_NE(softmax.find("%o = fused(%x, %c, %k) {kind=\"row\"}"), std::string::npos) << softmax;
}

// Layer-norm backward (autodiff/rules_composite.cc) with the gain's gradient, a sum of
// g x̂ over the batch: x̂ is used after the row kernel's root, so it joins the row
// kernel as a second result; the column sum stays a reduction kernel of its own.
TEST(FuseElementwiseTest, LayerNormBackwardIsOneRowKernel) {
  FuseElementwisePass pass;
  const std::string after = run_pass_on_text(pass, R"(graph @f(%x: f32[4,8], %g: f32[4,8], %w: f32[8], %eps: f32[]) {
  %mu = mean(%x) {axes=[-1], keepdims=true} : f32[4,1]
  %xc = sub(%x, %mu) : f32[4,8]
  %sq = mul(%xc, %xc) : f32[4,8]
  %var = mean(%sq) {axes=[-1], keepdims=true} : f32[4,1]
  %ve = add(%var, %eps) : f32[4,1]
  %r = rsqrt(%ve) : f32[4,1]
  %xh = mul(%xc, %r) : f32[4,8]
  %dxh = mul(%g, %w) : f32[4,8]
  %m1 = mean(%dxh) {axes=[-1], keepdims=true} : f32[4,1]
  %pr = mul(%dxh, %xh) : f32[4,8]
  %m2 = mean(%pr) {axes=[-1], keepdims=true} : f32[4,1]
  %a = sub(%dxh, %m1) : f32[4,8]
  %bb = mul(%xh, %m2) : f32[4,8]
  %in = sub(%a, %bb) : f32[4,8]
  %dx = mul(%r, %in) : f32[4,8]
  %gx = mul(%g, %xh) : f32[4,8]
  %dw = sum(%gx) {axes=[0]} : f32[8]
  return %dx, %dw
})");
  EXPECT_NE(after.find("%dx, %xh = fused(%x, %eps, %g, %w) {kind=\"row\"}"), std::string::npos) << after;
  EXPECT_NE(after.find("%dw = fused(%g, %xh) {kind=\"reduction\"}"), std::string::npos) << after;
  EXPECT_EQ(count_nodes(after), 2) << after;
}

// The gain's gradient uses x - mean and rstd before the row group's root (a GELU backward
// after layer norm's): they still leave the row kernel as results, since that user does
// not lead back into the group.
TEST(FuseElementwiseTest, AnEarlierUserThatDoesNotLeadBack) {
  FuseElementwisePass pass;
  const std::string after = run_pass_on_text(pass, R"(graph @f(%x: f32[4,8], %g: f32[4,8], %k: f32[4,8]) {
  %mu = mean(%x) {axes=[-1], keepdims=true} : f32[4,1]
  %xc = sub(%x, %mu) : f32[4,8]
  %sq = mul(%xc, %xc) : f32[4,8]
  %var = mean(%sq) {axes=[-1], keepdims=true} : f32[4,1]
  %r = rsqrt(%var) : f32[4,1]
  %xh = mul(%xc, %r) : f32[4,8]
  %m = mean(%g) {axes=[-1], keepdims=true} : f32[4,1]
  %gx = mul(%g, %xh) : f32[4,8]
  %dw = sum(%gx) {axes=[0]} : f32[8]
  %a = sub(%g, %m) : f32[4,8]
  %dx = mul(%r, %a) : f32[4,8]
  %out = mul(%dx, %k) : f32[4,8]
  return %out, %dw
})");
  EXPECT_NE(after.find("%out, %xc, %r = fused(%x, %g, %k) {kind=\"row\"}"), std::string::npos) << after;
  EXPECT_NE(after.find("%dw = fused(%xc, %r, %g) {kind=\"reduction\"}"), std::string::npos) << after;
  EXPECT_EQ(count_nodes(after), 2) << after;
}

// Only keepdims reductions of trailing axes take consumers: a column sum's consumer and
// a reduction without keepdims stay kernels of their own.
TEST(FuseElementwiseTest, OtherReductionsTakeNoConsumers) {
  FuseElementwisePass pass;
  const std::string after = run_pass_on_text(pass, R"(graph @f(%x: f32[4,8], %b: f32[4]) {
  %e = exp(%x) : f32[4,8]
  %c = sum(%e) {axes=[0], keepdims=true} : f32[1,8]
  %y = sub(%x, %c) : f32[4,8]
  %s = sum(%e) {axes=[1]} : f32[4]
  %z = add(%s, %b) : f32[4]
  return %y, %z
})");
  EXPECT_EQ(after.find("kind=\"row\""), std::string::npos) << after;
  EXPECT_NE(after.find("%z = fused(%s, %b) : f32[4]"), std::string::npos) << after;
  // A column sum's producers may use a row reduction's value: it stays outside (found
  // by LowerTest.RandomRowGraphsMatchTheReference).
  const std::string column = run_pass_on_text(pass, R"(graph @f(%x: f32[4,8]) {
  %m = max(%x) {axes=[1], keepdims=true} : f32[4,1]
  %d = sub(%x, %m) : f32[4,8]
  %c = sum(%d) {axes=[0], keepdims=true} : f32[1,8]
  return %c
})");
  EXPECT_NE(column.find("%c = fused(%x, %m) {kind=\"reduction\"}"), std::string::npos) << column;
  EXPECT_EQ(column.find("kind=\"row\""), std::string::npos) << column;
}

// A widening cast read only by kernels is recomputed in each: they load the bf16 value
// (no f32 copy stored).
TEST(FuseElementwiseTest, WideningCastsAreCopiedIntoEachUsersKernel) {
  // Half dtypes too (as codegen's predicate on the CPU).
  FuseElementwisePass pass(FuseOptions{.fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  }});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8,16]) {
  %w = cast(%h) {dtype=f32} : f32[8,16]
  %a = exp(%w) : f32[8,16]
  %s = sum(%w) {axes=[0]} : f32[16]
  return %a, %s
})"),
            R"(graph @f(%h: bf16[8,16]) -> (f32[8,16], f32[16]) {
  %a = fused(%h) : f32[8,16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = exp(%t0) : f32[8,16]
      return %t1
  })
  %s = fused(%h) {kind="reduction"} : f32[16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = sum(%t0) {axes=[0]} : f32[16]
      return %t1
  })
  return %a, %s
}
)");
  // A library user (matmul) keeps the cast as it was: it leaves its first user's kernel
  // as one more result, the sum stays the library's.
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8,16], %v: f32[16,4]) {
  %w = cast(%h) {dtype=f32} : f32[8,16]
  %a = exp(%w) : f32[8,16]
  %s = sum(%w) {axes=[0]} : f32[16]
  %m = matmul(%w, %v) : f32[8,4]
  return %a, %s, %m
})"),
            R"(graph @f(%h: bf16[8,16], %v: f32[16,4]) -> (f32[8,16], f32[16], f32[8,4]) {
  %a, %w = fused(%h) : f32[8,16], f32[8,16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = exp(%t0) : f32[8,16]
      return %t1, %t0
  })
  %s = sum(%w) {axes=[0]} : f32[16]
  %m = matmul(%w, %v) : f32[8,4]
  return %a, %s, %m
}
)");
  // A narrowing cast is never copied (it leaves its first user's kernel as one more
  // result).
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8], %x: f32[8]) {
  %w = cast(%h) {dtype=f32} : f32[8]
  %a = exp(%w) : f32[8]
  %b = neg(%w) : f32[8]
  %n = cast(%x) {dtype=bf16} : bf16[8]
  %c = neg(%n) : bf16[8]
  %d = abs(%n) : bf16[8]
  return %a, %b, %c, %d
})"),
            R"(graph @f(%h: bf16[8], %x: f32[8]) -> (f32[8], f32[8], bf16[8], bf16[8]) {
  %a = fused(%h) : f32[8] ({
    ^body(%0: bf16[8]):
      %t0 = cast(%0) {dtype=f32} : f32[8]
      %t1 = exp(%t0) : f32[8]
      return %t1
  })
  %b = fused(%h) : f32[8] ({
    ^body(%0: bf16[8]):
      %t0 = cast(%0) {dtype=f32} : f32[8]
      %t1 = neg(%t0) : f32[8]
      return %t1
  })
  %c, %n = fused(%x) : bf16[8], bf16[8] ({
    ^body(%0: f32[8]):
      %t0 = cast(%0) {dtype=bf16} : bf16[8]
      %t1 = neg(%t0) : bf16[8]
      return %t1, %t0
  })
  %d = fused(%n) : bf16[8] ({
    ^body(%0: bf16[8]):
      %t0 = abs(%0) : bf16[8]
      return %t0
  })
  return %a, %b, %c, %d
}
)");
}

// A lone reduction of a bf16 (f16) operand becomes a kernel of one with
// FuseOptions::lone_half_reductions (the CPU pipeline's: its library would reduce a
// converted f32 copy), without lone_reductions. An f32 one stays the library's; without
// the option, all three do.
TEST(FuseElementwiseTest, LoneHalfReductionsBecomeKernels) {
  const auto fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  };
  const char* text = R"(graph @f(%g: bf16[8,16], %x: f32[8,16], %h: f16[8,16]) {
  %b = sum(%g) {axes=[0]} : bf16[16]
  %s = sum(%x) {axes=[0]} : f32[16]
  %m = max(%h) {axes=[1]} : f16[8]
  return %b, %s, %m
})";
  FuseElementwisePass without(FuseOptions{.fusible = fusible});
  EXPECT_NE(run_pass_on_text(without, text).find("(no change)"), std::string::npos);
  FuseElementwisePass pass(FuseOptions{.fusible = fusible, .lone_half_reductions = true});
  EXPECT_EQ(run_pass_on_text(pass, text),
            R"(graph @f(%g: bf16[8,16], %x: f32[8,16], %h: f16[8,16]) -> (bf16[16], f32[16], f16[8]) {
  %b = fused(%g) {kind="reduction"} : bf16[16] ({
    ^body(%0: bf16[8,16]):
      %t0 = sum(%0) {axes=[0]} : bf16[16]
      return %t0
  })
  %s = sum(%x) {axes=[0]} : f32[16]
  %m = fused(%h) {kind="reduction"} : f16[8] ({
    ^body(%0: f16[8,16]):
      %t0 = max(%0) {axes=[1]} : f16[8]
      return %t0
  })
  return %b, %s, %m
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

// A bf16 step (autocast) with layer norm: its f32 views of bf16 activations are
// recomputed in each kernel that reads them rather than leaving a kernel as extra
// results, and the fused step computes bitwise what the unfused one does.
TEST(FuseElementwiseTest, Bf16TrainingStepRecomputesItsWideningCasts) {
  auto net = FlowBuilder::from(Linear(12, 16))
                 .through(GELU())
                 .through(LayerNorm(16))
                 .through(Linear(16, 5))
                 .build();
  TrainOptions options;
  options.precision = DType::bf16;
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), OptimizerSpec::adam(), options);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  Graph before = trainer->step_graph();
  ASSERT_TRUE(DecomposeCompositesPass().run(before).ok());  // layer norm as primitives
  int shared_casts = 0;  // widening casts read by several nodes: what the test is about
  const std::vector<int> uses = before.use_counts();
  for (const Node& n : before.nodes()) {
    shared_casts += n.op == Op::Cast && before.type(n.operands[0]).dtype == DType::bf16 &&
                    before.type(n.result()).dtype == DType::f32 && uses[n.result()] > 1;
  }
  EXPECT_GT(shared_casts, 0);
  Graph after = before;
  const auto fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  };
  // The CPU's lone_half_reductions.
  FuseElementwisePass pass(FuseOptions{.fusible = fusible, .lone_half_reductions = true});
  ASSERT_TRUE(pass.run(after).ok());
  ASSERT_TRUE(verify(after).ok()) << verify(after).to_string();
  int wide_results = 0;
  for (const Node& n : after.nodes()) {
    if (n.op != Op::Fused) continue;
    for (size_t r = 1; r < n.results.size(); ++r) {  // the extra results
      const Node& made = n.body->node(n.body->value(n.body->outputs()[r]).node);
      wide_results += made.op == Op::Cast && n.body->type(made.operands[0]).dtype == DType::bf16;
    }
  }
  // The logits' f32 view, also read by the library's cross_entropy, is stored once; the
  // layer norm's input and output gradient (3 more without the copies) are not.
  EXPECT_EQ(wide_results, 1);
  // The bf16 bias gradients' column sums are kernels (none left to the library).
  int half_library_reductions = 0, half_kernel_reductions = 0;
  for (const Node& n : after.nodes()) {
    const bool half = !n.operands.empty() && after.type(n.operands[0]).dtype == DType::bf16;
    half_library_reductions += n.info().category == OpCategory::Reduction && half;
    if (n.op == Op::Fused && n.body->nodes().size() == 1) {
      const Node& only = n.body->node(0);
      half_kernel_reductions += only.info().category == OpCategory::Reduction &&
                                n.body->type(only.operands[0]).dtype == DType::bf16;
    }
  }
  EXPECT_EQ(half_library_reductions, 0);
  EXPECT_GT(half_kernel_reductions, 0);
  expect_same_step(before, after);
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

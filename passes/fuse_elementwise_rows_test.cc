// fuse-elementwise's row groups (passes/fuse_elementwise.h): softmax, log-softmax and
// layer norm as one row kernel each, and what a row group may and may not take. The
// pass's other tests: fuse_elementwise_test.cc, fuse_elementwise_half_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "passes/fuse_elementwise.h"
#include "passes/pass_testing.h"

namespace weft {
namespace {

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

}  // namespace
}  // namespace weft

#include "passes/rematerialize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

// Batch norm's shape: %x = a − μ is kept for the backward (the select reads it last),
// %y = x·s is read by ReLU in the forward and by ReLU's gradient (the mask y > 0) after
// the matmul: recomputed there from %x and the small %s, so %y dies at the ReLU.
TEST(RematerializeTest, AReadAcrossAKernelBoundaryIsRecomputedFromValuesLiveThere) {
  RematerializePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%a: f32[64,8], %mu: f32[1,8], %s: f32[1,8], %w: f32[8,8]) {
  %x = sub(%a, %mu) : f32[64,8]
  %y = mul(%x, %s) : f32[64,8]
  %r = relu(%y) : f32[64,8]
  %c = matmul(%r, %w) : f32[64,8]
  %z = full() {dtype=f32, shape=[], value=0.0} : f32[]
  %m = gt(%y, %z) : bool[64,8]
  %g = select(%m, %c, %x) : f32[64,8]
  return %g
})"),
            R"(graph @f(%a: f32[64,8], %mu: f32[1,8], %s: f32[1,8], %w: f32[8,8]) -> (f32[64,8]) {
  %x = sub(%a, %mu) : f32[64,8]
  %y = mul(%x, %s) : f32[64,8]
  %r = relu(%y) : f32[64,8]
  %c = matmul(%r, %w) : f32[64,8]
  %z = full() {dtype=f32, shape=[], value=0.0} : f32[]
  %0 = mul(%x, %s) : f32[64,8]
  %m = gt(%0, %z) : bool[64,8]
  %g = select(%m, %c, %x) : f32[64,8]
  return %g
}
)");
}

// %x is read by nothing after the matmul: it is recomputed too, from the input %a and
// the small %mu (a chain of two), and %y's producer, read by nothing else, goes.
TEST(RematerializeTest, AChainIsRecomputedAndAProducerLeftUnreadIsRemoved) {
  RematerializePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%a: f32[64,8], %mu: f32[1,8], %s: f32[1,8], %w: f32[8,8]) {
  %x = sub(%a, %mu) : f32[64,8]
  %y = mul(%x, %s) : f32[64,8]
  %c = matmul(%x, %w) : f32[64,8]
  %g = mul(%y, %c) : f32[64,8]
  return %g
})"),
            R"(graph @f(%a: f32[64,8], %mu: f32[1,8], %s: f32[1,8], %w: f32[8,8]) -> (f32[64,8]) {
  %x = sub(%a, %mu) : f32[64,8]
  %c = matmul(%x, %w) : f32[64,8]
  %0 = sub(%a, %mu) : f32[64,8]
  %1 = mul(%0, %s) : f32[64,8]
  %g = mul(%1, %c) : f32[64,8]
  return %g
}
)");
}

// No kernel boundary between the producer and the read (fusion keeps %y in registers),
// a reader that is not elementwise (the matmul), an output, an assigned value, an operand
// dead at the read and not recomputable (a matmul's result), two operands of %y's size:
// nothing is recomputed.
TEST(RematerializeTest, NoChangeWhereRecomputingWouldNotFreeMemoryForFree) {
  RematerializePass pass;
  EXPECT_THAT(run_pass_on_text(pass, R"(graph @f(%a: f32[64,8], %b: f32[64,8], %s: f32[1,8], %w: f32[8,8], %p: f32[64,8] {state}) {
  %y = mul(%a, %s) : f32[64,8]
  %r = relu(%y) : f32[64,8]
  %c = matmul(%y, %w) : f32[64,8]
  %o = neg(%a) : f32[64,8]
  %q = exp(%a) : f32[64,8]
  assign(%p, %q)
  %d = matmul(%a, %w) : f32[64,8]
  %t = mul(%d, %s) : f32[64,8]
  %two = mul(%d, %b) : f32[64,8]
  %e = matmul(%r, %w) : f32[64,8]
  %g1 = add(%o, %e) : f32[64,8]
  %g2 = add(%q, %g1) : f32[64,8]
  %g3 = add(%t, %g2) : f32[64,8]
  %g4 = add(%two, %g3) : f32[64,8]
  %g5 = add(%c, %g4) : f32[64,8]
  return %g5, %o
})"),
            ::testing::HasSubstr("(no change)"));
}

// A norm's centred values read again after its statistics (a reduction between): row
// kernels keep them in one kernel, so they are not recomputed.
TEST(RematerializeTest, AReductionIsNoKernelBoundary) {
  RematerializePass pass;
  EXPECT_THAT(run_pass_on_text(pass, R"(graph @f(%h: f32[64,128], %mu: f32[64,1]) {
  %xc = sub(%h, %mu) : f32[64,128]
  %sq = mul(%xc, %xc) : f32[64,128]
  %var = mean(%sq) {axes=[1], keepdims=true} : f32[64,1]
  %y = mul(%xc, %var) : f32[64,128]
  return %y
})"),
              ::testing::HasSubstr("(no change)"));
}

// The recomputation may read one value of the recomputed value's size, not two.
TEST(RematerializeTest, AtMostOneLargeOperand) {
  RematerializePass pass;
  EXPECT_THAT(run_pass_on_text(pass, R"(graph @f(%a: f32[64,8], %b: f32[64,8], %w: f32[8,8]) {
  %y = mul(%a, %b) : f32[64,8]
  %c = matmul(%y, %w) : f32[64,8]
  %g = mul(%y, %c) : f32[64,8]
  return %g
})"),
              ::testing::HasSubstr("(no change)"));
}

}  // namespace
}  // namespace weft

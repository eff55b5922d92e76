#include "passes/fold_slices.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

// A cell's gates: two column windows of one value read by one kernel; the slices go.
TEST(FoldSlicesTest, ColumnWindowsBecomeTheKernelsInputs) {
  FoldSlicesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%gates: f32[4,16], %c: f32[4,8]) {
  %i = slice(%gates) {start=[0,0], stop=[4,8]} : f32[4,8]
  %f = slice(%gates) {start=[0,8], stop=[4,16]} : f32[4,8]
  %h = fused(%i, %f, %c) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]):
      %t0 = mul(%0, %2) : f32[4,8]
      %t1 = add(%t0, %1) : f32[4,8]
      return %t1
  })
  return %h
})"),
            R"(graph @f(%gates: f32[4,16], %c: f32[4,8]) -> (f32[4,8]) {
  %h = fused(%gates, %gates, %c) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,16], %2: f32[4,8]):
      %3 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %4 = slice(%1) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %t0 = mul(%3, %2) : f32[4,8]
      %t1 = add(%t0, %4) : f32[4,8]
      return %t1
  })
  return %h
}
)");
}

// Not folded: a strided slice, a slice of a source with the kernel's result shape, a
// slice read by a reduction kernel.
TEST(FoldSlicesTest, OnlyUnitStepWindowsIntoElementwiseKernelsOfAnotherShape) {
  FoldSlicesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,16], %y: f32[4,8]) {
  %s = slice(%x) {start=[0,0], stop=[4,16], step=[1,2]} : f32[4,8]
  %a = fused(%s, %y) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  %r = slice(%y) {start=[0,0], stop=[1,8]} : f32[1,8]
  %b = fused(%r, %y) : f32[4,8] ({
    ^body(%0: f32[1,8], %1: f32[4,8]):
      %t0 = add(%0, %1) : f32[4,8]
      return %t0
  })
  %w = slice(%x) {start=[0,8], stop=[4,16]} : f32[4,8]
  %c = fused(%w) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,8]):
      %t0 = sum(%0) : f32[]
      return %t0
  })
  return %a, %b, %c
})"),
            R"(graph @f(%x: f32[4,16], %y: f32[4,8]) -> (f32[4,8], f32[4,8], f32[]) {
  %s = slice(%x) {start=[0, 0], step=[1, 2], stop=[4, 16]} : f32[4,8]
  %a = fused(%s, %y) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  %r = slice(%y) {start=[0, 0], stop=[1, 8]} : f32[1,8]
  %b = fused(%r, %y) : f32[4,8] ({
    ^body(%0: f32[1,8], %1: f32[4,8]):
      %t0 = add(%0, %1) : f32[4,8]
      return %t0
  })
  %w = slice(%x) {start=[0, 8], stop=[4, 16]} : f32[4,8]
  %c = fused(%w) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,8]):
      %t0 = sum(%0) : f32[]
      return %t0
  })
  return %a, %b, %c
}
(no change)
)");
}

// A gate column [4,1] broadcast along the rows of a [4,8] kernel folds as well.
TEST(FoldSlicesTest, ABroadcastWindowFolds) {
  FoldSlicesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,3], %y: f32[4,8]) {
  %g = slice(%x) {start=[0,1], stop=[4,2]} : f32[4,1]
  %a = fused(%g, %y) : f32[4,8] ({
    ^body(%0: f32[4,1], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  return %a
})"),
            R"(graph @f(%x: f32[4,3], %y: f32[4,8]) -> (f32[4,8]) {
  %a = fused(%x, %y) : f32[4,8] ({
    ^body(%0: f32[4,3], %1: f32[4,8]):
      %2 = slice(%0) {start=[0, 1], stop=[4, 2]} : f32[4,1]
      %t0 = mul(%2, %1) : f32[4,8]
      return %t0
  })
  return %a
}
)");
}

// Not folded: a column read along its rows by a kernel of its own shape (the ponder
// example's halting score, column 128 of a [n,129] carry, in an [n,1] kernel). The
// kernel's innermost loop would step by 3 through %x; it loads consecutive elements.
TEST(FoldSlicesTest, AColumnReadAlongItsRowsStays) {
  FoldSlicesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,3], %y: f32[4,1]) {
  %g = slice(%x) {start=[0,2], stop=[4,3]} : f32[4,1]
  %a = fused(%g, %y) : f32[4,1] ({
    ^body(%0: f32[4,1], %1: f32[4,1]):
      %t0 = mul(%0, %1) : f32[4,1]
      return %t0
  })
  return %a
})"),
            R"(graph @f(%x: f32[4,3], %y: f32[4,1]) -> (f32[4,1]) {
  %g = slice(%x) {start=[0, 2], stop=[4, 3]} : f32[4,1]
  %a = fused(%g, %y) : f32[4,1] ({
    ^body(%0: f32[4,1], %1: f32[4,1]):
      %t0 = mul(%0, %1) : f32[4,1]
      return %t0
  })
  return %a
}
(no change)
)");
}

TEST(FoldSlicesTest, ASliceReadElsewhereStays) {
  FoldSlicesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,16], %y: f32[4,8]) {
  %w = slice(%x) {start=[0,8], stop=[4,16]} : f32[4,8]
  %a = fused(%w, %y) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  return %a, %w
})"),
            R"(graph @f(%x: f32[4,16], %y: f32[4,8]) -> (f32[4,8], f32[4,8]) {
  %w = slice(%x) {start=[0, 8], stop=[4, 16]} : f32[4,8]
  %a = fused(%x, %y) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,8]):
      %2 = slice(%0) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %t0 = mul(%2, %1) : f32[4,8]
      return %t0
  })
  return %a, %w
}
)");
}

}  // namespace
}  // namespace weft

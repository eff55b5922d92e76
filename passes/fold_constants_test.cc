#include "passes/fold_constants.h"

#include <gtest/gtest.h>

#include "passes/infer_types.h"
#include "passes/pass_testing.h"

namespace weft {
namespace {

/// infer-types, then fold-constants; "(no change)" refers to fold-constants alone.
class TypedFold : public Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  StatusOr<bool> run(Graph& g) override {
    WEFT_ASSIGN_OR_RETURN(bool typed, infer_.run(g));
    (void)typed;
    return fold_.run(g);
  }

 private:
  InferTypesPass infer_;
  FoldConstantsPass fold_;
};

std::string fold(std::string_view text) {
  TypedFold pass;
  return run_pass_on_text(pass, text);
}

TEST(FoldConstantsTest, HeaderExample) {
  EXPECT_EQ(fold(R"(graph @f(%x: f32[4]) {
  %two = full() {shape=[], value=2.0}
  %three = full() {shape=[4], value=3.0}
  %s = add(%two, %three)
  %y = mul(%x, %s)
  return %y
}
)"),
            R"(graph @f(%x: f32[4]) -> (f32[4]) {
  %two = full() {shape=[], value=2.0} : f32[]
  %three = full() {shape=[4], value=3.0} : f32[4]
  %s = full() {shape=[4], value=5.0} : f32[4]
  %y = mul(%x, %s) : f32[4]
  return %y
}
)");
}

TEST(FoldConstantsTest, RoundsLikeTheDtype) {
  // f32(0.1) + f32(0.2) in f32 is f32(0.3) = 0.30000001192092896, not 0.1 + 0.2 in f64;
  // integers wrap; -0.0 summed from +0.0 is +0.0; the mean of 3 f32 values is exact.
  EXPECT_EQ(fold(R"(graph @f() {
  %a = full() {shape=[], value=0.1}
  %b = full() {shape=[], value=0.2}
  %c = add(%a, %b)
  %d = full() {shape=[], value=0.1, dtype=f64}
  %e = div(%d, %d)
  %m = full() {shape=[], value=2147483647, dtype=i32}
  %one = full() {shape=[], value=1, dtype=i32}
  %w = add(%m, %one)
  %nz = full() {shape=[2, 3], value=-0.0}
  %s = sum(%nz) {axes=[1]}
  %k = full() {shape=[3], value=0.5}
  %mean = mean(%k)
  %sq = sqrt(%k)
  return %c, %e, %w, %s, %mean, %sq
}
)"),
            R"(graph @f() -> (f32[], f64[], i32[], f32[2], f32[], f32[3]) {
  %a = full() {shape=[], value=0.1} : f32[]
  %b = full() {shape=[], value=0.2} : f32[]
  %c = full() {shape=[], value=0.30000001192092896} : f32[]
  %d = full() {dtype=f64, shape=[], value=0.1} : f64[]
  %e = full() {dtype=f64, shape=[], value=1.0} : f64[]
  %m = full() {dtype=i32, shape=[], value=2147483647.0} : i32[]
  %one = full() {dtype=i32, shape=[], value=1.0} : i32[]
  %w = full() {dtype=i32, shape=[], value=-2147483648.0} : i32[]
  %nz = full() {shape=[2, 3], value=-0.0} : f32[2,3]
  %s = full() {shape=[2], value=0.0} : f32[2]
  %k = full() {shape=[3], value=0.5} : f32[3]
  %mean = full() {shape=[], value=0.5} : f32[]
  %sq = full() {shape=[3], value=0.7071067690849304} : f32[3]
  return %c, %e, %w, %s, %mean, %sq
}
)");
}

TEST(FoldConstantsTest, ComparisonsCastsSelectAndMovement) {
  EXPECT_EQ(fold(R"(graph @f(%x: f32[2]) {
  %a = full() {shape=[2], value=-2.7}
  %b = full() {shape=[], value=1.0}
  %lt = lt(%a, %b)
  %n = not(%lt)
  %i = cast(%a) {dtype=i64}
  %u = cast(%i) {dtype=u8}
  %sel = select(%lt, %a, %x)
  %t = broadcast_to(%sel) {shape=[3, 2]}
  %r = reshape(%t) {shape=[6]}
  %c = concat(%r, %r) {axis=0}
  %p = pad(%c) {low=[1], high=[0], value=-2.700000047683716}
  %q = pad(%c) {low=[1], high=[0], value=-2.7}
  %mx = max(%t) {axes=[0]}
  return %n, %u, %p, %q, %mx
}
)"),
            // pad's value -2.7 (an f64 attribute) stores as f32(-2.7) too, so both fold.
            R"(graph @f(%x: f32[2]) -> (bool[2], u8[2], f32[13], f32[13], f32[2]) {
  %a = full() {shape=[2], value=-2.7} : f32[2]
  %b = full() {shape=[], value=1.0} : f32[]
  %lt = full() {dtype=bool, shape=[2], value=1.0} : bool[2]
  %n = full() {dtype=bool, shape=[2], value=0.0} : bool[2]
  %i = full() {dtype=i64, shape=[2], value=-2.0} : i64[2]
  %u = full() {dtype=u8, shape=[2], value=254.0} : u8[2]
  %sel = full() {shape=[2], value=-2.7} : f32[2]
  %t = full() {shape=[3, 2], value=-2.7} : f32[3,2]
  %r = full() {shape=[6], value=-2.7} : f32[6]
  %c = full() {shape=[12], value=-2.7} : f32[12]
  %p = full() {shape=[13], value=-2.7} : f32[13]
  %q = full() {shape=[13], value=-2.7} : f32[13]
  %mx = full() {shape=[2], value=-2.7} : f32[2]
  return %n, %u, %p, %q, %mx
}
)");
}

TEST(FoldConstantsTest, NoChangeWhereFoldingIsNotExactOrHidesAnError) {
  // exp: libm is not correctly rounded; 0/0: a NaN; integer division by zero is a
  // runtime error; f16 arithmetic rounds through f32; %x is not a constant; max over
  // an empty axis is an error.
  const char* text = R"(graph @f(%x: f32[2]) -> (f32[2], f32[], i32[], f16[], f32[2], f32[2]) {
  %a = full() {shape=[2], value=1.0} : f32[2]
  %e = exp(%a) : f32[2]
  %z = full() {shape=[], value=0.0} : f32[]
  %nan = div(%z, %z) : f32[]
  %i = full() {dtype=i32, shape=[], value=3.0} : i32[]
  %iz = full() {dtype=i32, shape=[], value=0.0} : i32[]
  %d = div(%i, %iz) : i32[]
  %h = full() {dtype=f16, shape=[], value=0.1} : f16[]
  %hh = add(%h, %h) : f16[]
  %y = add(%x, %a) : f32[2]
  %empty = full() {shape=[2, 0], value=1.0} : f32[2,0]
  %m = max(%empty) {axes=[1]} : f32[2]
  return %e, %nan, %d, %hh, %y, %m
}
)";
  EXPECT_EQ(fold(text), std::string(text) + "(no change)\n");
}

}  // namespace
}  // namespace weft

#include "passes/canonicalize.h"

#include <gtest/gtest.h>

#include "passes/infer_types.h"
#include "passes/pass_testing.h"

namespace weft {
namespace {

/// infer-types, then canonicalize; "(no change)" refers to canonicalize alone.
class TypedCanonicalize : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  StatusOr<bool> run(Graph& g) override {
    WEFT_ASSIGN_OR_RETURN(bool typed, infer_.run(g));
    (void)typed;
    return canonicalize_.run(g);
  }

 private:
  InferTypesPass infer_;
  CanonicalizePass canonicalize_;
};

std::string canonicalize(std::string_view text) {
  TypedCanonicalize pass;
  return run_pass_on_text(pass, text);
}

TEST(CanonicalizeTest, HeaderExample) {
  EXPECT_EQ(canonicalize(R"(graph @f(%x: f32[2,3]) {
  %one = full() {shape=[], value=1.0}
  %a = mul(%x, %one)
  %t = transpose(%a) {perm=[1, 0]}
  %u = transpose(%t) {perm=[1, 0]}
  %n = neg(%u)
  %m = neg(%n)
  return %m
}
)"),
            R"(graph @f(%x: f32[2,3]) -> (f32[2,3]) {
  %one = full() {shape=[], value=1.0} : f32[]
  %t = transpose(%x) {perm=[1, 0]} : f32[3,2]
  %n = neg(%x) : f32[2,3]
  return %x
}
)");
}

TEST(CanonicalizeTest, ArithmeticIdentitiesOnlyWhereExact) {
  // x + -0.0, x - 0.0, 1·x and x / 1 are x for every x; x + 0.0 is not (-0.0 + 0.0 is
  // +0.0), nor is x·1 when the 1 broadcasts x to a larger shape. Integers: any zero.
  EXPECT_EQ(canonicalize(R"(graph @f(%x: f32[3], %i: i32[3]) {
  %nz = full() {shape=[], value=-0.0}
  %z = full() {shape=[], value=0.0}
  %one = full() {shape=[], value=1.0}
  %big_one = full() {shape=[2,3], value=1.0}
  %iz = full() {shape=[], value=0.0, dtype=i32}
  %a = add(%x, %nz)
  %b = add(%nz, %a)
  %c = sub(%b, %z)
  %d = mul(%one, %c)
  %e = div(%d, %one)
  %keep1 = add(%e, %z)
  %keep2 = sub(%e, %nz)
  %keep3 = mul(%e, %big_one)
  %j = add(%i, %iz)
  return %keep1, %keep2, %keep3, %j
}
)"),
            R"(graph @f(%x: f32[3], %i: i32[3]) -> (f32[3], f32[3], f32[2,3], i32[3]) {
  %nz = full() {shape=[], value=-0.0} : f32[]
  %z = full() {shape=[], value=0.0} : f32[]
  %one = full() {shape=[], value=1.0} : f32[]
  %big_one = full() {shape=[2, 3], value=1.0} : f32[2,3]
  %iz = full() {dtype=i32, shape=[], value=0.0} : i32[]
  %keep1 = add(%x, %z) : f32[3]
  %keep2 = sub(%x, %nz) : f32[3]
  %keep3 = mul(%x, %big_one) : f32[2,3]
  return %keep1, %keep2, %keep3, %i
}
)");
}

TEST(CanonicalizeTest, MovementOps) {
  EXPECT_EQ(canonicalize(R"(graph @f(%x: f32[2,3,4]) {
  %t1 = transpose(%x) {perm=[1, 2, 0]}
  %t2 = transpose(%t1) {perm=[1, 0, 2]}
  %r1 = reshape(%x) {shape=[6, 4]}
  %r2 = reshape(%r1) {shape=[24]}
  %r3 = reshape(%x) {shape=[2, 3, 4]}
  %b1 = broadcast_to(%x) {shape=[5, 2, 3, 4]}
  %b2 = broadcast_to(%b1) {shape=[6, 5, 2, 3, 4]}
  %b3 = broadcast_to(%r3) {shape=[2, 3, 4]}
  %s = slice(%b3) {start=[0, -5, 0], stop=[2, 3, 100]}
  %keep = slice(%s) {start=[0, 0, 0], stop=[2, 3, 4], step=[1, 1, 2]}
  %p = pad(%s) {low=[0, 0, 0], high=[0, 0, 0]}
  %c = concat(%p) {axis=1}
  %y = cast(%c) {dtype=f32}
  return %t2, %r2, %b2, %keep, %y
}
)"),
            R"(graph @f(%x: f32[2,3,4]) -> (f32[4,3,2], f32[24], f32[6,5,2,3,4], f32[2,3,2], f32[2,3,4]) {
  %t1 = transpose(%x) {perm=[1, 2, 0]} : f32[3,4,2]
  %t2 = transpose(%x) {perm=[2, 1, 0]} : f32[4,3,2]
  %r1 = reshape(%x) {shape=[6, 4]} : f32[6,4]
  %r2 = reshape(%x) {shape=[24]} : f32[24]
  %b1 = broadcast_to(%x) {shape=[5, 2, 3, 4]} : f32[5,2,3,4]
  %b2 = broadcast_to(%x) {shape=[6, 5, 2, 3, 4]} : f32[6,5,2,3,4]
  %keep = slice(%x) {start=[0, 0, 0], step=[1, 1, 2], stop=[2, 3, 4]} : f32[2,3,2]
  return %t2, %r2, %b2, %keep, %x
}
)");
}

TEST(CanonicalizeTest, EmptyAxesReductionsAndConstantSelect) {
  // sum over no axes is x only for integers: the reference sums floats from +0.0.
  EXPECT_EQ(canonicalize(R"(graph @f(%x: f32[3], %y: f32[3], %i: i64[3]) {
  %mx = max(%x) {axes=[]}
  %mn = min(%mx) {axes=[], keepdims=true}
  %keep = sum(%mn) {axes=[]}
  %si = sum(%i) {axes=[]}
  %t = full() {shape=[], value=1.0, dtype=bool}
  %f = full() {shape=[], value=0.0, dtype=bool}
  %a = select(%t, %x, %y)
  %b = select(%f, %x, %y)
  return %keep, %si, %a, %b
}
)"),
            R"(graph @f(%x: f32[3], %y: f32[3], %i: i64[3]) -> (f32[3], i64[3], f32[3], f32[3]) {
  %keep = sum(%x) {axes=[]} : f32[3]
  %t = full() {dtype=bool, shape=[], value=1.0} : bool[]
  %f = full() {dtype=bool, shape=[], value=0.0} : bool[]
  return %keep, %i, %x, %y
}
)");
}

TEST(CanonicalizeTest, NoChange) {
  const char* text = R"(graph @f(%x: f32[2,3]) -> (f32[3,2], f32[2,3], f32[2,3]) {
  %z = full() {shape=[], value=0.0} : f32[]
  %t = transpose(%x) {perm=[1, 0]} : f32[3,2]
  %a = add(%x, %z) : f32[2,3]
  %s = sub(%x, %x) : f32[2,3]
  %m = mul(%x, %z) : f32[2,3]
  %q = sum(%m) {axes=[]} : f32[2,3]
  return %t, %a, %q
}
)";
  EXPECT_EQ(canonicalize(text), std::string(text) + "(no change)\n");
}

// Regression: a square matrix's transpose has its operand's type, but only the
// identity permutation may be dropped (this once broke every square Linear layer).
TEST(CanonicalizeTest, SquareTransposeStays) {
  const char* text = R"(graph @f(%w: f32[4,4]) -> (f32[4,4]) {
  %t = transpose(%w) {perm=[1, 0]} : f32[4,4]
  return %t
}
)";
  EXPECT_EQ(canonicalize(text), std::string(text) + "(no change)\n");
}

TEST(CanonicalizeTest, SliceOfAConcatIsTheOperandsItReads) {
  EXPECT_EQ(canonicalize(R"(graph @f(%a: f32[2,3], %b: f32[2,4], %c: f32[2,1]) {
  %s = concat(%a, %b, %c) {axis=1}
  %x = slice(%s) {start=[0, 3], stop=[2, 7]}
  %y = slice(%s) {start=[0, -5], stop=[2, 8]}
  %z = slice(%s) {start=[0, 2], stop=[2, 7]}
  %w = slice(%s) {start=[0, 3], stop=[1, 7]}
  %v = slice(%s) {start=[0, 0], stop=[2, 3], step=[1, 2]}
  return %x, %y, %z, %w, %v
}
)"),
            R"(graph @f(%a: f32[2,3], %b: f32[2,4], %c: f32[2,1]) -> (f32[2,4], f32[2,5], f32[2,5], f32[1,4], f32[2,2]) {
  %s = concat(%a, %b, %c) {axis=1} : f32[2,8]
  %y = concat(%b, %c) {axis=1} : f32[2,5]
  %z = slice(%s) {start=[0, 2], stop=[2, 7]} : f32[2,5]
  %w = slice(%s) {start=[0, 3], stop=[1, 7]} : f32[1,4]
  %v = slice(%s) {start=[0, 0], step=[1, 2], stop=[2, 3]} : f32[2,2]
  return %b, %y, %z, %w, %v
}
)");
}

TEST(CanonicalizeTest, ElementwiseOpsBroadcastTheirOwnOperands) {
  // %m's broadcast goes; %n's stays (dropping it would shrink the result), as does the
  // unary op's.
  EXPECT_EQ(canonicalize(R"(graph @f(%x: f32[4,3,5], %s: f32[1,3,1], %r: f32[1,3,5]) {
  %b = broadcast_to(%s) {shape=[4, 3, 5]}
  %m = mul(%x, %b)
  %c = broadcast_to(%s) {shape=[1, 3, 5]}
  %n = add(%c, %s)
  %e = exp(%b)
  %t = gt(%x, %b)
  %u = select(%t, %b, %x)
  return %m, %n, %e, %u
}
)"),
            R"(graph @f(%x: f32[4,3,5], %s: f32[1,3,1], %r: f32[1,3,5]) -> (f32[4,3,5], f32[1,3,5], f32[4,3,5], f32[4,3,5]) {
  %b = broadcast_to(%s) {shape=[4, 3, 5]} : f32[4,3,5]
  %m = mul(%x, %s) : f32[4,3,5]
  %c = broadcast_to(%s) {shape=[1, 3, 5]} : f32[1,3,5]
  %n = add(%c, %s) : f32[1,3,5]
  %e = exp(%b) : f32[4,3,5]
  %t = gt(%x, %s) : bool[4,3,5]
  %u = select(%t, %s, %x) : f32[4,3,5]
  return %m, %n, %e, %u
}
)");
}

}  // namespace
}  // namespace weft

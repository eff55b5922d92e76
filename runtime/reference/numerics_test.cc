// check-numerics on the reference interpreter: the first node whose result is NaN or
// infinite, named with its op, value and `.wir` location.

#include "runtime/reference/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/text.h"

namespace weft::reference {
namespace {

constexpr const char* kGraph = R"(graph @f(%x: f32[4], %y: f32[4]) {
  %a = mul(%x, %y) : f32[4]
  %b = log(%a) : f32[4]
  %c = add(%b, %x) : f32[4]
  %d = sqrt(%c) : f32[4]
  return %d
}
)";

Graph parse(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "steps.wir");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return std::move(*g);
}

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(Shape({int64_t(v.size())}), v); }

TEST(CheckNumerics, FiniteStepIsOk) {
  EXPECT_TRUE(check_numerics(parse(kGraph), {f32({1, 2, 3, 4}), f32({1, 1, 1, 1})}).ok());
}

TEST(CheckNumerics, NamesTheFirstOpProducingANonFiniteValue) {
  // log(0) = -inf at element 2; sqrt(-inf) = nan follows, but log came first.
  Status s = check_numerics(parse(kGraph), {f32({1, 2, 3, 4}), f32({1, 1, 0, 1})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "steps.wir:3:3: error: check-numerics: log produced -inf in %b (f32[4], element 2)");
}

TEST(CheckNumerics, NanFromFiniteOperands) {
  // sqrt(log(0.5) + 0.5) = sqrt(-0.19...) = nan: the first non-finite value is sqrt's.
  Status s = check_numerics(parse(kGraph), {f32({0.5f, 2, 3, 4}), f32({1, 1, 1, 1})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "steps.wir:5:3: error: check-numerics: sqrt produced nan in %d (f32[4], element 0)");
}

// #28: a loop: h <- h + x_t, y_t = log(h); x_2 makes h negative, so log makes the first
// NaN in iteration 2. The error names log's line in the body and the iteration, not the
// loop's line and its last carry. A nested loop names both iterations.
constexpr const char* kLoop = R"(graph @loop(%h0: f32[2], %xs: f32[4,2]) {
  %h, %ys = scan(%h0, %xs) {carries=1, length=4} : f32[2], f32[4,2] ({
    ^cell(%ch: f32[2], %cx: f32[2]):
      %a = add(%ch, %cx) : f32[2]
      %l = log(%a) : f32[2]
      return %a, %l
  })
  return %h, %ys
}
)";

TEST(CheckNumerics, NamesTheBodyOpAndTheIterationOfALoop) {
  Status s = check_numerics(parse(kLoop), {f32({1, 1}), Tensor::from_vector<float>({4, 2}, {1, 1, 1, 1, -6, 1, 1, 1})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "steps.wir:5:7: error: check-numerics: log produced nan in %l (f32[2], element 0), in iteration 2 of "
            "the loop at steps.wir:2:3");
  EXPECT_TRUE(check_numerics(parse(kLoop), {f32({1, 1}), Tensor::from_vector<float>({4, 2}, std::vector<float>(8, 1))})
                  .ok());
}

TEST(CheckNumerics, NamesEveryIterationOfNestedLoops) {
  // The outer loop's slot 1 runs the inner loop on x_1's two rows: log(-1) in its row 1.
  constexpr const char* kNested = R"(graph @nested(%h0: f32[2], %xs: f32[2,2,2]) {
  %h = scan(%h0, %xs) {carries=1, length=2} : f32[2] ({
    ^outer(%oh: f32[2], %ox: f32[2,2]):
      %in = scan(%oh, %ox) {carries=1, length=2} : f32[2] ({
        ^inner(%ih: f32[2], %ix: f32[2]):
          %l = log(%ix) : f32[2]
          %n = add(%ih, %l) : f32[2]
          return %n
      })
      return %in
  })
  return %h
}
)";
  Status s = check_numerics(parse(kNested), {f32({0, 0}), Tensor::from_vector<float>({2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, -1})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            "steps.wir:6:11: error: check-numerics: log produced nan in %l (f32[2], element 1), in iteration 1 of "
            "the loop at steps.wir:4:7, in iteration 1 of the loop at steps.wir:2:3");
}

TEST(CheckNumerics, NamesAnInputThatHoldsOne) {
  Status s = check_numerics(parse(kGraph),
                            {f32({1, std::numeric_limits<float>::quiet_NaN(), 3, 4}), f32({1, 1, 1, 1})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "check-numerics: input %x holds nan (f32[4], element 1)");
}

TEST(CheckNumerics, ScansEveryFloatDtype) {
  EXPECT_EQ(first_nonfinite(Tensor::from_doubles(DType::f64, Shape({3}), {0, 1, INFINITY})), 2);
  EXPECT_EQ(first_nonfinite(Tensor::from_doubles(DType::f16, Shape({2}), {-INFINITY, 0})), 0);
  EXPECT_EQ(first_nonfinite(Tensor::from_doubles(DType::bf16, Shape({2}), {1, NAN})), 1);
  EXPECT_EQ(first_nonfinite(Tensor::from_doubles(DType::i32, Shape({2}), {1, 2})), -1);
  EXPECT_EQ(first_nonfinite(Tensor::from_doubles(DType::f32, Shape({2}), {1e30, -1e30})), -1);
}

}  // namespace
}  // namespace weft::reference

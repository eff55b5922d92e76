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

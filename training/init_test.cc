#include "training/init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/philox.h"

namespace weft {
namespace {

constexpr uint64_t kSeed = 1234;

Tensor make(const Initializer& init, Shape shape, uint64_t stream = 7, DType dtype = DType::f32) {
  auto t = materialize(init, Type{dtype, std::move(shape)}, kSeed, stream);
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};

Stats stats(const Tensor& t) {
  std::vector<double> v = t.to_doubles();
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size() - 1));
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

// 65,536 samples: the standard error of a mean is std/256, of a std about std/362; the
// tolerances below are 5 standard errors or more.
const Shape kBig = {256, 256};

TEST(Init, Constant) {
  Tensor t = make(Initializer::constant(2.5), {3, 2});
  for (double v : t.to_doubles()) EXPECT_EQ(v, 2.5);
  auto ints = materialize(Initializer::constant(9), {DType::i64, {2}}, kSeed, 0);
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(*ints, Tensor::from_vector<int64_t>({2}, {9, 9}));
}

TEST(Init, UniformMeanStdAndBounds) {
  Tensor t = make(Initializer::uniform(-1, 3), kBig);
  Stats s = stats(t);
  EXPECT_NEAR(s.mean, 1.0, 5 * 4 / std::sqrt(12.0) / 256);
  EXPECT_NEAR(s.std, 4 / std::sqrt(12.0), 0.02);
  EXPECT_GE(s.min, -1.0);
  EXPECT_LT(s.max, 3.0);
  EXPECT_LT(s.min, -0.99);
  EXPECT_GT(s.max, 2.99);
}

TEST(Init, UniformIsThePhiloxUniformOfTheElement) {
  // Element i uses the block of key (seed, offset = stream), counter i.
  Tensor t = make(Initializer::uniform(0, 1), {5}, /*stream=*/42, DType::f64);
  for (int64_t i = 0; i < 5; ++i) {
    double u = philox::uniform_f64(philox::element_block(kSeed, 42, static_cast<uint64_t>(i)));
    EXPECT_EQ(t.get_double(i), u);
  }
}

TEST(Init, NormalMeanAndStd) {
  Stats s = stats(make(Initializer::normal(0.5, 2.0), kBig));
  EXPECT_NEAR(s.mean, 0.5, 5 * 2.0 / 256);
  EXPECT_NEAR(s.std, 2.0, 5 * 2.0 / 362);
  // Box–Muller tails reach past 4 sigma in 65k samples.
  EXPECT_LT(s.min, 0.5 - 4 * 2.0 + 1.0);
  EXPECT_GT(s.max, 0.5 + 4 * 2.0 - 1.0);
}

TEST(Init, TruncatedNormalStaysInsideTheCuts) {
  // PyTorch's trunc_normal_(std=1, a=-2, b=2): variance of N(0,1) truncated at ±2 is
  // 1 - 2·2·φ(2)/(Φ(2) - Φ(-2)) = 0.7737.
  Stats s = stats(make(Initializer::truncated_normal(0, 1, -2, 2), kBig));
  EXPECT_NEAR(s.mean, 0, 5 * 0.88 / 256);
  EXPECT_NEAR(s.std, std::sqrt(0.773741), 0.01);
  EXPECT_GE(s.min, -2.0);
  EXPECT_LE(s.max, 2.0);
  EXPECT_LT(s.min, -1.99);
  // Absolute cuts, as in PyTorch: mean 1, std 0.5, cuts [0.5, 1.0].
  Stats half = stats(make(Initializer::truncated_normal(1, 0.5, 0.5, 1.0), kBig));
  EXPECT_GE(half.min, 0.5);
  EXPECT_LE(half.max, 1.0);
}

TEST(Init, NormalQuantile) {
  EXPECT_EQ(normal_quantile(0.5), 0.0);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-14);
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-11);
  EXPECT_TRUE(std::isinf(normal_quantile(0)));
}

TEST(Init, XavierUniformBoundIsExact) {
  // [out=64, in=32, 3, 3]: fan_in 288, fan_out 576.
  Shape shape = {64, 32, 3, 3};
  double bound = 2.0 * std::sqrt(6.0 / (288 + 576));
  Stats s = stats(make(Initializer::xavier_uniform(2.0), shape));
  EXPECT_LE(std::max(-s.min, s.max), static_cast<float>(bound));
  EXPECT_GT(std::max(-s.min, s.max), 0.999 * bound);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), 0.02 * bound);
}

TEST(Init, XavierNormalStd) {
  Stats s = stats(make(Initializer::xavier_normal(), kBig));
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 512), 0.02 * std::sqrt(2.0 / 512));
  EXPECT_NEAR(s.mean, 0, 5 * std::sqrt(2.0 / 512) / 256);
}

TEST(Init, KaimingUniformBoundIsExact) {
  // Linear's default: a = sqrt(5) gives U(±1/sqrt(fan_in)).
  Shape shape = {300, 200};
  double bound = 1 / std::sqrt(200.0);
  Stats s = stats(make(Initializer::kaiming_uniform(std::sqrt(5.0)), shape));
  EXPECT_LE(std::max(-s.min, s.max), static_cast<float>(bound));
  EXPECT_GT(std::max(-s.min, s.max), 0.999 * bound);
  // a = 0, fan_out: bound = sqrt(6 / fan_out).
  Stats out = stats(make(Initializer::kaiming_uniform(0, Initializer::FanMode::FanOut), shape));
  EXPECT_LE(std::max(-out.min, out.max), static_cast<float>(std::sqrt(6.0 / 300)));
  EXPECT_GT(std::max(-out.min, out.max), 0.999 * std::sqrt(6.0 / 300));
}

TEST(Init, KaimingNormalStd) {
  // He init for ReLU: std = sqrt(2 / fan_in).
  Stats s = stats(make(Initializer::kaiming_normal(), kBig));
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 256), 0.02 * std::sqrt(2.0 / 256));
}

/// max |WᵀW - gain²·I| over the smaller side (rows of W when wide).
double orthogonality_error(const Tensor& t, double gain) {
  const int64_t rows = t.shape()[0], cols = t.numel() / rows;
  const bool wide = rows < cols;
  const int64_t n = wide ? rows : cols, m = wide ? cols : rows;
  auto at = [&](int64_t i, int64_t k) {  // k-th vector, i-th component
    return wide ? t.get_double(k * cols + i) : t.get_double(i * cols + k);
  };
  double worst = 0;
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < n; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += at(i, a) * at(i, b);
      worst = std::max(worst, std::abs(dot - (a == b ? gain * gain : 0.0)));
    }
  }
  return worst;
}

TEST(Init, OrthogonalTallWideAndConv) {
  EXPECT_LT(orthogonality_error(make(Initializer::orthogonal(), {64, 16}), 1), 1e-5);
  EXPECT_LT(orthogonality_error(make(Initializer::orthogonal(2.0), {16, 64}), 2), 4e-5);
  EXPECT_LT(orthogonality_error(make(Initializer::orthogonal(), {32, 32}, 7, DType::f64), 1),
            1e-12);
  // A conv weight is orthogonal over [out, in·kh·kw].
  EXPECT_LT(orthogonality_error(make(Initializer::orthogonal(), {8, 2, 3, 3}), 1), 1e-5);
}

TEST(Init, DeterministicAndStreamsDiffer) {
  for (const Initializer& init :
       {Initializer::uniform(-1, 1), Initializer::normal(0, 1), Initializer::truncated_normal(0, 1),
        Initializer::xavier_uniform(), Initializer::kaiming_normal(), Initializer::orthogonal()}) {
    SCOPED_TRACE(init.to_string());
    Tensor a = make(init, {16, 8}, /*stream=*/3);
    EXPECT_EQ(a, make(init, {16, 8}, /*stream=*/3));
    Tensor b = make(init, {16, 8}, /*stream=*/4);
    Tensor c = *materialize(init, {DType::f32, {16, 8}}, kSeed + 1, 3);
    int same_b = 0, same_c = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      same_b += a.get_double(i) == b.get_double(i);
      same_c += a.get_double(i) == c.get_double(i);
    }
    EXPECT_EQ(same_b, 0);
    EXPECT_EQ(same_c, 0);
  }
}

TEST(Init, ElementsDependOnlyOnTheirIndex) {
  // A longer tensor from the same stream starts with the shorter one's elements.
  Tensor small = make(Initializer::normal(0, 1), {10});
  Tensor big = make(Initializer::normal(0, 1), {20});
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(small.get_double(i), big.get_double(i));
}

TEST(Init, OtherDtypes) {
  Tensor h = make(Initializer::uniform(-1, 1), {64}, 7, DType::f16);
  Tensor b = make(Initializer::uniform(-1, 1), {64}, 7, DType::bf16);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_LE(std::abs(h.get_double(i)), 1.0);
    EXPECT_LE(std::abs(b.get_double(i)), 1.0);
  }
}

TEST(Init, Errors) {
  auto ortho = materialize(Initializer::orthogonal(), {DType::f32, {4}}, 0, 0);
  ASSERT_FALSE(ortho.ok());
  EXPECT_EQ(ortho.error().to_string(),
            "error: orthogonal(1.0) for f32[4]: orthogonal initialization needs at least 2 "
            "dimensions");
  auto ints = materialize(Initializer::normal(0, 1), {DType::i64, {4}}, 0, 0);
  ASSERT_FALSE(ints.ok());
  EXPECT_EQ(ints.error().to_string(),
            "error: normal(0.0, 1.0) for i64[4]: random initializers need a float dtype");
  auto range = materialize(Initializer::uniform(1, -1), {DType::f32, {4}}, 0, 0);
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().to_string(),
            "error: uniform(1.0, -1.0) for f32[4]: the low bound exceeds the high bound");
}

}  // namespace
TEST(Init, RngKeyIsTheSeedAndOffsetZero) {
  auto key = materialize(Initializer::rng_key(), Type{DType::i64, {2}}, /*seed=*/42, /*stream=*/7);
  ASSERT_TRUE(key.ok()) << key.error().to_string();
  EXPECT_EQ(key->data<int64_t>()[0], 42);
  EXPECT_EQ(key->data<int64_t>()[1], 0);
  EXPECT_EQ(materialize(Initializer::rng_key(), Type{DType::f32, {2}}, 0, 0).error().to_string(),
            "error: rng_key() for f32[2]: a Philox key is i64[2]");
}

}  // namespace weft

// The generated f32 erf (Emitter::erf, two polynomials and a blend) over f32 bit
// patterns against the f64 std::erf: every pattern in [0.25, 6) and every 61st below,
// the negated inputs (odd symmetry, bit for bit), the special values; and GELU "none",
// which uses it, on a dense sample of [-6, 6]. The largest errors are printed;
// README.md's accuracy list quotes them.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "codegen/kernel_test_util.h"

namespace weft::codegen {
namespace {

constexpr int64_t kChunk = int64_t{1} << 20;

/// Runs the one-input f32 body `g` (shape [kChunk]) on `x`, writing `y`.
void run(const CompiledKernel& k, std::vector<float>& x, std::vector<float>& y) {
  void* buffers[] = {x.data(), y.data()};
  k.fn(buffers, 0, k.rows);
}

const CompiledKernel& compile(Op op, Attrs attrs = {}) {
  StatusOr<const CompiledKernel*> k = KernelCompiler::global().compile(
      testing::op_body(op, {{DType::f32, {kChunk}}}, std::move(attrs)));
  EXPECT_TRUE(k.ok()) << k.error().to_string();
  return **k;
}

/// erf of each of `inputs` (fewer than kChunk) through the kernel.
std::vector<float> erf_of(const std::vector<float>& inputs) {
  std::vector<float> x(kChunk, 0.f), y(kChunk);
  std::copy(inputs.begin(), inputs.end(), x.begin());
  run(compile(Op::Erf), x, y);
  y.resize(inputs.size());
  return y;
}

TEST(KernelErf, SweepOfF32PatternsAgainstF64) {
  const CompiledKernel& k = compile(Op::Erf);
  const uint32_t end = std::bit_cast<uint32_t>(6.0f), dense = std::bit_cast<uint32_t>(0.25f);
  std::vector<float> x(kChunk), neg(kChunk), y(kChunk), y_neg(kChunk);
  double max_abs = 0, max_rel_below_1 = 0, worst_x = 0;
  int64_t checked = 0, asymmetric = 0, above_one = 0;
  uint32_t bits = 0;
  while (bits < end) {
    int64_t n = 0;
    for (; n < kChunk && bits < end; ++n, bits += bits < dense ? 61 : 1) {
      x[n] = std::bit_cast<float>(bits);
      neg[n] = -x[n];
    }
    run(k, x, y);
    run(k, neg, y_neg);
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::erf(static_cast<double>(x[i]));
      const double err = std::abs(y[i] - ref);
      if (err > max_abs) max_abs = err, worst_x = x[i];
      // Relative error on normal results only (a denormal result has fewer digits).
      if (x[i] >= std::numeric_limits<float>::min() && x[i] < 1) max_rel_below_1 = std::max(max_rel_below_1, err / ref);
      if (std::bit_cast<uint32_t>(y_neg[i]) != (std::bit_cast<uint32_t>(y[i]) ^ 0x80000000u)) {
        ++asymmetric;
      }
      if (std::abs(y[i]) > 1) ++above_one;
    }
    checked += n;
  }
  std::printf("  erf f32: %lld patterns in [0, 6) and their negations: max |erf - f64| %.3g "
              "(at %.9g), max relative error on [FLT_MIN, 1): %.3g\n",
              static_cast<long long>(checked), max_abs, worst_x, max_rel_below_1);
  EXPECT_LE(max_abs, 1.0e-7);
  EXPECT_LE(max_rel_below_1, 1.5e-7);
  EXPECT_EQ(asymmetric, 0);
  EXPECT_EQ(above_one, 0);
}

TEST(KernelErf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float denorm = std::numeric_limits<float>::denorm_min();
  const float max_denorm = std::bit_cast<float>(0x007fffffu);
  // 3.9192059f is the smallest float whose erf rounds to 1 in f32.
  const std::vector<float> in = {std::numeric_limits<float>::quiet_NaN(),
                                 -std::numeric_limits<float>::quiet_NaN(),
                                 inf, -inf, 0.f, -0.f, denorm, -max_denorm,
                                 3.9192059f, -3.9192059f, 10.f, -100.f,
                                 std::numeric_limits<float>::max(), -1e30f};
  const std::vector<float> y = erf_of(in);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], 1.f);
  EXPECT_EQ(y[3], -1.f);
  EXPECT_EQ(std::bit_cast<uint32_t>(y[4]), 0u);           // +0
  EXPECT_EQ(std::bit_cast<uint32_t>(y[5]), 0x80000000u);  // -0
  // erf(d) = 2/√π·d, rounded to the denormal grid: within one denormal step.
  EXPECT_NEAR(y[6], 2 / std::sqrt(M_PI) * denorm, denorm);
  EXPECT_NEAR(y[7], -2 / std::sqrt(M_PI) * max_denorm, denorm);
  EXPECT_EQ(y[8], 1.f);
  EXPECT_EQ(y[9], -1.f);
  EXPECT_EQ(y[10], 1.f);
  EXPECT_EQ(y[11], -1.f);
  EXPECT_EQ(y[12], 1.f);
  EXPECT_EQ(y[13], -1.f);
}

TEST(KernelErf, GeluSweepAgainstF64) {
  const CompiledKernel& k = compile(Op::Gelu, {{"approximate", std::string("none")}});
  std::vector<float> x(kChunk), y(kChunk);
  double worst = 0;
  for (float sign : {1.f, -1.f}) {
    uint32_t bits = 0;
    const uint32_t end = std::bit_cast<uint32_t>(6.0f);
    while (bits < end) {
      int64_t n = 0;
      for (; n < kChunk && bits < end; ++n, bits += 7) x[n] = sign * std::bit_cast<float>(bits);
      run(k, x, y);
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        const double ref = 0.5 * v * (1 + std::erf(v * M_SQRT1_2));
        worst = std::max(worst, std::abs(y[i] - ref) / std::max(1.0, std::abs(ref)));
      }
    }
  }
  std::printf("  gelu(none) f32: every 7th pattern in [-6, 6]: max |gelu - f64| / max(1, |f64|) "
              "%.3g\n", worst);
  EXPECT_LE(worst, 2.0e-7);
}

}  // namespace
}  // namespace weft::codegen

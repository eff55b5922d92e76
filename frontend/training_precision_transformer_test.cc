// End to end, issue #30's test of a transformer in bf16: the benchmark suite's
// transformer (bench/models.h, the cpu preset: 4 post-LN encoder layers, d 128, 4 heads,
// vocabulary 1024, batch 8 × 64 tokens, Adam 1e-4) trained 300 steps on the cpu backend
// in f32 and in bf16 from the same initial weights on the same batches: the bf16 loss
// curve stays within 2% of the f32 one, and both learn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench/models.h"
#include "frontend/training.h"

namespace weft {
namespace {

constexpr int kSteps = 300;

/// Batch `i`: tokens from a fixed generator, and the target of each token a fixed
/// permutation of the vocabulary (7·t + 3 mod V), which the model learns over the steps.
std::vector<Tensor> batch(const bench::BenchModel& m, int i) {
  const Shape& shape = m.inputs[0].type.shape;
  Tensor x(m.inputs[0].type), y(m.target);
  uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1);
  for (int64_t k = 0; k < x.numel(); ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t token = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(m.token_range));
    x.data<int64_t>()[k] = token;
    y.data<int64_t>()[k] = (7 * token + 3) % m.token_range;
  }
  EXPECT_EQ(x.numel(), shape.numel());
  return {x, y};
}

std::vector<double> losses(const bench::BenchModel& m, DType precision) {
  StatusOr<Trainer> t = Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr),
                                         {.seed = 3, .backend = "cpu", .precision = precision});
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  std::vector<double> out;
  for (int i = 0; t.ok() && i < kSteps; ++i) {
    StatusOr<double> l = t->step(batch(m, i));
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    out.push_back(l.ok() ? *l : NAN);
  }
  return out;
}

TEST(TransformerBf16, LossStaysWithinTwoPercentOfF32Over300Steps) {
  StatusOr<bench::BenchModel> m = bench::make_bench_model("transformer", bench::Preset::cpu);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const std::vector<double> f32 = losses(*m, DType::f32), bf16 = losses(*m, DType::bf16);
  ASSERT_EQ(f32.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(bf16.size(), static_cast<size_t>(kSteps));
  double worst = 0;
  int worst_step = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double relative = std::abs(bf16[i] - f32[i]) / f32[i];
    if (!(relative <= worst)) worst = relative, worst_step = i;
    EXPECT_LE(relative, 0.02) << "step " << i << ": bf16 " << bf16[i] << ", f32 " << f32[i];
  }
  EXPECT_GT(worst, 0) << "the bf16 curve is the f32 one: did the step run in bf16?";
  std::printf("loss f32 %.4f -> %.4f, bf16 %.4f -> %.4f; largest difference %.2f%% at step %d\n",
              f32.front(), f32.back(), bf16.front(), bf16.back(), 100 * worst, worst_step);
  // Both learn: the last 30 steps' mean loss well below the first's (ln 1024 = 6.93).
  auto mean = [](const std::vector<double>& v, int from, int to) {
    double s = 0;
    for (int i = from; i < to; ++i) s += v[i];
    return s / (to - from);
  };
  EXPECT_LT(mean(f32, kSteps - 30, kSteps), 0.8 * mean(f32, 0, 30));
  EXPECT_LT(mean(bf16, kSteps - 30, kSteps), 0.8 * mean(bf16, 0, 30));
}

}  // namespace
}  // namespace weft

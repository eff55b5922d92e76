// Dynamic loss scaling where f16 itself overflows (#30): loss_scale_test injects an inf
// into an input (in f32); here no input holds one, but at GradScaler's first scale, 2^16,
// the scaled backward of an f16 step overflows f16's range (65504): a weight gradient
// summed over the batch, computed in f16. The CPU backend must decide as the reference
// interpreter does: skip the update, back the scale off, count the skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {
namespace loss_scale_f16_test {  // this file's names, apart in its package's unity test

/// Batch `i`: x [64, 64] and targets [64, 8] in [-2, 2].
std::vector<Tensor> batch(int i) {
  Tensor x(Type{DType::f32, {64, 64}});
  Tensor y(Type{DType::f32, {64, 8}});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = 2 * std::sin(0.37f * k + i);
  for (int64_t k = 0; k < y.numel(); ++k) y.data<float>()[k] = 2 * std::cos(0.23f * k - i);
  return {x, y};
}

StatusOr<Trainer> compile(const std::string& backend) {
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, FlowBuilder::from(Linear(64, 32)).through(ReLU()).through(Linear(32, 8)).build());
  LossSpec loss = LossSpec::mse();
  loss.reduction = Reduction::Sum;
  return Trainer::compile(net, {{"x", f32({64, 64})}}, loss, OptimizerSpec::adam(1e-3),
                          {.seed = 5, .backend = backend, .precision = DType::f16});
}

TEST(LossScalingF16, AnF16OverflowIsSkippedOnTheCpuAsOnTheReference) {
  auto ref = compile("reference");
  auto cpu = compile("cpu");
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  for (int i = 0; i < 12; ++i) {
    auto a = ref->step(batch(i));
    auto b = cpu->step(batch(i));
    ASSERT_TRUE(a.ok() && b.ok());
    std::printf("step %d: reference scale %g skipped %lld; cpu scale %g skipped %lld\n", i, *ref->loss_scale(),
                static_cast<long long>(*ref->skipped_steps()), *cpu->loss_scale(),
                static_cast<long long>(*cpu->skipped_steps()));
    EXPECT_EQ(*cpu->loss_scale(), *ref->loss_scale()) << "step " << i;
    EXPECT_EQ(*cpu->skipped_steps(), *ref->skipped_steps()) << "step " << i;
  }
  // The first steps overflowed, the scale backed off until they did not, and the updates
  // since moved the parameters alike on both.
  EXPECT_GE(*ref->skipped_steps(), 3);
  EXPECT_LT(*ref->skipped_steps(), 12);
  const std::vector<double> want = ref->values().at("0.weight").to_doubles();
  const std::vector<double> got = cpu->values().at("0.weight").to_doubles();
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::abs(got[k] - want[k]));
  EXPECT_LT(worst, 1e-4);
}

}  // namespace loss_scale_f16_test
}  // namespace
}  // namespace weft

// Scheduled momentum (OptimizerSpec::with_scheduled_momentum) through the Trainer: the
// step takes weft.momentum as an input, fed by set_momentum, on the compiled CPU backend
// and the reference interpreter alike. The optimizer arithmetic under OneCycleLR and
// CyclicLR is pinned against PyTorch 1.13 by autodiff/optimizer_fixture_test.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "training/schedule.h"
#include "training/step_inputs.h"

namespace weft {
namespace {
namespace scheduled_momentum_test {  // this file's names, apart in its package's unity test

FlowPtr net() {
  auto n = FlowBuilder::from(Linear(4, 8)).through(Tanh()).through(Linear(8, 3)).build();
  EXPECT_TRUE(n.ok());
  return *n;
}

/// Batch `k`: x f32[6, 4], labels i64[6].
std::vector<Tensor> batch(int64_t k) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 4; ++c) x.push_back(static_cast<float>(std::sin(1.7 * (r + 6 * k) + 0.9 * c)));
    y.push_back((r + k) % 3);
  }
  return {Tensor::from_vector<float>({6, 4}, x), Tensor::from_vector<int64_t>({6}, y)};
}

StatusOr<Trainer> compile(const OptimizerSpec& opt, const std::string& backend) {
  return Trainer::compile(net(), {{"x", f32({6, 4})}}, LossSpec::cross_entropy(), opt,
                          {.seed = 7, .backend = backend});
}

bool has_input(const Trainer& t, const std::string& name) {
  for (const Input& in : t.step_graph().inputs()) {
    if (t.step_graph().value(in.value).name == name) return true;
  }
  return false;
}

/// The losses of `steps` steps under OneCycleLR (lr and momentum set before each step).
std::vector<double> one_cycle_losses(Trainer& t, int steps) {
  const OneCycleLR schedule(/*max_lr=*/0.2, /*total_steps=*/steps);
  std::vector<double> losses;
  for (int k = 0; k < steps; ++k) {
    t.set_lr(schedule.lr_at(k));
    EXPECT_TRUE(t.set_momentum(*schedule.momentum_at(k)).ok());
    StatusOr<double> loss = t.step(batch(k));
    EXPECT_TRUE(loss.ok()) << loss.error().to_string();
    losses.push_back(loss.ok() ? *loss : NAN);
  }
  return losses;
}

// Only a step whose optimizer schedules its momentum takes the input.
TEST(ScheduledMomentum, IsAnInputOnlyWhenScheduled) {
  StatusOr<Trainer> plain = compile(OptimizerSpec::sgd(0.1, 0.9), "cpu");
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_FALSE(has_input(*plain, kMomentumInput));
  EXPECT_EQ(plain->set_momentum(0.5).to_string(),
            "error: set_momentum: the optimizer SGD(lr=0.1, momentum=0.9, dampening=0.0, "
            "weight_decay=0.0, nesterov=False) compiles its momentum into the step; build it "
            "with OptimizerSpec::with_scheduled_momentum() to schedule it");
  StatusOr<Trainer> scheduled = compile(OptimizerSpec::adam(0.01).with_scheduled_momentum(), "cpu");
  ASSERT_TRUE(scheduled.ok()) << scheduled.error().to_string();
  EXPECT_TRUE(has_input(*scheduled, kMomentumInput));
  EXPECT_EQ(scheduled->momentum(), 0.9);  // betas[0] until a schedule sets it
}

// Fed the spec's own momentum every step, a scheduled SGD step trains exactly as the one
// with the momentum compiled in.
TEST(ScheduledMomentum, AtTheSpecsMomentumTrainsAsCompiledIn) {
  for (const std::string backend : {"cpu", "reference"}) {
    StatusOr<Trainer> plain = compile(OptimizerSpec::sgd(0.1, 0.9), backend);
    StatusOr<Trainer> scheduled = compile(OptimizerSpec::sgd(0.1, 0.9).with_scheduled_momentum(), backend);
    ASSERT_TRUE(plain.ok() && scheduled.ok());
    for (int k = 0; k < 4; ++k) {
      StatusOr<double> a = plain->step(batch(k)), b = scheduled->step(batch(k));
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(*a, *b) << backend << " step " << k;
    }
  }
}

// Under OneCycleLR the compiled CPU step and the reference interpreter agree, and the
// momentum matters: the same run at a fixed momentum differs.
TEST(ScheduledMomentum, OneCycleOnTheCpuBackendMatchesTheReference) {
  for (const OptimizerSpec& spec : {OptimizerSpec::sgd(0.1, 0.9, 0, 0, /*nesterov=*/true),
                                    OptimizerSpec::adamw(0.01)}) {
    SCOPED_TRACE(spec.describe());
    StatusOr<Trainer> cpu = compile(OptimizerSpec(spec).with_scheduled_momentum(), "cpu");
    StatusOr<Trainer> ref = compile(OptimizerSpec(spec).with_scheduled_momentum(), "reference");
    StatusOr<Trainer> fixed = compile(OptimizerSpec(spec).with_scheduled_momentum(), "reference");
    ASSERT_TRUE(cpu.ok() && ref.ok() && fixed.ok());
    const std::vector<double> a = one_cycle_losses(*cpu, 8), b = one_cycle_losses(*ref, 8);
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5) << "step " << k;
    const OneCycleLR schedule(0.2, 8);
    double differs = 0;
    for (int k = 0; k < 8; ++k) {
      fixed->set_lr(schedule.lr_at(k));
      StatusOr<double> loss = fixed->step(batch(k));
      ASSERT_TRUE(loss.ok());
      differs = std::max(differs, std::abs(*loss - b[k]));
    }
    EXPECT_GT(differs, 1e-4);
  }
}

}  // namespace scheduled_momentum_test
}  // namespace
}  // namespace weft

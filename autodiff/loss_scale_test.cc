// LossScaler (autodiff/loss_scale.h) on the reference interpreter: GradScaler.update's
// rules step by step (backoff, but never to 0; growth at the interval, no growth past
// f32's largest number; factors rounded as f32(f64 · factor)), the unscaled gradient reaching the
// optimizer, and the errors. frontend/loss_scale_test.cc runs it inside the Trainer
// against PyTorch.
#include "autodiff/loss_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "runtime/reference/interpreter.h"
#include "training/init.h"

namespace weft {
namespace {

/// A step reduced to its update: a parameter %w: f32[2], its (scaled) gradient as a data
/// input, SGD with lr 1, and the loss scaler's state.
class ScaledStep {
 public:
  explicit ScaledStep(const LossScaleOptions& options) {
    ValueId w = g_.add_input("w", {DType::f32, {2}}, InputKind::param);
    ValueId grad = g_.add_input("grad.w", {DType::f32, {2}});
    ValueId lr = g_.add_input("lr", {DType::f32, {}});
    ValueId step = g_.add_input("step", {DType::i64, {}});
    auto scaler = LossScaler::add_to(g_, options);
    EXPECT_TRUE(scaler.ok()) << scaler.error().to_string();
    ScaledUpdate scaled = scaler->scaled_update(g_);
    auto slots = append_optimizer(g_, {OptimizerGroup{{{w, grad}}, lr, OptimizerSpec::sgd(1)}},
                                  step, &scaled);
    EXPECT_TRUE(slots.ok()) << slots.error().to_string();
    scaler->append_update(g_, scaled);
    values_["w"] = Tensor::from_vector<float>({2}, {1, 2});
    for (const OptimizerSlot& s : scaler->state()) {
      auto v = materialize(s.init, g_.type(s.value), /*seed=*/0, /*stream=*/0);
      EXPECT_TRUE(v.ok());
      values_[s.name] = *v;
    }
  }

  /// One step with this scaled gradient.
  void run(float g0, float g1) {
    std::vector<Tensor> inputs;
    for (const Input& in : g_.inputs()) {
      const std::string& name = g_.value(in.value).name;
      if (name == "grad.w") inputs.push_back(Tensor::from_vector<float>({2}, {g0, g1}));
      else if (name == "lr") inputs.push_back(Tensor::scalar(DType::f32, 1));
      else if (name == "step") inputs.push_back(Tensor::scalar(DType::i64, static_cast<double>(++steps_)));
      else inputs.push_back(values_.at(name));
    }
    auto r = reference::run(g_, std::move(inputs));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    for (auto& [name, value] : r->updated) values_[name] = value;
  }
  double operator[](const std::string& name) const { return values_.at(name).get_double(0); }
  std::vector<double> w() const { return values_.at("w").to_doubles(); }

 private:
  Graph g_;
  std::map<std::string, Tensor> values_;
  int64_t steps_ = 0;
};

TEST(LossScaler, FollowsGradScalerUpdate) {
  ScaledStep s({.enabled = true, .init_scale = 8, .growth_interval = 2});
  EXPECT_EQ(s[kLossScaleState], 8);
  s.run(8, 16);  // unscaled (1, 2): w = (1, 2) - (1, 2)
  EXPECT_EQ(s.w(), (std::vector<double>{0, 0}));
  EXPECT_EQ(s[kLossScaleState], 8);
  EXPECT_EQ(s[kGrowthTrackerState], 1);
  s.run(16, -8);  // the second clean update: grows
  EXPECT_EQ(s.w(), (std::vector<double>{-2, 1}));
  EXPECT_EQ(s[kLossScaleState], 16);
  EXPECT_EQ(s[kGrowthTrackerState], 0);
  s.run(INFINITY, 1);
  EXPECT_EQ(s.w(), (std::vector<double>{-2, 1}));
  EXPECT_EQ(s[kLossScaleState], 8);
  EXPECT_EQ(s[kSkippedStepsState], 1);
  s.run(1, NAN);
  EXPECT_EQ(s.w(), (std::vector<double>{-2, 1}));
  EXPECT_EQ(s[kLossScaleState], 4);
  EXPECT_EQ(s[kSkippedStepsState], 2);
  EXPECT_EQ(s[kGrowthTrackerState], 0);
  s.run(-std::numeric_limits<float>::infinity(), 0);
  EXPECT_EQ(s[kLossScaleState], 2);
  EXPECT_EQ(s[kSkippedStepsState], 3);
  s.run(4, 4);  // unscaled (2, 2)
  EXPECT_EQ(s.w(), (std::vector<double>{-4, -1}));
  EXPECT_EQ(s[kGrowthTrackerState], 1);
}

TEST(LossScaler, TheScaleNeverGrowsPastTheLargestF32) {
  const double largest_power = std::ldexp(1.0, 127);
  ScaledStep s({.enabled = true, .init_scale = largest_power, .growth_interval = 1});
  s.run(0, 0);
  EXPECT_EQ(s[kLossScaleState], largest_power);  // 2^128 is inf in f32: kept
  EXPECT_EQ(s[kGrowthTrackerState], 0);          // the interval still restarts
}

TEST(LossScaler, TheScaleNeverBacksOffToZero) {
  // f32's smallest positive number halved rounds to 0: a diverged run's scale stays at it
  // (a checkpoint with a scale of 0 would not load again).
  const double smallest = std::numeric_limits<float>::denorm_min();
  ScaledStep s({.enabled = true, .init_scale = 2 * smallest});
  s.run(INFINITY, 0);
  EXPECT_EQ(s[kLossScaleState], smallest);
  s.run(NAN, 0);
  EXPECT_EQ(s[kLossScaleState], smallest);
  EXPECT_EQ(s[kSkippedStepsState], 2);
}

TEST(LossScaler, FactorsRoundAsGradScalersF32Scale) {
  ScaledStep s({.enabled = true, .init_scale = 3, .growth_factor = 1.1, .backoff_factor = 0.3,
                .growth_interval = 1});
  s.run(0, 0);
  const float grown = static_cast<float>(3.0 * 1.1);
  EXPECT_EQ(s[kLossScaleState], grown);
  s.run(INFINITY, 0);
  EXPECT_EQ(s[kLossScaleState], static_cast<float>(static_cast<double>(grown) * 0.3));
}

TEST(LossScaler, Errors) {
  Graph g;
  g.add_input(kLossScaleState, {DType::f32, {}});
  auto taken = LossScaler::add_to(g, {.enabled = true});
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().message,
            "loss scaling: the state name %loss_scale is already taken (rename the model's value)");
  EXPECT_EQ(LossScaler::add_to(g, {.enabled = true, .growth_factor = 0.5}).error().message,
            "loss scaling: the growth factor must be > 1.0, got 0.5");

  Graph half;
  ValueId loss = half.add_input("loss", {DType::f16, {}});
  auto scaler = LossScaler::add_to(half, {.enabled = true});
  ASSERT_TRUE(scaler.ok());
  EXPECT_EQ(scaler->seed(half, loss).error().message,
            "loss scaling: the loss is f16[]; scale an f32 loss (autocast keeps losses in f32): "
            "the scale, 65536.0 at first, grows past f16's largest number, 65504");

  Graph h;
  ValueId w = h.add_input("w", {DType::f32, {2}}, InputKind::param);
  ValueId grad = h.add_input("grad.w", {DType::f32, {2}});
  ValueId lr = h.add_input("lr", {DType::f32, {}});
  ValueId step = h.add_input("step", {DType::i64, {}});
  ScaledUpdate wrong{.inv_scale = lr, .skipped_steps = lr};
  auto slots = append_optimizer(h, {OptimizerGroup{{{w, grad}}, lr, OptimizerSpec::sgd(1)}}, step,
                                &wrong);
  ASSERT_FALSE(slots.ok());
  EXPECT_EQ(slots.error().message,
            "append_optimizer: loss scaling needs the inverse scale as an f32[] scalar and the "
            "skipped-update count as an i64[] scalar");
}

}  // namespace
}  // namespace weft

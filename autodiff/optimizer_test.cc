// Optimizers as graph ops: hand-computed single steps of each optimizer, the graph's
// shape (slots, types, verifier) and every error message. The PyTorch 1.13 fixtures are
// autodiff/optimizer_fixture_test.cc.
#include "autodiff/optimizer.h"

#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "autodiff/testing/stepper.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "training/init.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

using Kind = OptimizerSpec::Kind;
using testing::Stepper;

Tensor f64s(std::vector<double> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>({n}, v);
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  std::vector<double> got = t.to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol + tol * std::abs(want[i])) << "element " << i;
  }
}

// f32 rounding of a learning rate fed as f32[], which PyTorch holds as a double.
double f32(double x) { return static_cast<float>(x); }

// ---- (a) hand-computed steps ----

TEST(Optimizer, SgdMomentumStartsFromTheGradientThenDampens) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/0.5, /*momentum=*/0.9, /*dampening=*/0.5),
            {{"w", f64s({1, -2})}});
  ASSERT_TRUE(s.status().ok()) << s.status().to_string();
  // Step 1: buf = g = [0.5, 1] (no dampening on the first step); w -= 0.5·buf.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({0.5, 1})}}));
  expect_near(s["optimizer.w.momentum_buffer"], {0.5, 1});
  expect_near(s["w"], {1 - 0.25, -2 - 0.5});
  // Step 2, g = [1, -1]: buf = 0.9·[0.5, 1] + (1 - 0.5)·[1, -1] = [0.95, 0.4].
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({1, -1})}}));
  expect_near(s["optimizer.w.momentum_buffer"], {0.95, 0.4});
  expect_near(s["w"], {0.75 - 0.5 * 0.95, -2.5 - 0.5 * 0.4});
}

// A scheduled momentum (cycle_momentum) is read from the `momentum` input every step.
TEST(Optimizer, SgdScheduledMomentumIsReadEachStep) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/0.5).with_scheduled_momentum(), {{"w", f64s({1, -2})}},
            DType::f64);
  ASSERT_TRUE(s.status().ok()) << s.status().to_string();
  EXPECT_EQ(s.slots().size(), 1u);  // a momentum buffer although the spec's momentum is 0
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({0.5, 1})}}, /*momentum=*/0.9));
  expect_near(s["optimizer.w.momentum_buffer"], {0.5, 1});
  // Step 2 at momentum 0.5: buf = 0.5·[0.5, 1] + [1, -1] = [1.25, -0.5].
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({1, -1})}}, /*momentum=*/0.5));
  expect_near(s["optimizer.w.momentum_buffer"], {1.25, -0.5});
  expect_near(s["w"], {0.75 - 0.5 * 1.25, -2.5 + 0.5 * 0.5});
}

// Adam's β1 from the input: the moment and the bias correction 1 - β1^step use it.
TEST(Optimizer, AdamScheduledBeta1) {
  Stepper s(OptimizerSpec::adam(/*lr=*/0.1).with_scheduled_momentum(), {{"w", f64s({1})}}, DType::f64);
  ASSERT_TRUE(s.status().ok()) << s.status().to_string();
  ASSERT_TRUE(s.run(0.1, 1, {{"w", f64s({2})}}, /*momentum=*/0.8));
  expect_near(s["optimizer.w.exp_avg"], {0.2 * 2});
  ASSERT_TRUE(s.run(0.1, 2, {{"w", f64s({1})}}, /*momentum=*/0.5));
  const double m = 0.5 * 0.4 + 0.5 * 1, v = 0.999 * 0.001 * 4 + 0.001 * 1;
  expect_near(s["optimizer.w.exp_avg"], {m});
  const double w1 = 1 - 0.1 * 1;  // the first step moves by lr·sign(g)
  expect_near(s["w"], {w1 - 0.1 / (1 - 0.25) * m / (std::sqrt(v) / std::sqrt(1 - 0.999 * 0.999) + 1e-8)},
              1e-9);
}

TEST(Optimizer, ScheduledMomentumErrors) {
  EXPECT_EQ(OptimizerSpec::nadam().with_scheduled_momentum().validate().to_string(),
            "error: scheduled_momentum: NAdam reads β1 through its own mu schedule; SGD and "
            "RMSprop take a scheduled momentum, Adam, AdamW and RAdam a scheduled β1");
  EXPECT_EQ(OptimizerSpec::adagrad().with_scheduled_momentum().validate().to_string(),
            "error: scheduled_momentum: Adagrad has no momentum; SGD and RMSprop take a "
            "scheduled momentum, Adam, AdamW and RAdam a scheduled β1");
  EXPECT_EQ(OptimizerSpec::sgd(0.1, 0.9).with_scheduled_momentum().describe(),
            "SGD(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False, "
            "scheduled_momentum=True)");
  EXPECT_EQ(OptimizerSpec::adam(0.1, {0.85, 0.99}).first_momentum(), 0.85);
  Graph g("f");
  ValueId w = g.add_input("w", {DType::f32, {2}}, InputKind::param);
  ValueId gw = g.add_input("gw", {DType::f32, {2}});
  ValueId lr = g.add_input("lr", {DType::f32, {}});
  ValueId step = g.add_input("step", {DType::i64, {}});
  ValueId m = g.add_input("m", {DType::f32, {}});
  ValueId m_vec = g.add_input("m_vec", {DType::f32, {2}});
  auto err = [&](const OptimizerSpec& spec, ValueId momentum) {
    auto r = append_optimizer(g, spec, {{w, gw}}, lr, step, momentum);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(err(OptimizerSpec::adam().with_scheduled_momentum(), kNoValue),
            "append_optimizer: the spec schedules the momentum (scheduled_momentum) but no "
            "momentum input was given");
  EXPECT_EQ(err(OptimizerSpec::adam(), m),
            "append_optimizer: a momentum input was given for a spec that compiles its momentum "
            "in; set OptimizerSpec::with_scheduled_momentum()");
  EXPECT_EQ(err(OptimizerSpec::adam().with_scheduled_momentum(), m_vec),
            "append_optimizer: the momentum must be a float scalar (f32[])");
  EXPECT_EQ(g.nodes().size(), 0u);
  EXPECT_EQ(err(OptimizerSpec::adam().with_scheduled_momentum(), m), "ok");
}

TEST(Optimizer, SgdPlainHasNoState) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/0.5), {{"w", f64s({1, -2})}});
  ASSERT_TRUE(s.status().ok());
  EXPECT_TRUE(s.slots().empty());
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({0.5, 1})}}));
  expect_near(s["w"], {1 - 0.25, -2 - 0.5});
}

TEST(Optimizer, SgdNesterovWithWeightDecay) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/0.1, /*momentum=*/0.9, /*dampening=*/0,
                               /*weight_decay=*/0.1, /*nesterov=*/true),
            {{"w", f64s({1, -2})}});
  ASSERT_TRUE(s.status().ok());
  // d = g + 0.1·w = [0.5 + 0.1, 1 - 0.2] = [0.6, 0.8]; buf = d;
  // nesterov: d + 0.9·buf = [1.14, 1.52]; w -= 0.1·that.
  ASSERT_TRUE(s.run(0.1, 1, {{"w", f64s({0.5, 1})}}));
  expect_near(s["optimizer.w.momentum_buffer"], {0.6, 0.8});
  expect_near(s["w"], {1 - f32(0.1) * 1.14, -2 - f32(0.1) * 1.52});
}

TEST(Optimizer, SgdMaximizeAscends) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/0.5).with_maximize(), {{"w", f64s({1, -2})}});
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({0.5, 1})}}));
  expect_near(s["w"], {1 + 0.25, -2 + 0.5});
}

TEST(Optimizer, AdamFirstStepIsLrTimesSign) {
  Stepper s(OptimizerSpec::adam(/*lr=*/0.5), {{"w", f64s({1, -2})}});
  ASSERT_TRUE(s.status().ok());
  ASSERT_EQ(s.slots().size(), 2u);
  // Step 1, g = [0.5, -1]: m = 0.1·g, v = 0.001·g²; bias corrections 1 - 0.9 = 0.1 and
  // 1 - 0.999 = 0.001, so step_size = 0.5 / 0.1 = 5 and
  // denom = sqrt(0.001·g²) / sqrt(0.001) + 1e-8 = |g| + 1e-8:
  // w -= 5 · 0.1·g / (|g| + 1e-8).
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({0.5, -1})}}));
  expect_near(s["optimizer.w.exp_avg"], {0.05, -0.1});
  expect_near(s["optimizer.w.exp_avg_sq"], {0.001 * 0.25, 0.001});
  expect_near(s["w"], {1 - 0.5 * 0.5 / (0.5 + 1e-8), -2 + 0.5 * 1 / (1 + 1e-8)}, 1e-10);
}

TEST(Optimizer, AdamAmsgradKeepsTheMaximum) {
  Stepper s(OptimizerSpec::adam(/*lr=*/0.5, /*betas=*/{0.5, 0.5}, /*eps=*/0,
                                /*weight_decay=*/0, /*amsgrad=*/true),
            {{"w", f64s({0})}});
  ASSERT_EQ(s.slots().size(), 3u);
  // Step 1, g = 2: m = 1, v = 2, vmax = 2; bc1 = bc2 = 0.5;
  // w = 0 - (0.5/0.5) · 1 / (sqrt(2)/sqrt(0.5)) = -0.5.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({2})}}));
  expect_near(s["optimizer.w.max_exp_avg_sq"], {2});
  expect_near(s["w"], {-0.5});
  // Step 2, g = 0: m = 0.5, v = 1, vmax stays 2; bc1 = bc2 = 0.75;
  // w = -0.5 - (0.5/0.75) · 0.5 / (sqrt(2)/sqrt(0.75)).
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({0})}}));
  expect_near(s["optimizer.w.exp_avg_sq"], {1});
  expect_near(s["optimizer.w.max_exp_avg_sq"], {2});
  expect_near(s["w"], {-0.5 - (0.5 / 0.75) * 0.5 / (std::sqrt(2) / std::sqrt(0.75))});
}

TEST(Optimizer, AdamWDecaysTheParameterNotTheGradient) {
  Stepper s(OptimizerSpec::adamw(/*lr=*/0.5, /*betas=*/{0.5, 0.5}, /*eps=*/0,
                                 /*weight_decay=*/0.1),
            {{"w", f64s({4})}}, DType::f64);
  // w *= 1 - 0.5·0.1 = 0.95 → 3.8; m = 0.5·g = 1, v = 0.5·g² = 2 (g = 2);
  // bc1 = bc2 = 0.5; w -= (0.5/0.5) · 1 / (sqrt(2)/sqrt(0.5)) = 0.5 → 3.3.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({2})}}));
  expect_near(s["optimizer.w.exp_avg"], {1});
  expect_near(s["w"], {3.3});
}

TEST(Optimizer, AdamL2WeightDecayIsAddedToTheGradient) {
  Stepper s(OptimizerSpec::adam(/*lr=*/0.5, /*betas=*/{0.5, 0.5}, /*eps=*/0,
                                /*weight_decay=*/0.5),
            {{"w", f64s({4})}}, DType::f64);
  // g' = 1 + 0.5·4 = 3: m = 1.5, v = 4.5; w -= 1 · 1.5 / (sqrt(4.5)/sqrt(0.5)) = 0.5.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({1})}}));
  expect_near(s["optimizer.w.exp_avg"], {1.5});
  expect_near(s["w"], {3.5});
}

TEST(Optimizer, RmspropCenteredWithMomentum) {
  Stepper s(OptimizerSpec::rmsprop(/*lr=*/0.5, /*alpha=*/0.5, /*eps=*/0, /*weight_decay=*/0,
                                   /*momentum=*/0.5, /*centered=*/true),
            {{"w", f64s({1})}}, DType::f64);
  ASSERT_EQ(s.slots().size(), 3u);
  EXPECT_EQ(s.slots()[0].name, "optimizer.w.square_avg");
  EXPECT_EQ(s.slots()[1].name, "optimizer.w.momentum_buffer");
  EXPECT_EQ(s.slots()[2].name, "optimizer.w.grad_avg");
  // g = 2: square_avg = 0.5·4 = 2, grad_avg = 0.5·2 = 1, avg = sqrt(2 - 1) = 1;
  // buf = g / avg = 2; w -= 0.5·2 → 0.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({2})}}));
  expect_near(s["optimizer.w.square_avg"], {2});
  expect_near(s["optimizer.w.grad_avg"], {1});
  expect_near(s["optimizer.w.momentum_buffer"], {2});
  expect_near(s["w"], {0});
  // g = 0: square_avg = 1, grad_avg = 0.5, avg = sqrt(1 - 0.25); buf = 0.5·2 + 0 = 1;
  // w -= 0.5·1.
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({0})}}));
  expect_near(s["optimizer.w.momentum_buffer"], {1});
  expect_near(s["w"], {-0.5});
}

TEST(Optimizer, RmspropPlain) {
  Stepper s(OptimizerSpec::rmsprop(/*lr=*/0.5, /*alpha=*/0.75, /*eps=*/1),
            {{"w", f64s({1})}}, DType::f64);
  ASSERT_EQ(s.slots().size(), 1u);
  // g = 4: square_avg = 0.25·16 = 4; avg = 2 + eps = 3; w -= 0.5·4/3.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({4})}}));
  expect_near(s["optimizer.w.square_avg"], {4});
  expect_near(s["w"], {1 - 0.5 * 4 / 3});
}

TEST(Optimizer, AdagradDecaysTheLearningRateWithTheStep) {
  Stepper s(OptimizerSpec::adagrad(/*lr=*/0.5, /*lr_decay=*/0.5, /*weight_decay=*/0,
                                   /*initial_accumulator_value=*/1, /*eps=*/0),
            {{"w", f64s({1})}}, DType::f64);
  ASSERT_EQ(s.slots().size(), 1u);
  EXPECT_EQ(s.slots()[0].init, Initializer::constant(1));
  expect_near(s["optimizer.w.sum"], {1});
  // Step 1: clr = 0.5 / (1 + 0·0.5) = 0.5; sum = 1 + 3² = 10; w -= 0.5·3/sqrt(10).
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({3})}}));
  expect_near(s["optimizer.w.sum"], {10});
  const double w1 = 1 - 0.5 * 3 / std::sqrt(10);
  expect_near(s["w"], {w1});
  // Step 2: clr = 0.5 / (1 + 1·0.5) = 1/3; sum = 10 + 6² = 46; w -= clr·6/sqrt(46).
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({6})}}));
  expect_near(s["optimizer.w.sum"], {46});
  expect_near(s["w"], {w1 - (0.5 / 1.5) * 6 / std::sqrt(46)});
}

TEST(Optimizer, RadamIsUnrectifiedUntilRhoExceedsFive) {
  // β2 = 0.5: rho_inf = 3, so rho_t < 5 at every step: w -= lr · m / bc1.
  Stepper s(OptimizerSpec::radam(/*lr=*/0.5, /*betas=*/{0.5, 0.5}), {{"w", f64s({1})}},
            DType::f64);
  ASSERT_EQ(s.slots().size(), 2u);
  EXPECT_EQ(s.slots()[0].name, "optimizer.w.exp_avg");
  EXPECT_EQ(s.slots()[1].name, "optimizer.w.exp_avg_sq");
  // g = 2: m = 1, v = 2; bc1 = 0.5; w -= 0.5 · 1 / 0.5.
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({2})}}));
  expect_near(s["optimizer.w.exp_avg"], {1});
  expect_near(s["optimizer.w.exp_avg_sq"], {2});
  expect_near(s["w"], {0});
}

TEST(Optimizer, RadamRectifiesFromStepSix) {
  // β1 = 0 makes m = g and bc1 = 1; β2 = 0.9 gives rho_inf = 19 and rho_t = 4.58 at
  // step 5, 5.39 at step 6. From there w -= lr · g · rect · sqrt(bc2) / sqrt(v) (eps = 0);
  // before, w -= lr · g.
  const double b2 = 0.9, lr = 0.5;
  Stepper s(OptimizerSpec::radam(lr, /*betas=*/{0, b2}, /*eps=*/0), {{"w", f64s({0})}},
            DType::f64);
  const double rho_inf = 2 / (1 - b2) - 1;
  double v = 0, w = 0;
  for (int64_t t = 1; t <= 7; ++t) {
    const double g = t % 2 ? 1.0 : -2.0;
    ASSERT_TRUE(s.run(lr, t, {{"w", f64s({g})}}));
    v = b2 * v + (1 - b2) * g * g;
    const double bc2 = 1 - std::pow(b2, t);
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / bc2;
    if (t < 6) {
      EXPECT_LE(rho_t, 5) << "step " << t;
      w -= lr * g;
    } else {
      EXPECT_GT(rho_t, 5) << "step " << t;
      const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                    ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      w -= lr * g * rect * std::sqrt(bc2) / std::sqrt(v);
    }
    expect_near(s["w"], {w}, 1e-10);
  }
}

TEST(Optimizer, NadamKeepsAnF32MuProduct) {
  // β1 = 0.5, momentum_decay = 0 → mu = mu_next = 0.5·(1 - 0.5) = 0.25 at every step.
  Stepper s(OptimizerSpec::nadam(/*lr=*/0.5, /*betas=*/{0.5, 0.5}, /*eps=*/0,
                                 /*weight_decay=*/0, /*momentum_decay=*/0),
            {{"w", f64s({1})}}, DType::f64);
  ASSERT_EQ(s.slots().size(), 3u);
  EXPECT_EQ(s.slots()[0].name, "optimizer.w.mu_product");
  EXPECT_EQ(s.slots()[0].init, Initializer::constant(1));
  EXPECT_EQ(s.graph().type(s.slots()[0].value), (Type{DType::f32, {}}));
  EXPECT_EQ(s.slots()[1].init, Initializer::zeros());
  EXPECT_EQ(s.graph().type(s.slots()[1].value), (Type{DType::f64, {1}}));
  // g = 2: mu_product = 0.25; m = 1, v = 2, bc2 = 0.5, denom = sqrt(2/0.5) = 2;
  // w -= 0.5·0.75/(1 - 0.25) · 2/2 + 0.5·0.25/(1 - 0.25·0.25·0.25) · 1/2
  // (PyTorch 1.13's single-tensor code multiplies mu into the next product twice).
  ASSERT_TRUE(s.run(0.5, 1, {{"w", f64s({2})}}));
  expect_near(s["optimizer.w.mu_product"], {0.25});
  expect_near(s["optimizer.w.exp_avg"], {1});
  expect_near(s["w"], {1 - 0.5 - 0.5 * 0.25 / (1 - 0.25 * 0.25 * 0.25) * 0.5});
  ASSERT_TRUE(s.run(0.5, 2, {{"w", f64s({0})}}));
  expect_near(s["optimizer.w.mu_product"], {0.0625});
}

TEST(Optimizer, ClipsByTheGlobalNormFirst) {
  Stepper s(OptimizerSpec::sgd(/*lr=*/1).with_max_grad_norm(1),
            {{"a", f64s({0})}, {"b", f64s({0})}}, DType::f64);
  // total_norm = sqrt(3² + 4²) = 5; coef = 1 / (5 + 1e-6); each gradient scaled by it.
  ASSERT_TRUE(s.run(1, 1, {{"a", f64s({3})}, {"b", f64s({4})}}));
  expect_near(s["a"], {-3 / (5 + 1e-6)});
  expect_near(s["b"], {-4 / (5 + 1e-6)});
  // A norm below max_grad_norm leaves the gradients alone (coef clamped to 1).
  ASSERT_TRUE(s.run(1, 2, {{"a", f64s({0.3})}, {"b", f64s({0.4})}}));
  expect_near(s["a"], {-3 / (5 + 1e-6) - 0.3});
  expect_near(s["b"], {-4 / (5 + 1e-6) - 0.4});
}

TEST(Optimizer, F32ParametersStayF32AndTheGraphVerifies) {
  Stepper s(OptimizerSpec::adamw().with_max_grad_norm(1),
            {{"w", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})},
             {"b", Tensor::from_vector<float>({2}, {1, 2})}});
  ASSERT_TRUE(s.status().ok());
  Status v = verify(s.graph());
  EXPECT_TRUE(v.ok()) << v.to_string();
  for (const Node& n : s.graph().nodes()) {
    if (n.result() != kNoValue) {
      EXPECT_TRUE(s.graph().value(n.result()).type.has_value());
    }
  }
  ASSERT_EQ(s.slots().size(), 4u);
  for (const OptimizerSlot& slot : s.slots()) {
    int i = s.graph().input_index(slot.value);
    ASSERT_GE(i, 0);
    EXPECT_EQ(s.graph().inputs()[i].kind, InputKind::state);
    EXPECT_EQ(s.graph().type(slot.value), s.graph().type(slot.param));
    EXPECT_EQ(slot.init, Initializer::zeros());
  }
  EXPECT_EQ(s.slots()[0].name, "optimizer.b.exp_avg");
  EXPECT_EQ(s.slots()[3].name, "optimizer.w.exp_avg_sq");
  ASSERT_TRUE(s.run(1e-3, 1, {{"w", Tensor::from_vector<float>({2, 2}, {1, 1, 1, 1})},
                              {"b", Tensor::from_vector<float>({2}, {1, 1})}}));
  EXPECT_EQ(s["w"].dtype(), DType::f32);
}

TEST(Optimizer, SurvivesTheDefaultPipeline) {
  // Folding, CSE and DCE must keep the assigns and the values: the optimized step gives
  // the same parameters and state as the unoptimized one.
  // RAdam over seven steps takes both of its branches; NAdam has a scalar f32 slot.
  const std::vector<std::pair<OptimizerSpec, std::string>> cases = {
      {OptimizerSpec::adam(/*lr=*/0.1, {0.9, 0.999}, 1e-8, /*weight_decay=*/0.1,
                           /*amsgrad=*/true)
           .with_max_grad_norm(0.5),
       "optimizer.w.max_exp_avg_sq"},
      {OptimizerSpec::radam(/*lr=*/0.1, {0.9, 0.999}, 1e-8, /*weight_decay=*/0.1),
       "optimizer.w.exp_avg_sq"},
      {OptimizerSpec::nadam(/*lr=*/0.1).with_max_grad_norm(0.5), "optimizer.w.mu_product"},
  };
  std::map<std::string, Tensor> params = {{"w", f64s({1, -2, 3})}, {"b", f64s({0.5})}};
  for (const auto& [spec, slot] : cases) {
    SCOPED_TRACE(spec.describe());
    Stepper plain(spec, params), optimized(spec, params);
    auto changed = default_pipeline().run(optimized.mutable_graph());
    ASSERT_TRUE(changed.ok()) << changed.error().to_string();
    for (int64_t k = 1; k <= 7; ++k) {
      std::map<std::string, Tensor> grads = {{"w", f64s({0.3 * k, -1, 2})},
                                             {"b", f64s({-0.5})}};
      ASSERT_TRUE(plain.run(0.1, k, grads));
      ASSERT_TRUE(optimized.run(0.1, k, grads));
    }
    for (const std::string& name : {std::string("w"), std::string("b"), slot,
                                    std::string("optimizer.b.exp_avg")}) {
      std::string why;
      EXPECT_TRUE(all_close(optimized[name], plain[name], 1e-12, &why)) << name << ": " << why;
    }
  }
}

TEST(Optimizer, DefaultsAndDescribe) {
  EXPECT_EQ(OptimizerSpec::sgd(0.1).describe(),
            "SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)");
  EXPECT_EQ(OptimizerSpec::adam().describe(),
            "Adam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0, amsgrad=False)");
  EXPECT_EQ(OptimizerSpec::adamw().describe(),
            "AdamW(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False)");
  EXPECT_EQ(OptimizerSpec::rmsprop().describe(),
            "RMSprop(lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0.0, momentum=0.0, "
            "centered=False)");
  EXPECT_EQ(OptimizerSpec::adagrad().describe(),
            "Adagrad(lr=0.01, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, "
            "eps=1e-10)");
  EXPECT_EQ(OptimizerSpec::radam().describe(),
            "RAdam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0)");
  EXPECT_EQ(OptimizerSpec::nadam().describe(),
            "NAdam(lr=0.002, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0, "
            "momentum_decay=0.004)");
  EXPECT_EQ(OptimizerSpec::sgd(0.1, 0.9).with_maximize().with_max_grad_norm(1).describe(),
            "SGD(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False, "
            "maximize=True, max_grad_norm=1.0)");
}

// ---- errors ----

std::string spec_error(const OptimizerSpec& spec) {
  Status s = spec.validate();
  return s.ok() ? "ok" : s.error().message;
}

TEST(Optimizer, HyperParameterErrorsUsePyTorchsMessages) {
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(-0.1)), "Invalid learning rate: -0.1");
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(0.1, -0.5)), "Invalid momentum value: -0.5");
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(0.1, 0.9, 0, -0.01)),
            "Invalid weight_decay value: -0.01");
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(0.1, 0, 0, 0, /*nesterov=*/true)),
            "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(0.1, 0.9, 0.1, 0, /*nesterov=*/true)),
            "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(spec_error(OptimizerSpec::adam(1e-3, {0.9, 0.999}, -1.0)),
            "Invalid epsilon value: -1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::adam(1e-3, {1.0, 0.999})),
            "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::adamw(1e-3, {0.9, -0.1})),
            "Invalid beta parameter at index 1: -0.1");
  EXPECT_EQ(spec_error(OptimizerSpec::adamw(1e-3, {0.9, 0.999}, 1e-8, -0.5)),
            "Invalid weight_decay value: -0.5");
  EXPECT_EQ(spec_error(OptimizerSpec::rmsprop(0.01, -1.0)), "Invalid alpha value: -1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::rmsprop(0.01, 0.99, 1e-8, 0, -0.9)),
            "Invalid momentum value: -0.9");
  EXPECT_EQ(spec_error(OptimizerSpec::rmsprop(0.01, 0.99, -1e-8)),
            "Invalid epsilon value: -1e-08");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, -1.0)), "Invalid lr_decay value: -1.0");
  // Values print as Python's repr does.
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, -1e-4)), "Invalid lr_decay value: -0.0001");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, -1e-5)), "Invalid lr_decay value: -1e-05");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, -1e16)), "Invalid lr_decay value: -1e+16");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, -123456.5)),
            "Invalid lr_decay value: -123456.5");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, 0, 0, -0.1)),
            "Invalid initial_accumulator_value value: -0.1");
  EXPECT_EQ(spec_error(OptimizerSpec::adagrad(0.01, 0, 0, 0, -1e-10)),
            "Invalid epsilon value: -1e-10");
  EXPECT_EQ(spec_error(OptimizerSpec::adam().with_max_grad_norm(-1)),
            "Invalid max_grad_norm value: -1.0 (a finite norm > 0 clips the gradients; 0 "
            "turns clipping off)");
  EXPECT_EQ(spec_error(OptimizerSpec::radam(-1e-3)), "Invalid learning rate: -0.001");
  EXPECT_EQ(spec_error(OptimizerSpec::radam(1e-3, {0.9, 0.999}, -1.0)),
            "Invalid epsilon value: -1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::radam(1e-3, {1.0, 0.999})),
            "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::radam(1e-3, {0.9, 1.5})),
            "Invalid beta parameter at index 1: 1.5");
  EXPECT_EQ(spec_error(OptimizerSpec::radam(1e-3, {0.9, 0.999}, 1e-8, -0.1)),
            "Invalid weight_decay value: -0.1");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(-2e-3)), "Invalid learning rate: -0.002");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {0.9, 0.999}, -1e-8)),
            "Invalid epsilon value: -1e-08");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {-0.1, 0.999})),
            "Invalid beta parameter at index 0: -0.1");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {0.9, 1.0})),
            "Invalid beta parameter at index 1: 1.0");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {0.9, 0.999}, 1e-8, -0.5)),
            "Invalid weight_decay value: -0.5");
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {0.9, 0.999}, 1e-8, 0, -4e-3)),
            "Invalid momentum_decay value: -0.004");
  // PyTorch's order: the epsilon is checked before the betas.
  EXPECT_EQ(spec_error(OptimizerSpec::nadam(2e-3, {1.0, 0.999}, -1.0)),
            "Invalid epsilon value: -1.0");
  // Dampening without nesterov is allowed, as in PyTorch.
  EXPECT_EQ(spec_error(OptimizerSpec::sgd(0.1, 0.9, 0.5)), "ok");
}

TEST(Optimizer, GradientAllReduceAveragesEveryGradientAtItsParameter) {
  Graph g("step");
  const Location at{"model.cc", 7, 3, "fc"};
  ValueId w = g.add_input("w", {DType::f32, {2, 3}}, InputKind::param, at);
  ValueId b = g.add_input("b", {DType::f32, {3}}, InputKind::param);
  ValueId gw = g.add_input("grad.w", {DType::f32, {2, 3}});
  ValueId gb = g.add_input("grad.b", {DType::f32, {3}});
  g.add_input("grad.b.all_reduce", {DType::f32, {3}});  // the name is taken: a fresh one
  auto pairs = append_gradient_all_reduce(g, {{w, gw}, {b, gb}});
  ASSERT_TRUE(pairs.ok()) << pairs.error().to_string();
  ASSERT_EQ(pairs->size(), 2u);
  ASSERT_EQ(g.nodes().size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const Node& n = g.node(i);
    EXPECT_EQ(n.op, Op::AllReduce);
    EXPECT_EQ(n.str_attr("reduction"), "mean");
    EXPECT_EQ((*pairs)[i].second, n.result());
    EXPECT_EQ(g.type(n.result()), g.type((*pairs)[i].first));
  }
  EXPECT_EQ(g.node(0).operands[0], gw);
  EXPECT_EQ(g.value((*pairs)[0].second).name, "grad.w.all_reduce");
  EXPECT_EQ(g.node(0).loc, at);
  EXPECT_NE(g.value((*pairs)[1].second).name, "grad.b.all_reduce");
  // In one process (the reference interpreter) the averaged gradient is the gradient.
  ValueId lr = g.add_input("lr", {DType::f32, {}});
  ValueId step = g.add_input("step", {DType::i64, {}});
  ASSERT_TRUE(append_optimizer(g, OptimizerSpec::sgd(0.5), *pairs, lr, step).ok());
  EXPECT_TRUE(verify(g).ok()) << verify(g).to_string();

  Graph bad("bad");
  ValueId p = bad.add_input("p", {DType::f32, {2}}, InputKind::param);
  ValueId q = bad.add_input("q", {DType::f32, {3}});
  auto r = append_gradient_all_reduce(bad, {{p, q}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "append_gradient_all_reduce: the gradient of %p: f32[2] must be a float tensor of "
            "the parameter's type, not %q: f32[3]");
  EXPECT_TRUE(bad.nodes().empty());
}

TEST(Optimizer, GraphErrors) {
  Graph g("f");
  ValueId w = g.add_input("w", {DType::f32, {2}}, InputKind::param);
  ValueId x = g.add_input("x", {DType::f32, {2}});
  ValueId h = g.add_input("h", {DType::f16, {2}}, InputKind::param);
  ValueId gd = g.add_input("gd", {DType::f64, {2}});
  ValueId lr = g.add_input("lr", {DType::f32, {}});
  ValueId lr_vec = g.add_input("lr_vec", {DType::f32, {2}});
  ValueId step = g.add_input("step", {DType::i64, {}});
  ValueId step_f = g.add_input("step_f", {DType::f32, {}});
  auto err = [&](const std::vector<std::pair<ValueId, ValueId>>& pairs, ValueId l, ValueId s,
                 OptimizerSpec spec = OptimizerSpec::adam()) {
    auto r = append_optimizer(g, spec, pairs, l, s);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(err({{x, x}}, lr, step),
            "append_optimizer: %x is not a param input; only inputs declared with "
            "InputKind::param are updated by an optimizer");
  EXPECT_EQ(err({{w, gd}}, lr, step),
            "append_optimizer: the gradient %gd of parameter %w is f64[2], not f32[2]");
  EXPECT_EQ(err({{h, h}}, lr, step),
            "append_optimizer: parameter %h is f16[2]; optimizers update f32 or f64 parameters "
            "(keep f32 master weights and cast them for the forward pass)");
  EXPECT_EQ(err({{w, x}, {w, x}}, lr, step), "append_optimizer: parameter %w is listed twice");
  EXPECT_EQ(err({{w, x}}, lr_vec, step),
            "append_optimizer: the learning rate must be a float scalar (f32[]), not "
            "%lr_vec: f32[2]");
  EXPECT_EQ(err({{w, x}}, lr, step_f),
            "append_optimizer: the step number must be an i64[] scalar (1 on the first step), "
            "not %step_f: f32[]");
  EXPECT_EQ(err({{w, x}}, lr, step, OptimizerSpec::adam(1e-3, {0.9, 0.999}, -1.0)),
            "Invalid epsilon value: -1.0");
  const size_t nodes_before = g.nodes().size();
  EXPECT_EQ(nodes_before, 0u);  // errors leave the graph alone
  EXPECT_EQ(err({{w, x}}, lr, step), "ok");
  EXPECT_EQ(err({{w, x}}, lr, step),
            "append_optimizer: the slot name %optimizer.w.exp_avg is already taken (was an "
            "optimizer appended twice?)");
}

TEST(Optimizer, GroupAndAccumulationErrors) {
  auto invalid = [](const OptimizerSpec& spec) {
    Status s = spec.validate();
    return s.ok() ? std::string("ok") : s.error().message;
  };
  EXPECT_EQ(invalid(OptimizerSpec::adam().with_accumulation(0)),
            "Invalid accumulate_steps value: 0 (the update is taken every accumulate_steps "
            "steps; 1 takes it every step)");
  EXPECT_EQ(invalid(OptimizerSpec::adam().with_group("")),
            "parameter group 0 has an empty path (a group is the parameters under a label "
            "path such as \"encoder\"; the parameters under no group already form the "
            "default group)");
  EXPECT_EQ(invalid(OptimizerSpec::adam().with_group("enc").with_group("enc", {.lr = 1})),
            "parameter group 'enc' is given twice");
  EXPECT_EQ(invalid(OptimizerSpec::sgd(0.1).with_group("enc", {.lr = -1})),
            "parameter group 'enc': Invalid learning rate: -1.0");
  EXPECT_EQ(invalid(OptimizerSpec::adamw().with_group("enc", {.weight_decay = -0.5})),
            "parameter group 'enc': Invalid weight_decay value: -0.5");

  // Groups appended together must share the kind, the clipping norm and the accumulation.
  Graph g("f");
  ValueId w = g.add_input("w", {DType::f32, {2}}, InputKind::param);
  ValueId b = g.add_input("b", {DType::f32, {2}}, InputKind::param);
  ValueId gw = g.add_input("gw", {DType::f32, {2}});
  ValueId gb = g.add_input("gb", {DType::f32, {2}});
  ValueId lr = g.add_input("lr", {DType::f32, {}});
  ValueId step = g.add_input("step", {DType::i64, {}});
  auto groups_err = [&](OptimizerSpec first, OptimizerSpec second,
                        std::vector<std::pair<ValueId, ValueId>> more = {}) {
    std::vector<std::pair<ValueId, ValueId>> pairs = {{b, gb}};
    pairs.insert(pairs.end(), more.begin(), more.end());
    auto r = append_optimizer(g, {{{{w, gw}}, lr, first}, {pairs, lr, second}}, step);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(groups_err(OptimizerSpec::adam(), OptimizerSpec::adamw()),
            "append_optimizer: group 1 differs from group 0 in the optimizer kind; every "
            "parameter group shares it");
  EXPECT_EQ(groups_err(OptimizerSpec::adam(), OptimizerSpec::adam().with_max_grad_norm(1)),
            "append_optimizer: group 1 differs from group 0 in max_grad_norm; every parameter "
            "group shares it");
  EXPECT_EQ(groups_err(OptimizerSpec::adam(), OptimizerSpec::adam().with_accumulation(2)),
            "append_optimizer: group 1 differs from group 0 in accumulate_steps; every "
            "parameter group shares it");
  EXPECT_EQ(groups_err(OptimizerSpec::adam(), OptimizerSpec::adam(), {{w, gw}}),
            "append_optimizer: parameter %w is listed twice");
  EXPECT_TRUE(g.nodes().empty());  // errors leave the graph alone
}

TEST(Optimizer, DescribeGroupsAndAccumulation) {
  EXPECT_EQ(OptimizerSpec::sgd(0.1)
                .with_accumulation(4)
                .with_group("encoder", {.lr = 1e-4})
                .with_group("head", {.weight_decay = 0.0})
                .with_group("both", {.lr = 0.5, .weight_decay = 0.1})
                .describe(),
            "SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, "
            "accumulate_steps=4, groups=[encoder(lr=0.0001), head(weight_decay=0.0), "
            "both(lr=0.5, weight_decay=0.1)])");
}

// Accumulating K steps is one update with the mean gradient, and the optimizer's step
// count counts updates: Adam over two windows of 3 equals 2 plain steps.
TEST(Optimizer, AccumulationIsTheMeanGradientUpdate) {
  Stepper acc(OptimizerSpec::adam(0.1).with_accumulation(3), {{"w", f64s({1, -2})}});
  Stepper plain(OptimizerSpec::adam(0.1), {{"w", f64s({1, -2})}});
  ASSERT_TRUE(acc.status().ok()) << acc.status().to_string();
  const std::vector<std::vector<double>> g = {{0.3, -1}, {0.6, 2}, {-0.3, 0.5},
                                              {1, 1},    {2, -4}, {0, 0.5}};
  for (int window = 0; window < 2; ++window) {
    for (int k = 0; k < 3; ++k) {
      const int micro = 3 * window + k;
      ASSERT_TRUE(acc.run(0.1, micro + 1, {{"w", f64s(g[micro])}}));
      if (k < 2) {  // no update inside a window: the parameter as after the last one
        expect_near(acc["w"], window == 0 ? std::vector<double>{1, -2} : plain["w"].to_doubles());
      }
    }
    const std::vector<double>& a = g[3 * window];
    const std::vector<double>& b = g[3 * window + 1];
    const std::vector<double>& c = g[3 * window + 2];
    ASSERT_TRUE(plain.run(0.1, window + 1,
                          {{"w", f64s({(a[0] + b[0] + c[0]) / 3, (a[1] + b[1] + c[1]) / 3})}}));
    expect_near(acc["w"], plain["w"].to_doubles(), 1e-12);
    expect_near(acc["optimizer.w.exp_avg"], plain["optimizer.w.exp_avg"].to_doubles(), 1e-12);
    expect_near(acc["optimizer.w.grad_accumulator"], {0, 0});
  }
}

// Data parallel accumulation (issue 32): the accumulated sum is averaged over the ranks,
// only on a window's last micro-batch: all_reduce(%acc', %apply), read by the update. In
// one process (the reference interpreter) every all_reduce is the identity, predicate
// true or false, so the steps are those of the unreduced update.
TEST(Optimizer, AccumulationReducesTheSumOnTheLastMicroBatch) {
  const std::map<std::string, Tensor> w0 = {{"w", f64s({1, -2})}};
  Stepper local(OptimizerSpec::adam(0.1).with_accumulation(2).with_max_grad_norm(0.5), w0);
  Stepper reduced(OptimizerSpec::adam(0.1).with_accumulation(2).with_max_grad_norm(0.5), w0, DType::f32,
                  /*all_reduce_gradients=*/true);
  ASSERT_TRUE(reduced.status().ok()) << reduced.status().to_string();
  const Graph& g = reduced.graph();
  EXPECT_TRUE(verify(g).ok()) << verify(g).to_string();
  std::vector<const Node*> all_reduces;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::AllReduce) all_reduces.push_back(&n);
  }
  ASSERT_EQ(all_reduces.size(), 1u);
  const Node& ar = *all_reduces[0];
  ASSERT_EQ(ar.operands.size(), 2u);
  EXPECT_EQ(g.value(ar.result()).name, "grad.w.all_reduce");
  EXPECT_EQ(g.type(ar.operands[1]), (Type{DType::boolean, {}}));
  const Node& sum = g.node(g.value(ar.operands[0]).node);  // acc' = accumulator + gradient
  EXPECT_EQ(sum.op, Op::Add);
  EXPECT_EQ(g.value(sum.operands[0]).name, "optimizer.w.grad_accumulator");
  // The clipping norm reads the reduced sum: no other node reads acc' but the
  // accumulator's select and the all_reduce.
  int readers = 0;
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.operands) readers += v == sum.result() ? 1 : 0;
  }
  EXPECT_EQ(readers, 2);
  const std::vector<std::vector<double>> grads = {{0.3, -1}, {0.6, 2}, {-0.3, 0.5}, {1, 1}};
  for (int micro = 0; micro < 4; ++micro) {
    ASSERT_TRUE(local.run(0.1, micro + 1, {{"w", f64s(grads[micro])}}));
    ASSERT_TRUE(reduced.run(0.1, micro + 1, {{"w", f64s(grads[micro])}}));
    expect_near(reduced["w"], local["w"].to_doubles(), 0);
    expect_near(reduced["optimizer.w.grad_accumulator"], local["optimizer.w.grad_accumulator"].to_doubles(), 0);
  }
  // Without accumulation the gradient itself is reduced, with no predicate.
  Stepper every(OptimizerSpec::sgd(0.1), w0, DType::f32, /*all_reduce_gradients=*/true);
  ASSERT_TRUE(every.status().ok()) << every.status().to_string();
  int count = 0;
  for (const Node& n : every.graph().nodes()) {
    if (n.op != Op::AllReduce) continue;
    ++count;
    EXPECT_EQ(n.operands.size(), 1u);
    EXPECT_EQ(every.graph().value(n.operands[0]).name, "grad.w");
  }
  EXPECT_EQ(count, 1);
}

}  // namespace
}  // namespace weft

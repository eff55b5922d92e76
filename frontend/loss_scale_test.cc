// Dynamic loss scaling in the Trainer's step (TrainOptions::loss_scale, issue #30), on the
// reference interpreter and the CPU backend, in f32 (the mechanism does not depend on
// f16): an inf in a batch skips exactly that update and backs the scale off, the scale
// grows after growth_interval clean updates, a skipped update leaves the optimizer's step
// count alone (the run continues as if the batch had not been there), checkpoints carry
// the schedule, and the steps match PyTorch 1.13 with GradScaler's rules
// (testdata/loss_scale/make_loss_scale_fixture.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "codegen/targets.h"
#include "formats/npy.h"
#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {

struct Case {
  std::string backend;
  OptimizerSpec optimizer;
  std::string name;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

StatusOr<FlowPtr> mlp() {
  return FlowBuilder::from(Linear(4, 3)).through(Tanh()).through(Linear(3, 2)).build();
}

/// Batch `i` of the MLP; `poison` puts an inf (or a NaN) into one input element.
std::vector<Tensor> batch(int i, double poison = 0) {
  Tensor x(Type{DType::f32, {5, 4}});
  Tensor y(Type{DType::f32, {5, 2}});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = std::sin(0.37f * k + i);
  for (int64_t k = 0; k < y.numel(); ++k) y.data<float>()[k] = std::cos(0.23f * k - i);
  if (poison != 0) x.data<float>()[7] = static_cast<float>(poison);
  return {x, y};
}

LossScaleOptions scaling(double init_scale = 1024, int64_t growth_interval = 2000) {
  return {.enabled = true, .init_scale = init_scale, .growth_interval = growth_interval};
}

StatusOr<Trainer> compile(const Case& c, LossScaleOptions loss_scale) {
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, mlp());
  TrainOptions options{.seed = 5, .backend = c.backend};
  options.loss_scale = loss_scale;
  return Trainer::compile(net, {{"x", f32({5, 4})}}, LossSpec::mse(), c.optimizer, options);
}

/// Every value of the trainer (parameters and optimizer slots) as doubles, by name.
std::map<std::string, std::vector<double>> snapshot(const Trainer& t) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, value] : t.values()) out[name] = value.to_doubles();
  return out;
}

void expect_state(const Trainer& t, double scale, int64_t skipped, int64_t tracker) {
  ASSERT_TRUE(t.loss_scale().ok()) << t.loss_scale().error().to_string();
  EXPECT_EQ(*t.loss_scale(), scale);
  EXPECT_EQ(*t.skipped_steps(), skipped);
  EXPECT_EQ(t.values().at(kGrowthTrackerState).get_double(0), static_cast<double>(tracker));
}

class LossScaling : public ::testing::TestWithParam<Case> {};

TEST_P(LossScaling, AnInfSkipsExactlyThatUpdateAndBacksTheScaleOff) {
  auto t = compile(GetParam(), scaling(/*init_scale=*/1024));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const int64_t k = GetParam().optimizer.accumulate_steps;
  for (int i = 0; i < 2 * k; ++i) ASSERT_TRUE(t->step(batch(i)).ok());
  expect_state(*t, 1024, 0, 2);
  const auto before = snapshot(*t);
  for (int i = 0; i < k; ++i) {  // one update's window, its first micro-batch poisoned
    auto loss = t->step(batch(7, i == 0 ? INFINITY : 0));
    ASSERT_TRUE(loss.ok()) << loss.error().to_string();
  }
  auto after = snapshot(*t);
  for (const auto& [name, values] : before) {
    if (name.rfind("loss_scale", 0) == 0 || name == kSkippedStepsState) continue;
    EXPECT_EQ(after.at(name), values) << name << " changed in a skipped update";  // bitwise
  }
  expect_state(*t, 512, 1, 0);
  // A NaN is skipped as an inf is; a clean update then moves the parameters again.
  for (int i = 0; i < k; ++i) ASSERT_TRUE(t->step(batch(8, i == k - 1 ? NAN : 0)).ok());
  expect_state(*t, 256, 2, 0);
  for (int i = 0; i < k; ++i) ASSERT_TRUE(t->step(batch(9)).ok());
  expect_state(*t, 256, 2, 1);
  EXPECT_NE(snapshot(*t).at("0.weight"), before.at("0.weight"));
}

TEST_P(LossScaling, TheScaleGrowsAfterGrowthIntervalCleanUpdates) {
  auto t = compile(GetParam(), scaling(/*init_scale=*/4, /*growth_interval=*/3));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const int64_t k = GetParam().optimizer.accumulate_steps;
  std::vector<double> scales;
  for (int i = 0; i < 8 * k; ++i) {
    ASSERT_TRUE(t->step(batch(i, i == 4 * k ? INFINITY : 0)).ok());
    if ((i + 1) % k == 0) scales.push_back(*t->loss_scale());
  }
  // Updates 1-3 clean: ×2 at the third; the fifth skipped: ×0.5 and the count restarts,
  // so the next growth is at the eighth.
  EXPECT_EQ(scales, (std::vector<double>{4, 4, 8, 8, 4, 4, 4, 8}));
  EXPECT_EQ(*t->skipped_steps(), 1);
}

// PyTorch does not count a skipped step in its optimizer state (state['step'], the
// momentum buffer's first step, NAdam's mu_product), so a run with a skipped update ends
// where the run without that batch ends — bitwise, as the scales are powers of two.
TEST_P(LossScaling, ASkippedUpdateIsAsIfItsBatchWasNeverThere) {
  const int64_t k = GetParam().optimizer.accumulate_steps;
  auto clean = compile(GetParam(), scaling());
  auto skipped = compile(GetParam(), scaling());
  ASSERT_TRUE(clean.ok() && skipped.ok());
  for (int i = 0; i < 4 * k; ++i) ASSERT_TRUE(clean->step(batch(i)).ok());
  for (int i = 0; i < 5 * k; ++i) {
    const int update = i / static_cast<int>(k);
    if (update == 1) {
      ASSERT_TRUE(skipped->step(batch(i, INFINITY)).ok());
    } else {
      ASSERT_TRUE(skipped->step(batch(update > 1 ? i - static_cast<int>(k) : i)).ok());
    }
  }
  EXPECT_EQ(*skipped->skipped_steps(), 1);
  const auto want = snapshot(*clean), got = snapshot(*skipped);
  for (const auto& [name, values] : want) {
    if (name.rfind("loss_scale", 0) == 0 || name == kSkippedStepsState) continue;
    EXPECT_EQ(got.at(name), values) << name;
  }
}

// Scaling by a power of two is exact, so without an overflow the run is the unscaled one.
TEST_P(LossScaling, WithoutOverflowTheRunIsTheUnscaledOne) {
  auto plain = compile(GetParam(), LossScaleOptions{});
  auto scaled = compile(GetParam(), scaling(/*init_scale=*/65536, /*growth_interval=*/2));
  ASSERT_TRUE(plain.ok() && scaled.ok());
  for (int i = 0; i < 6; ++i) {
    auto a = plain->step(batch(i)), b = scaled->step(batch(i));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NEAR(*b, *a, 1e-6 * std::abs(*a)) << "step " << i;
  }
  const auto want = snapshot(*plain), scaled_values = snapshot(*scaled);
  for (const auto& [name, values] : want) {
    const std::vector<double>& got = scaled_values.at(name);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(got[i], values[i], 1e-6 * (1 + std::abs(values[i]))) << name << "[" << i << "]";
    }
  }
  EXPECT_GT(*scaled->loss_scale(), 65536);
}

TEST_P(LossScaling, ACheckpointCarriesTheScaleSchedule) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" +
      GetParam().name + ".safetensors";
  const int64_t k = GetParam().optimizer.accumulate_steps;
  const int steps = static_cast<int>(8 * k);
  auto run = [&](Trainer& t, int from, int to, std::vector<double>& losses) {
    for (int i = from; i < to; ++i) {
      auto l = t.step(batch(i, i == 2 * k ? INFINITY : 0));
      ASSERT_TRUE(l.ok());
      losses.push_back(*l);
    }
  };
  auto straight = compile(GetParam(), scaling(/*init_scale=*/8, /*growth_interval=*/2));
  ASSERT_TRUE(straight.ok());
  std::vector<double> all, first_half, second_half;
  run(*straight, 0, steps, all);
  auto first = compile(GetParam(), scaling(8, 2));
  ASSERT_TRUE(first.ok());
  run(*first, 0, steps / 2, first_half);
  ASSERT_TRUE(first->save(path).ok());
  auto resumed = compile(GetParam(), scaling(8, 2));
  ASSERT_TRUE(resumed.ok());
  auto report = resumed->load(path);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(*resumed->loss_scale(), *first->loss_scale());
  EXPECT_EQ(*resumed->skipped_steps(), 1);
  run(*resumed, steps / 2, steps, second_half);
  for (int i = steps / 2; i < steps; ++i) {
    if (i != 2 * k) {
      EXPECT_EQ(second_half[i - steps / 2], all[i]) << "step " << i;  // bitwise
    }
  }
  EXPECT_EQ(*resumed->loss_scale(), *straight->loss_scale());
  EXPECT_EQ(*resumed->skipped_steps(), *straight->skipped_steps());
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::string backend : {"reference", "cpu"}) {
    auto add = [&](std::string name, OptimizerSpec spec) {
      out.push_back({backend, spec, backend + "_" + name});
    };
    add("sgd", OptimizerSpec::sgd(0.1, /*momentum=*/0.9, /*dampening=*/0, /*weight_decay=*/1e-2));
    add("adam", OptimizerSpec::adam(1e-2, {0.9, 0.999}, 1e-8, /*weight_decay=*/1e-3, /*amsgrad=*/true));
    add("adamw_clipped", OptimizerSpec::adamw(1e-2).with_max_grad_norm(0.5));
    add("adamw_accumulated", OptimizerSpec::adamw(1e-2).with_accumulation(2));
    add("rmsprop", OptimizerSpec::rmsprop(1e-2, 0.99, 1e-8, 0, /*momentum=*/0.5, /*centered=*/true));
    add("adagrad", OptimizerSpec::adagrad(1e-1, /*lr_decay=*/0.01));
    add("radam", OptimizerSpec::radam(1e-2));
    add("nadam", OptimizerSpec::nadam(1e-2));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Optimizers, LossScaling, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

Tensor fixture(const std::string& name) {
  auto t = read_npy("frontend/testdata/loss_scale/adam/" + name + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

// PyTorch 1.13, Adam, GradScaler's rules; infs and a NaN in three of nine batches.
class MatchesPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(MatchesPyTorch, LossesScalesParametersAndMoments) {
  LossScaleOptions options = scaling(/*init_scale=*/1024, /*growth_interval=*/2);
  auto t = compile({GetParam(), OptimizerSpec::adam(1e-2), GetParam()}, options);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const char* names[] = {"0.weight", "0.bias", "2.weight", "2.bias"};
  for (const char* name : names) {
    ASSERT_TRUE(t->set_value(name, fixture(std::string("init.") + name)).ok()) << name;
  }
  const Tensor losses = fixture("losses"), scales = fixture("scales"), skipped = fixture("skipped");
  for (int i = 0; i < losses.numel(); ++i) {
    auto loss = t->step({fixture("x" + std::to_string(i)), fixture("y" + std::to_string(i))});
    ASSERT_TRUE(loss.ok()) << loss.error().to_string();
    const double want = losses.get_double(i);
    if (std::isfinite(want)) {
      EXPECT_NEAR(*loss, want, 1e-5 * (1 + std::abs(want))) << "step " << i;
    }
    EXPECT_FALSE(std::isfinite(want) && !std::isfinite(*loss)) << "step " << i;
    EXPECT_EQ(*t->loss_scale(), scales.get_double(i)) << "step " << i;
    EXPECT_EQ(*t->skipped_steps(), skipped.get_double(i)) << "step " << i;
  }
  std::string why;
  for (const char* name : names) {
    for (std::string key : {std::string(name), "optimizer." + std::string(name) + ".exp_avg",
                            "optimizer." + std::string(name) + ".exp_avg_sq"}) {
      EXPECT_TRUE(all_close(t->values().at(key), fixture("final." + key), 1e-5, &why)) << key << ": " << why;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, MatchesPyTorch, ::testing::Values("reference", "cpu"));

// On the CPU the scaled step runs without the interpreter, and it costs one reduction per
// gradient (the check) and a few scalar kernels (the scale's update) over the unscaled
// step: each parameter's update stays one fused kernel, merged across parameters.
TEST(LossScaling, OnTheCpuTheStepRunsWithoutTheInterpreter) {
  auto plain = compile({"cpu", OptimizerSpec::adam(1e-2), "cpu"}, LossScaleOptions{});
  auto t = compile({"cpu", OptimizerSpec::adam(1e-2), "cpu"}, scaling());
  ASSERT_TRUE(plain.ok() && t.ok());
  ASSERT_NE(t->compiled_step(), nullptr);
  EXPECT_EQ(t->compiled_step()->fallbacks(), 0) << t->compiled_step()->describe();
  const size_t unscaled = plain->compiled_step()->program().kernels.size();
  const size_t scaled = t->compiled_step()->program().kernels.size();
  const size_t params = 4;
  EXPECT_LE(scaled, unscaled + params + 6) << "unscaled " << unscaled << "\n"
                                           << t->compiled_step()->describe();
}

// The decisions stay on the device: every op of the scaled step (an accumulating AdamW
// with clipping) lowers for CUDA and has a CUDA kernel, so the step can be one captured
// CUDA graph. Checked on the host, as the AOT generator lowers a Trainer's step.
TEST(LossScaling, EveryOpOfTheScaledStepRunsOnTheGpu) {
  auto t = compile({"reference", OptimizerSpec::adamw(1e-2).with_max_grad_norm(1).with_accumulation(2),
                    "reference"},
                   scaling());
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  StatusOr<const codegen::Target*> cuda = codegen::find_target("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.error().to_string();
  StatusOr<codegen::LoweredProgram> lowered = (*cuda)->lower(t->step_graph());
  ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
  ASSERT_NE((*cuda)->runtime()->check_program, nullptr);
  Status s = (*cuda)->runtime()->check_program(lowered->program);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
}

TEST(LossScaling, TheScaleAndSkippedStepsReachTheMetrics) {
  auto t = compile({"reference", OptimizerSpec::adam(1e-2), "reference"}, scaling(4));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_TRUE(t->step(batch(0, INFINITY)).ok());
  ASSERT_TRUE(t->record_loss_scale().ok());
  EXPECT_EQ(*t->metrics().current(kLossScaleState), 2);
  EXPECT_EQ(*t->metrics().current(kSkippedStepsState), 1);
}

// A hand-edited scale of 0 in a checkpoint made every later update NaN, silently: the
// Trainer's load refuses it (formats/checkpoint.h, CheckpointScope::loss_scale).
TEST(LossScaling, ALoadRefusesAScaleOfZero) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/zero_scale.safetensors";
  auto edited = compile({"reference", OptimizerSpec::adam(1e-2), "reference"}, scaling(4));
  ASSERT_TRUE(edited.ok()) << edited.error().to_string();
  ASSERT_TRUE(edited->set_value(kLossScaleState, Tensor::scalar(DType::f32, 0)).ok());
  ASSERT_TRUE(edited->save(path).ok());
  auto t = compile({"reference", OptimizerSpec::adam(1e-2), "reference"}, scaling(4));
  ASSERT_TRUE(t.ok());
  auto report = t->load(path);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().to_string(),
            path + ": error: 'loss_scale' is 0 in the checkpoint; a loss scale must be a finite number > 0 "
                   "(GradScaler's initial scale is 65536); nothing was loaded");
  EXPECT_EQ(*t->loss_scale(), 4);
}

TEST(LossScaling, Errors) {
  auto message = [](LossScaleOptions o) {
    auto t = compile({"reference", OptimizerSpec::adam(), "reference"}, o);
    return t.ok() ? std::string("compiled") : t.error().message;
  };
  LossScaleOptions o = scaling();
  o.growth_factor = 1;
  EXPECT_EQ(message(o), "loss scaling: the growth factor must be > 1.0, got 1.0");
  o = scaling();
  o.backoff_factor = 1;
  EXPECT_EQ(message(o), "loss scaling: the backoff factor must be < 1.0, got 1.0");
  o = scaling();
  o.backoff_factor = 0;
  EXPECT_EQ(message(o), "loss scaling: the backoff factor must be > 0 (0 would make the scale 0), got 0.0");
  o = scaling(/*init_scale=*/1e39);
  EXPECT_EQ(message(o), "loss scaling: init_scale must be a positive f32 number, got 1e+39");
  o = scaling(/*init_scale=*/-1);
  EXPECT_EQ(message(o), "loss scaling: init_scale must be a positive f32 number, got -1.0");
  o = scaling(1024, /*growth_interval=*/0);
  EXPECT_EQ(message(o), "loss scaling: growth_interval must be at least 1, got 0");
  o.enabled = false;  // not checked when off, as GradScaler(enabled=False)
  EXPECT_EQ(message(o), "compiled");

  auto off = compile({"reference", OptimizerSpec::adam(), "reference"}, LossScaleOptions{});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->loss_scale().error().message,
            "loss_scale(): loss scaling is off (TrainOptions::loss_scale.enabled)");
  EXPECT_EQ(off->skipped_steps().error().message,
            "skipped_steps(): loss scaling is off (TrainOptions::loss_scale.enabled)");
  EXPECT_FALSE(off->record_loss_scale().ok());
}

}  // namespace
}  // namespace weft

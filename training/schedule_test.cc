// Learning-rate schedules against PyTorch 1.13 (training/testdata/schedules.json, made by
// training/testdata/make_schedule_fixtures.py), plus hand-checked values, the edges where
// weft departs from PyTorch on purpose, and the error messages.
#include "training/schedule.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace weft {
namespace {
namespace schedule_test {  // this file's names, apart in its package's unity test

// Bazel runs the test in its runfiles root, where the fixtures keep their tree paths.
constexpr char kFixtures[] = "training/testdata/schedules.json";
constexpr double kTol = 1e-9;

const nlohmann::json& fixtures() {
  static const nlohmann::json j = [] {
    std::ifstream in(kFixtures);
    if (!in.good()) return nlohmann::json::array();
    return nlohmann::json::parse(in);
  }();
  return j;
}

const nlohmann::json& fixture(const std::string& name) {
  for (const auto& c : fixtures()) {
    if (c["name"] == name) return c;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no fixture " << name;
  return none;
}

std::vector<std::string> names(bool plateau) {
  std::vector<std::string> out;
  for (const auto& c : fixtures()) {
    if ((c["kind"] == "ReduceLROnPlateau") == plateau) out.push_back(c["name"]);
  }
  return out;
}

// The schedule for a stateless case, from PyTorch's keyword arguments.
std::unique_ptr<LrSchedule> make(const nlohmann::json& c) {
  const std::string kind = c["kind"];
  const nlohmann::json& a = c["args"];
  const double lr = c["lr"];
  if (kind == "StepLR") return std::make_unique<StepLR>(lr, a["step_size"], a.value("gamma", 0.1));
  if (kind == "MultiStepLR") {
    return std::make_unique<MultiStepLR>(lr, a["milestones"].get<std::vector<int64_t>>(),
                                         a.value("gamma", 0.1));
  }
  if (kind == "ExponentialLR") return std::make_unique<ExponentialLR>(lr, a["gamma"]);
  if (kind == "CosineAnnealingLR") {
    return std::make_unique<CosineAnnealingLR>(lr, a["T_max"], a.value("eta_min", 0.0));
  }
  if (kind == "WarmupCosineLR") {
    return std::make_unique<WarmupCosineLR>(lr, a["warmup_steps"], a["total_steps"],
                                            a["warmup_start_factor"], a["eta_min"]);
  }
  if (kind == "OneCycleLR") {
    OneCycleOptions o;
    o.pct_start = a.value("pct_start", o.pct_start);
    if (a.value("anneal_strategy", "cos") == "linear") {
      o.anneal_strategy = OneCycleOptions::Anneal::linear;
    }
    o.div_factor = a.value("div_factor", o.div_factor);
    o.final_div_factor = a.value("final_div_factor", o.final_div_factor);
    o.three_phase = a.value("three_phase", o.three_phase);
    o.cycle_momentum = a.value("cycle_momentum", o.cycle_momentum);
    o.base_momentum = a.value("base_momentum", o.base_momentum);
    o.max_momentum = a.value("max_momentum", o.max_momentum);
    return std::make_unique<OneCycleLR>(a["max_lr"], a["total_steps"], o);
  }
  if (kind == "CyclicLR") {
    CyclicOptions o;
    o.step_size_up = a.value("step_size_up", o.step_size_up);
    if (a.contains("step_size_down")) o.step_size_down = a["step_size_down"].get<int64_t>();
    const std::string mode = a.value("mode", "triangular");
    if (mode == "triangular2") o.mode = CyclicOptions::Mode::triangular2;
    if (mode == "exp_range") o.mode = CyclicOptions::Mode::exp_range;
    o.gamma = a.value("gamma", o.gamma);
    o.cycle_momentum = a.value("cycle_momentum", o.cycle_momentum);
    o.base_momentum = a.value("base_momentum", o.base_momentum);
    o.max_momentum = a.value("max_momentum", o.max_momentum);
    return std::make_unique<CyclicLR>(a["base_lr"], a["max_lr"], o);
  }
  if (kind == "WarmupLR") {
    // The wrapped schedule, made from its own kind and arguments at the optimizer's lr.
    nlohmann::json after = a["after"];
    after["lr"] = lr;
    return std::make_unique<WarmupLR>(make(after), a["warmup_steps"], a["start_factor"],
                                      a["warmup"] == "constant" ? WarmupKind::constant
                                                                : WarmupKind::linear);
  }
  ADD_FAILURE() << "unknown kind " << kind;
  return nullptr;
}

PlateauOptions plateau_options(const nlohmann::json& a) {
  PlateauOptions o;
  if (a.value("mode", "min") == "max") o.mode = PlateauOptions::Mode::max;
  o.factor = a.value("factor", o.factor);
  o.patience = a.value("patience", o.patience);
  o.threshold = a.value("threshold", o.threshold);
  if (a.value("threshold_mode", "rel") == "abs") {
    o.threshold_mode = PlateauOptions::ThresholdMode::abs;
  }
  o.cooldown = a.value("cooldown", o.cooldown);
  o.min_lr = a.value("min_lr", o.min_lr);
  o.eps = a.value("eps", o.eps);
  return o;
}

void expect_rel(double got, double want, const std::string& where) {
  EXPECT_LE(std::abs(got - want), kTol * std::abs(want)) << where << ": got " << got
                                                          << ", PyTorch " << want;
}

class ScheduleFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleFixture, MatchesPyTorch) {
  const nlohmann::json& c = fixture(GetParam());
  std::unique_ptr<LrSchedule> s = make(c);
  ASSERT_NE(s, nullptr);
  SCOPED_TRACE(s->describe());
  ASSERT_TRUE(s->validate().ok()) << s->validate().to_string();
  const std::vector<double> lrs = c["lrs"];
  ASSERT_GE(lrs.size(), 50u);
  for (size_t t = 0; t < lrs.size(); ++t) {
    expect_rel(s->lr_at(static_cast<int64_t>(t)), lrs[t], "t=" + std::to_string(t));
  }
  // The momentum (β1 for Adam): cycled by OneCycleLR and CyclicLR (cycle_momentum), else
  // the optimizer's own, 0.9 in every fixture.
  const std::vector<double> momenta = c["momenta"];
  ASSERT_EQ(momenta.size(), lrs.size());
  const bool cycles = (c["kind"] == "OneCycleLR" || c["kind"] == "CyclicLR" ||
                       (c["kind"] == "WarmupLR" && (c["args"]["after"]["kind"] == "OneCycleLR" ||
                                                    c["args"]["after"]["kind"] == "CyclicLR"))) &&
                      c["args"].value("cycle_momentum", true);
  EXPECT_EQ(s->momentum_at(0).has_value(), cycles);
  for (size_t t = 0; t < momenta.size(); ++t) {
    expect_rel(s->momentum_at(static_cast<int64_t>(t)).value_or(0.9), momenta[t],
               "momentum at t=" + std::to_string(t));
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, ScheduleFixture, ::testing::ValuesIn(names(false)),
                         [](const auto& info) { return info.param; });

class PlateauFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(PlateauFixture, MatchesPyTorch) {
  const nlohmann::json& c = fixture(GetParam());
  ReduceLROnPlateau p(c["lr"], plateau_options(c["args"]));
  SCOPED_TRACE(p.describe());
  ASSERT_TRUE(p.validate().ok());
  const std::vector<double> metrics = c["metrics"];
  const std::vector<double> lrs = c["lrs"];
  ASSERT_EQ(lrs.size(), metrics.size() + 1);
  expect_rel(p.lr(), lrs[0], "initial");
  std::set<double> distinct;
  for (size_t t = 0; t < metrics.size(); ++t) {
    double lr = p.observe(metrics[t]);
    EXPECT_EQ(lr, p.lr());
    expect_rel(lr, lrs[t + 1], "after metric " + std::to_string(t));
    distinct.insert(lrs[t + 1]);
  }
  EXPECT_EQ(p.epochs_observed(), static_cast<int64_t>(metrics.size()));
  EXPECT_GE(distinct.size(), 2u) << "the fixture should reduce the lr at least once";
}

INSTANTIATE_TEST_SUITE_P(PyTorch, PlateauFixture, ::testing::ValuesIn(names(true)),
                         [](const auto& info) { return info.param; });

TEST(ScheduleFixtures, CoverEverySchedule) {
  std::set<std::string> kinds;
  for (const auto& c : fixtures()) kinds.insert(c["kind"].get<std::string>());
  EXPECT_EQ(kinds, (std::set<std::string>{"StepLR", "MultiStepLR", "ExponentialLR",
                                          "CosineAnnealingLR", "WarmupCosineLR", "OneCycleLR",
                                          "ReduceLROnPlateau", "CyclicLR", "WarmupLR"}));
}

// ---- hand-checked values and deliberate departures ----

TEST(Schedule, ClosedForms) {
  EXPECT_DOUBLE_EQ(StepLR(1.0, 3, 0.5).lr_at(5), 0.5);
  EXPECT_DOUBLE_EQ(StepLR(1.0, 3, 0.5).lr_at(6), 0.25);
  // Milestones are sorted and a repeated one counts twice.
  EXPECT_DOUBLE_EQ(MultiStepLR(1.0, {10, 2, 10}, 0.5).lr_at(1), 1.0);
  EXPECT_DOUBLE_EQ(MultiStepLR(1.0, {10, 2, 10}, 0.5).lr_at(9), 0.5);
  EXPECT_DOUBLE_EQ(MultiStepLR(1.0, {10, 2, 10}, 0.5).lr_at(10), 0.125);
  EXPECT_DOUBLE_EQ(ExponentialLR(2.0, 0.5).lr_at(3), 0.25);
  // Half-way through the cosine: the mean of base_lr and eta_min.
  EXPECT_DOUBLE_EQ(CosineAnnealingLR(1.0, 10, 0.2).lr_at(5), 0.6);
  EXPECT_DOUBLE_EQ(CosineAnnealingLR(1.0, 10, 0.2).lr_at(10), 0.2);
  EXPECT_DOUBLE_EQ(CosineAnnealingLR(1.0, 10, 0.2).lr_at(20), 1.0);  // periodic, as in PyTorch
  // Negative t is t = 0.
  EXPECT_DOUBLE_EQ(ExponentialLR(2.0, 0.5).lr_at(-3), 2.0);
}

TEST(Schedule, WarmupCosineFromZeroAndAfterTheEnd) {
  WarmupCosineLR s(/*base_lr=*/1.0, /*warmup_steps=*/4, /*total_steps=*/14);
  ASSERT_TRUE(s.validate().ok());
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.0);   // warmup_start_factor defaults to 0
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 1.0);   // the peak, then cosine over 10 steps
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(14), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(15), 0.0);  // stays at eta_min, unlike CosineAnnealingLR
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 0.0);
  // No warmup: plain cosine.
  WarmupCosineLR plain(1.0, 0, 10, 0.5, 0.1);
  EXPECT_DOUBLE_EQ(plain.lr_at(0), 1.0);
  EXPECT_DOUBLE_EQ(plain.lr_at(5), 0.55);
}

TEST(Schedule, OneCycleDefaultsAndEnd) {
  OneCycleLR s(/*max_lr=*/1.0, /*total_steps=*/100);
  EXPECT_NEAR(s.lr_at(0), 1.0 / 25, 1e-15);            // initial_lr = max_lr / div_factor
  EXPECT_DOUBLE_EQ(s.lr_at(29), 1.0);                  // end of phase 1: pct_start·100 - 1
  EXPECT_DOUBLE_EQ(s.lr_at(99), 1.0 / 25 / 1e4);       // min_lr
  EXPECT_DOUBLE_EQ(s.lr_at(101), 1.0 / 25 / 1e4);      // PyTorch raises; weft stays at min_lr
}

TEST(Schedule, CyclicModes) {
  // Up over 2 steps, down over 2: 1, 2, 3, 2, 1, 2, ...
  CyclicLR tri(1.0, 3.0, {.step_size_up = 2});
  EXPECT_DOUBLE_EQ(tri.lr_at(0), 1.0);
  EXPECT_DOUBLE_EQ(tri.lr_at(1), 2.0);
  EXPECT_DOUBLE_EQ(tri.lr_at(2), 3.0);
  EXPECT_DOUBLE_EQ(tri.lr_at(3), 2.0);
  EXPECT_DOUBLE_EQ(tri.lr_at(4), 1.0);
  EXPECT_DOUBLE_EQ(tri.lr_at(6), 3.0);
  // triangular2 halves the amplitude every cycle.
  CyclicLR tri2(1.0, 3.0, {.step_size_up = 2, .mode = CyclicOptions::Mode::triangular2});
  EXPECT_DOUBLE_EQ(tri2.lr_at(6), 2.0);
  EXPECT_DOUBLE_EQ(tri2.lr_at(10), 1.5);
  // exp_range scales by gamma^t.
  CyclicLR exp(1.0, 3.0, {.step_size_up = 2, .mode = CyclicOptions::Mode::exp_range, .gamma = 0.5});
  EXPECT_DOUBLE_EQ(exp.lr_at(2), 1.0 + 2.0 * 0.25);
  // step_size_down = 0: a sawtooth that rises and drops back at once.
  CyclicLR saw(0.0, 4.0, {.step_size_up = 4, .step_size_down = 0});
  ASSERT_TRUE(saw.validate().ok());
  EXPECT_DOUBLE_EQ(saw.lr_at(3), 3.0);
  EXPECT_DOUBLE_EQ(saw.lr_at(4), 0.0);
}

TEST(Schedule, WarmupWrapsAnySchedule) {
  auto step = std::make_shared<StepLR>(1.0, 2, 0.5);
  WarmupLR linear(step, /*warmup_steps=*/4, /*start_factor=*/0.0);
  ASSERT_TRUE(linear.validate().ok());
  EXPECT_DOUBLE_EQ(linear.lr_at(0), 0.0);
  EXPECT_DOUBLE_EQ(linear.lr_at(2), 0.5);
  EXPECT_DOUBLE_EQ(linear.lr_at(4), 1.0);  // StepLR from its start
  EXPECT_DOUBLE_EQ(linear.lr_at(6), 0.5);
  WarmupLR constant(step, 3, 0.1, WarmupKind::constant);
  EXPECT_DOUBLE_EQ(constant.lr_at(2), 0.1);
  EXPECT_DOUBLE_EQ(constant.lr_at(3), 1.0);
  // It warms up to where the wrapped schedule starts, and nests.
  auto cyclic = std::make_shared<CyclicLR>(0.2, 1.0, CyclicOptions{.step_size_up = 4});
  EXPECT_DOUBLE_EQ(WarmupLR(cyclic, 2, 0.5).lr_at(1), 0.15);
  WarmupLR twice(std::make_shared<WarmupLR>(step, 2, 0.5), 2, 0.5);
  EXPECT_DOUBLE_EQ(twice.lr_at(0), 0.25);
  EXPECT_DOUBLE_EQ(twice.lr_at(2), 0.5);
  EXPECT_DOUBLE_EQ(twice.lr_at(4), 1.0);
  // No warmup: the wrapped schedule alone.
  EXPECT_DOUBLE_EQ(WarmupLR(step, 0).lr_at(3), 0.5);
}

TEST(Schedule, PlateauCooldownAndMinLr) {
  ReduceLROnPlateau p(1.0, {.factor = 0.5, .patience = 1, .cooldown = 2, .min_lr = 0.3});
  EXPECT_EQ(p.observe(1.0), 1.0);  // best = 1
  EXPECT_EQ(p.observe(1.0), 1.0);  // 1 bad epoch, not more than patience
  EXPECT_EQ(p.observe(1.0), 0.5);  // 2 bad epochs: reduce, cooldown 2
  EXPECT_EQ(p.observe(1.0), 0.5);  // cooldown: not counted
  EXPECT_EQ(p.observe(1.0), 0.5);  // cooldown: not counted
  EXPECT_EQ(p.observe(1.0), 0.5);  // 1 bad epoch
  EXPECT_EQ(p.observe(1.0), 0.3);  // reduce to max(0.25, min_lr)
  EXPECT_EQ(p.num_bad_epochs(), 0);
  EXPECT_EQ(p.observe(0.5), 0.3);  // better
  EXPECT_EQ(p.best(), 0.5);
}

TEST(Schedule, Describe) {
  EXPECT_EQ(StepLR(0.1, 30).describe(), "StepLR(base_lr=0.1, step_size=30, gamma=0.1)");
  EXPECT_EQ(MultiStepLR(0.1, {30, 10}).describe(),
            "MultiStepLR(base_lr=0.1, milestones=[10, 30], gamma=0.1)");
  EXPECT_EQ(OneCycleLR(0.1, 100).describe(),
            "OneCycleLR(max_lr=0.1, total_steps=100, pct_start=0.3, anneal_strategy='cos', "
            "div_factor=25.0, final_div_factor=10000.0, three_phase=False, base_momentum=0.85, "
            "max_momentum=0.95)");
  EXPECT_EQ(OneCycleLR(0.1, 100, {.cycle_momentum = false}).describe(),
            "OneCycleLR(max_lr=0.1, total_steps=100, pct_start=0.3, anneal_strategy='cos', "
            "div_factor=25.0, final_div_factor=10000.0, three_phase=False, cycle_momentum=False)");
  EXPECT_EQ(ReduceLROnPlateau(0.1).describe(),
            "ReduceLROnPlateau(lr=0.1, mode='min', factor=0.1, patience=10, threshold=0.0001, "
            "threshold_mode='rel', cooldown=0, min_lr=0.0, eps=1e-08)");
  EXPECT_EQ(CyclicLR(0.001, 0.006).describe(),
            "CyclicLR(base_lr=0.001, max_lr=0.006, step_size_up=2000, step_size_down=2000, "
            "mode='triangular', gamma=1.0, base_momentum=0.8, max_momentum=0.9)");
  EXPECT_EQ(WarmupLR(std::make_shared<StepLR>(0.1, 30), 5).describe(),
            "WarmupLR(warmup='linear', warmup_steps=5, start_factor=0.3333333333333333, "
            "after=StepLR(base_lr=0.1, step_size=30, gamma=0.1))");
  EXPECT_EQ(WarmupCosineLR(3e-4, 10, 100, 0.01).describe(),
            "WarmupCosineLR(base_lr=0.0003, warmup_steps=10, total_steps=100, "
            "warmup_start_factor=0.01, eta_min=0.0)");
}

std::string error_of(const Status& s) { return s.ok() ? "ok" : s.error().message; }

TEST(Schedule, Errors) {
  EXPECT_EQ(error_of(StepLR(0.1, 0).validate()), "StepLR: step_size must be at least 1, not 0");
  EXPECT_EQ(error_of(CosineAnnealingLR(0.1, 0).validate()),
            "CosineAnnealingLR: T_max must be at least 1, not 0");
  EXPECT_EQ(error_of(WarmupCosineLR(0.1, -1, 10).validate()),
            "WarmupCosineLR: warmup_steps must be >= 0, not -1");
  EXPECT_EQ(error_of(WarmupCosineLR(0.1, 10, 10).validate()),
            "WarmupCosineLR: total_steps (10) must exceed warmup_steps (10): the cosine phase "
            "needs at least one step");
  EXPECT_EQ(error_of(WarmupCosineLR(0.1, 5, 10, 1.5).validate()),
            "Starting multiplicative factor expected to be between 0 and 1.");
  EXPECT_EQ(error_of(OneCycleLR(0.1, 0).validate()),
            "Expected positive integer total_steps, but got 0");
  EXPECT_EQ(error_of(OneCycleLR(0.1, 100, {.pct_start = 1.5}).validate()),
            "Expected float between 0 and 1 pct_start, but got 1.5");
  EXPECT_EQ(error_of(ReduceLROnPlateau(0.1, {.factor = 1.0}).validate()),
            "Factor should be < 1.0.");
  EXPECT_EQ(error_of(CyclicLR(0.001, 0.006, {.step_size_up = 0}).validate()),
            "CyclicLR: step_size_up must be at least 1, not 0");
  EXPECT_EQ(error_of(CyclicLR(0.001, 0.006, {.step_size_up = 4, .step_size_down = -1}).validate()),
            "CyclicLR: step_size_down must be >= 0, not -1");
  auto step = std::make_shared<StepLR>(0.1, 30);
  EXPECT_EQ(error_of(WarmupLR(nullptr, 5).validate()),
            "WarmupLR: no schedule to warm up into (after is null)");
  EXPECT_EQ(error_of(WarmupLR(step, -1).validate()),
            "WarmupLR: warmup_steps must be >= 0, not -1");
  EXPECT_EQ(error_of(WarmupLR(step, 5, 1.5).validate()),
            "Starting multiplicative factor expected to be between 0 and 1.");
  EXPECT_EQ(error_of(WarmupLR(step, 5, -0.1, WarmupKind::constant).validate()),
            "Constant multiplicative factor expected to be between 0 and 1.");
  // The wrapped schedule's own errors come through.
  EXPECT_EQ(error_of(WarmupLR(std::make_shared<StepLR>(0.1, 0), 5).validate()),
            "StepLR: step_size must be at least 1, not 0");
  EXPECT_EQ(error_of(ExponentialLR(0.1, 0.9).validate()), "ok");
}

// A schedule built with a negative or non-finite rate, or a factor that makes one, would
// feed every step such a rate (a negative one makes the optimizer climb the loss): its
// rates are checked as every rate is (training/learning_rate.h), its factors apart. 0 is
// a rate.
TEST(Schedule, RatesAndFactorsThatWouldGiveABadRateAreRefused) {
  const std::string negative =
      ": the learning rate must be >= 0 (a negative one makes the optimizer climb the loss; 0 leaves the "
      "weights as they are)";
  const std::string not_finite = ": the learning rate must be finite (a step with it makes every weight NaN)";
  EXPECT_EQ(error_of(StepLR(-0.1, 30).validate()), "StepLR's base_lr=-0.1" + negative);
  EXPECT_LT(StepLR(0.1, 1, -0.5).lr_at(1), 0);  // every other rate
  EXPECT_EQ(error_of(StepLR(0.1, 1, -0.5).validate()),
            "StepLR: gamma must be a finite number >= 0, not -0.5 (the learning rate is multiplied by its powers)");
  EXPECT_EQ(error_of(MultiStepLR(0.1, {3}, -1).validate()),
            "MultiStepLR: gamma must be a finite number >= 0, not -1.0 (the learning rate is multiplied by its "
            "powers)");
  EXPECT_EQ(error_of(ExponentialLR(0.1, INFINITY).validate()),
            "ExponentialLR: gamma must be a finite number >= 0, not inf (the learning rate is multiplied by its "
            "powers)");
  EXPECT_EQ(error_of(ExponentialLR(NAN, 0.9).validate()), "ExponentialLR's base_lr=nan" + not_finite);
  EXPECT_EQ(error_of(CosineAnnealingLR(0.1, 10, -0.01).validate()), "CosineAnnealingLR's eta_min=-0.01" + negative);
  EXPECT_EQ(error_of(WarmupCosineLR(0.1, 2, 10, 0, -1e-3).validate()), "WarmupCosineLR's eta_min=-0.001" + negative);
  EXPECT_EQ(error_of(OneCycleLR(0.1, 100, {.div_factor = -25}).validate()),
            "OneCycleLR's initial_lr (max_lr / div_factor)=-0.004" + negative);
  EXPECT_EQ(error_of(OneCycleLR(0.1, 100, {.final_div_factor = 0}).validate()),
            "OneCycleLR's min_lr (initial_lr / final_div_factor)=inf" + not_finite);
  EXPECT_EQ(error_of(CyclicLR(0.001, -0.006).validate()), "CyclicLR's max_lr=-0.006" + negative);
  EXPECT_EQ(error_of(CyclicLR(0.001, 0.006, {.mode = CyclicOptions::Mode::exp_range, .gamma = -0.5}).validate()),
            "CyclicLR: gamma must be a finite number >= 0, not -0.5 (the learning rate is multiplied by its "
            "powers)");
  EXPECT_EQ(error_of(ReduceLROnPlateau(0.1, {.min_lr = -1}).validate()), "ReduceLROnPlateau's min_lr=-1.0" + negative);
  EXPECT_EQ(error_of(WarmupLR(std::make_shared<StepLR>(-0.1, 3), 5).validate()), "StepLR's base_lr=-0.1" + negative);
  EXPECT_EQ(error_of(StepLR(0, 3, 0).validate()), "ok");
  EXPECT_EQ(error_of(ReduceLROnPlateau(0).validate()), "ok");
}

}  // namespace schedule_test
}  // namespace
}  // namespace weft

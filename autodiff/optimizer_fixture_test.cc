// Optimizers against PyTorch 1.13 over several steps
// (autodiff/testdata/make_optimizer_fixtures.py): every kind, every kind with parameter
// groups, and gradient accumulation over micro-batches for every kind.
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "autodiff/optimizer.h"
#include "autodiff/testing/stepper.h"
#include "ir/verifier.h"
#include "formats/npy.h"
#include "training/schedule.h"

namespace weft {
namespace {
namespace optimizer_fixture_test {  // this file's names, apart in its package's unity test

using testing::Stepper;

// ---- (b) PyTorch 1.13 fixtures ----

// Bazel runs the test in its runfiles root, where the fixtures keep their tree paths.
constexpr char kDir[] = "autodiff/testdata/optimizer/";

const nlohmann::json& manifest() {
  static const nlohmann::json m = [] {
    std::ifstream in(std::string(kDir) + "cases.json");
    if (!in.good()) return nlohmann::json::array();
    return nlohmann::json::parse(in);
  }();
  return m;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& c : manifest()) names.push_back(c["name"].get<std::string>());
  return names;
}

// The spec for a case: the kind's static constructor (PyTorch's defaults), then the
// keyword arguments the script passed.
OptimizerSpec spec_for(const nlohmann::json& c) {
  const std::string kind = c["kind"];
  const nlohmann::json& h = c["hyper"];
  OptimizerSpec s = kind == "SGD"       ? OptimizerSpec::sgd(h["lr"].get<double>())
                    : kind == "Adam"    ? OptimizerSpec::adam()
                    : kind == "AdamW"   ? OptimizerSpec::adamw()
                    : kind == "RMSprop" ? OptimizerSpec::rmsprop()
                    : kind == "RAdam"   ? OptimizerSpec::radam()
                    : kind == "NAdam"   ? OptimizerSpec::nadam()
                                        : OptimizerSpec::adagrad();
  EXPECT_EQ(optimizer_kind_name(s.kind), kind);
  for (const auto& [key, v] : h.items()) {
    if (key == "lr") s.lr = v;
    else if (key == "momentum") s.momentum = v;
    else if (key == "dampening") s.dampening = v;
    else if (key == "nesterov") s.nesterov = v;
    else if (key == "weight_decay") s.weight_decay = v;
    else if (key == "maximize") s.maximize = v;
    else if (key == "betas") s.betas = {v[0].get<double>(), v[1].get<double>()};
    else if (key == "eps") s.eps = v;
    else if (key == "amsgrad") s.amsgrad = v;
    else if (key == "alpha") s.alpha = v;
    else if (key == "centered") s.centered = v;
    else if (key == "lr_decay") s.lr_decay = v;
    else if (key == "initial_accumulator_value") s.initial_accumulator_value = v;
    else if (key == "momentum_decay") s.momentum_decay = v;
    else ADD_FAILURE() << "unknown hyper-parameter " << key;
  }
  s.max_grad_norm = c["max_grad_norm"];
  s.accumulate_steps = c.value("accumulate", 1);
  s.scheduled_momentum = c.contains("schedule");
  if (c.contains("groups")) {
    for (const auto& [param, options] : c["groups"].items()) {
      OptimizerSpec::GroupOptions o;
      if (options.contains("lr")) o.lr = options["lr"].get<double>();
      if (options.contains("weight_decay")) o.weight_decay = options["weight_decay"].get<double>();
      s.with_group(param, o);
    }
  }
  return s;
}

// The case's schedule (OneCycleLR or CyclicLR, cycling the momentum), from PyTorch's
// keyword arguments; nullptr for a case without one.
std::unique_ptr<LrSchedule> schedule_for(const nlohmann::json& c) {
  if (!c.contains("schedule")) return nullptr;
  const nlohmann::json& a = c["schedule"]["args"];
  if (c["schedule"]["kind"] == "OneCycleLR") {
    OneCycleOptions o;
    o.three_phase = a.value("three_phase", o.three_phase);
    if (a.value("anneal_strategy", "cos") == "linear") o.anneal_strategy = OneCycleOptions::Anneal::linear;
    o.base_momentum = a.value("base_momentum", o.base_momentum);
    o.max_momentum = a.value("max_momentum", o.max_momentum);
    return std::make_unique<OneCycleLR>(a["max_lr"], a["total_steps"], o);
  }
  CyclicOptions o;
  o.step_size_up = a.value("step_size_up", o.step_size_up);
  if (a.contains("step_size_down")) o.step_size_down = a["step_size_down"].get<int64_t>();
  if (a.value("mode", "triangular") == "triangular2") o.mode = CyclicOptions::Mode::triangular2;
  o.base_momentum = a.value("base_momentum", o.base_momentum);
  o.max_momentum = a.value("max_momentum", o.max_momentum);
  return std::make_unique<CyclicLR>(a["base_lr"], a["max_lr"], o);
}

Tensor load(const std::string& dir, const std::string& file) {
  auto t = read_npy(dir + file);
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

class OptimizerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerFixture, MatchesPyTorchOverSeveralSteps) {
  const nlohmann::json* found = nullptr;
  for (const auto& c : manifest()) {
    if (c["name"] == GetParam()) found = &c;
  }
  ASSERT_NE(found, nullptr);
  const nlohmann::json& c = *found;
  const std::string dir = std::string(kDir) + GetParam() + "/";
  const OptimizerSpec spec = spec_for(c);
  SCOPED_TRACE(spec.describe());
  std::map<std::string, Tensor> params;
  for (const auto& [name, shape] : c["params"].items()) {
    params[name] = load(dir, "init." + name + ".npy");
  }
  // A schedule's lr and momentum, fed per step as runtime inputs (f64, as PyTorch's
  // Python floats).
  const std::unique_ptr<LrSchedule> schedule = schedule_for(c);
  Stepper s(spec, params, schedule ? DType::f64 : DType::f32);
  ASSERT_TRUE(s.status().ok()) << s.status().to_string();
  ASSERT_TRUE(verify(s.graph()).ok());
  const std::vector<std::string> slots = c["slots"];
  // Gradient accumulation adds a slot per parameter that PyTorch has no state for.
  const size_t extra = spec.accumulate_steps > 1 ? 1 : 0;
  EXPECT_EQ(s.slots().size(), (slots.size() + extra) * params.size());
  const double tol = 1e-6;
  const int steps = c.value("steps", 3);
  EXPECT_GE(steps, 3);
  for (int k = 1; k <= steps; ++k) {
    const std::string prefix = "step" + std::to_string(k) + ".";
    std::map<std::string, Tensor> grads;
    for (const auto& [name, value] : params) {
      grads[name] = load(dir, prefix + "grad." + name + ".npy");
    }
    double lr = spec.lr;
    std::optional<double> momentum;
    if (schedule) {
      // weft's schedule gives the values PyTorch's stepped with.
      lr = schedule->lr_at(k - 1);
      momentum = schedule->momentum_at(k - 1);
      ASSERT_TRUE(momentum.has_value());
      EXPECT_NEAR(lr, c["schedule"]["lrs"][k - 1].get<double>(), 1e-12) << "step " << k;
      EXPECT_NEAR(*momentum, c["schedule"]["momenta"][k - 1].get<double>(), 1e-12) << "step " << k;
    }
    ASSERT_TRUE(s.run(lr, k, grads, momentum));
    for (const auto& [name, value] : params) {
      std::string why;
      EXPECT_TRUE(all_close(s[name], load(dir, prefix + name + ".npy"), tol, &why))
          << "step " << k << ", param " << name << ": " << why;
      for (const std::string& slot : slots) {
        // PyTorch has state only from the first update on.
        const std::string file = prefix + name + "." + slot + ".npy";
        if (!std::ifstream(dir + file).good()) continue;
        EXPECT_TRUE(all_close(s["optimizer." + name + "." + slot],
                              load(dir, prefix + name + "." + slot + ".npy"), tol, &why))
            << "step " << k << ", " << name << "." << slot << ": " << why;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, OptimizerFixture, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(OptimizerFixtures, CoverEveryKindWithAndWithoutGroupsAndAccumulation) {
  std::set<std::string> kinds, grouped, scheduled, accumulated;
  for (const auto& c : manifest()) {
    kinds.insert(c["kind"].get<std::string>());
    if (c.contains("groups")) grouped.insert(c["kind"].get<std::string>());
    if (c.contains("schedule")) {
      scheduled.insert(c["kind"].get<std::string>() + " " + c["schedule"]["kind"].get<std::string>());
    }
    if (c.value("accumulate", 1) > 1) accumulated.insert(c["kind"].get<std::string>());
  }
  // Scheduled momentum: SGD and Adam under each cycling schedule at least.
  for (const char* want : {"SGD OneCycleLR", "SGD CyclicLR", "Adam OneCycleLR", "Adam CyclicLR"}) {
    EXPECT_TRUE(scheduled.count(want)) << want;
  }
  const std::set<std::string> all = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "RAdam", "NAdam"};
  EXPECT_EQ(kinds, all);
  EXPECT_EQ(grouped, all);
  EXPECT_EQ(accumulated, all);
}

}  // namespace optimizer_fixture_test
}  // namespace
}  // namespace weft

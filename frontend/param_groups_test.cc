// Parameter groups (one lr and weight decay per graph-tree path, with set_lr scaling every
// group as a PyTorch scheduler does) and gradient accumulation, through the Trainer on
// the compiled CPU backend and the reference interpreter. The optimizer arithmetic of both
// is pinned against PyTorch 1.13 by autodiff/optimizer_fixture_test.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {
namespace param_groups_test {  // this file's names, apart in its package's unity test

/// encoder (labelled, holding a labelled `inner`) -> Linear(8, 3).
FlowPtr net() {
  auto inner = FlowBuilder::from(Linear(4, 8)).through(Tanh()).label("inner").build();
  EXPECT_TRUE(inner.ok());
  auto encoder = FlowBuilder::from(*inner).through(Linear(8, 8)).through(Tanh()).label("encoder").build();
  EXPECT_TRUE(encoder.ok());
  auto n = FlowBuilder::from(*encoder).through(Linear(8, 3)).build();
  EXPECT_TRUE(n.ok());
  return *n;
}

/// Rows [first, first + rows) of a fixed batch: x f32[rows, 4], labels i64[rows].
std::vector<Tensor> batch(int64_t first, int64_t rows) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t r = first; r < first + rows; ++r) {
    for (int64_t c = 0; c < 4; ++c) x.push_back(static_cast<float>(std::sin(1.7 * r + 0.9 * c)));
    y.push_back(r % 3);
  }
  return {Tensor::from_vector<float>({rows, 4}, x), Tensor::from_vector<int64_t>({rows}, y)};
}

StatusOr<Trainer> compile(const OptimizerSpec& opt, const std::string& backend, int64_t rows = 6) {
  return Trainer::compile(net(), {{"x", f32({rows, 4})}}, LossSpec::cross_entropy(), opt,
                          {.seed = 7, .backend = backend});
}

/// new - old, elementwise.
std::vector<double> delta(const Tensor& before, const Tensor& after) {
  std::vector<double> a = before.to_doubles(), b = after.to_doubles();
  for (size_t i = 0; i < a.size(); ++i) b[i] -= a[i];
  return b;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol + tol * std::abs(want[i])) << what << " element " << i;
  }
}

class ParamGroups : public ::testing::TestWithParam<std::string> {};

// SGD's first step moves each parameter by lr·gradient: a group at a tenth of the lr moves
// its parameters a tenth as far, the rest exactly as without groups.
TEST_P(ParamGroups, EachGroupStepsWithItsOwnLr) {
  auto plain = compile(OptimizerSpec::sgd(0.5), GetParam());
  auto grouped = compile(OptimizerSpec::sgd(0.5).with_group("encoder.inner", {.lr = 0.05}),
                         GetParam());
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  ASSERT_TRUE(grouped.ok()) << grouped.error().to_string();
  const std::map<std::string, Tensor> before = plain->values();
  ASSERT_TRUE(plain->step(batch(0, 6)).ok());
  ASSERT_TRUE(grouped->step(batch(0, 6)).ok());
  for (const char* name : {"encoder.inner.0.weight", "encoder.inner.0.bias"}) {
    std::vector<double> want = delta(before.at(name), plain->values().at(name));
    for (double& d : want) d *= 0.1;
    expect_near(delta(before.at(name), grouped->values().at(name)), want, 1e-6, name);
  }
  for (const char* name : {"encoder.1.weight", "1.bias"}) {
    expect_near(grouped->values().at(name).to_doubles(), plain->values().at(name).to_doubles(),
                1e-7, name);
  }
}

// Gradient accumulation: two micro-batches of 3 with accumulate_steps = 2 take the update
// of one batch of 6 (a mean loss), and the parameters stay put after the first.
TEST_P(ParamGroups, AccumulationMatchesTheWholeBatch) {
  const OptimizerSpec adam = OptimizerSpec::adam(0.01).with_group("encoder", {.lr = 0.02});
  auto whole = compile(adam, GetParam(), 6);
  auto micro = compile(OptimizerSpec(adam).with_accumulation(2), GetParam(), 3);
  ASSERT_TRUE(whole.ok()) << whole.error().to_string();
  ASSERT_TRUE(micro.ok()) << micro.error().to_string();
  for (int update = 0; update < 2; ++update) {
    const std::map<std::string, Tensor> before = micro->values();
    ASSERT_TRUE(micro->step(batch(6 * update, 3)).ok());
    EXPECT_TRUE(micro->values().at("1.weight") == before.at("1.weight"));
    ASSERT_TRUE(micro->step(batch(6 * update + 3, 3)).ok());
    ASSERT_TRUE(whole->step(batch(6 * update, 6)).ok());
    for (const char* name : {"encoder.inner.0.weight", "encoder.1.bias", "1.weight"}) {
      expect_near(micro->values().at(name).to_doubles(), whole->values().at(name).to_doubles(),
                  1e-5, name);
    }
  }
  EXPECT_EQ(micro->steps(), 4);
  EXPECT_EQ(micro->updates(), 2);
}

INSTANTIATE_TEST_SUITE_P(Backends, ParamGroups, ::testing::Values("cpu", "reference"));

TEST(ParamGroupsApi, SetLrScalesEveryGroupAndEachGroupHasItsOwn) {
  auto t = compile(OptimizerSpec::adam(0.01)
                       .with_group("encoder.inner", {.lr = 0.001})
                       .with_group("1", {.weight_decay = 0.0}),
                   "reference");
  ASSERT_FALSE(t.ok());  // "1" is not a label path
  EXPECT_EQ(t.error().message,
            "parameter group '1': no subgraph labelled '1'; label paths in this model: "
            "encoder, encoder.inner");

  t = compile(OptimizerSpec::adam(0.01).with_group("encoder.inner", {.lr = 0.001}), "reference");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->lr(), 0.01);
  EXPECT_EQ(*t->lr("encoder.inner"), 0.001);
  t->set_lr(0.005);  // a schedule at half the base lr halves every group's
  EXPECT_EQ(t->lr(), 0.005);
  EXPECT_DOUBLE_EQ(*t->lr("encoder.inner"), 0.0005);
  ASSERT_TRUE(t->set_lr("encoder.inner", 0.3).ok());
  EXPECT_EQ(*t->lr("encoder.inner"), 0.3);
  EXPECT_EQ(t->lr(), 0.005);
  EXPECT_EQ(t->set_lr("encoder", 1).to_string(),
            "error: no parameter group 'encoder' (groups: encoder.inner)");
  EXPECT_EQ(t->lr("decoder").error().message,
            "no parameter group 'decoder' (groups: encoder.inner)");

  auto plain = compile(OptimizerSpec::adam(0.01), "reference");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->set_lr("encoder", 1).to_string(),
            "error: no parameter group 'encoder' (the optimizer has no groups: add them with "
            "OptimizerSpec::with_group)");
}

// set_lr(NaN) made every weight NaN silently: the step refuses it and changes nothing;
// a group's rate is refused where it is set.
TEST(ParamGroupsApi, ALearningRateThatIsNotFiniteIsRefused) {
  for (const char* backend : {"cpu", "reference"}) {
    auto t = compile(OptimizerSpec::adam(0.01).with_group("encoder.inner", {.lr = 0.001}), backend);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    const auto before = t->values();
    t->set_lr(std::nan(""));
    StatusOr<double> loss = t->step(batch(0, 6));
    ASSERT_FALSE(loss.ok()) << backend;
    EXPECT_EQ(loss.error().message,
              "set_lr(nan): the learning rate must be finite (a step with it makes every weight NaN)");
    EXPECT_EQ(t->steps(), 0);
    EXPECT_EQ(t->values().at("encoder.inner.0.weight").to_doubles(),
              before.at("encoder.inner.0.weight").to_doubles());
    t->set_lr(0.01);
    EXPECT_EQ(t->set_lr("encoder.inner", INFINITY).to_string(),
              "error: set_lr('encoder.inner', inf): the learning rate must be finite (a step with it makes "
              "every weight NaN)");
    ASSERT_TRUE(t->step(batch(0, 6)).ok());
  }
  // One the spec gives (PyTorch's constructor takes inf) is refused when the step is built.
  const std::string not_finite = ": the learning rate must be finite (a step with it makes every weight NaN)";
  auto inf = compile(OptimizerSpec::sgd(INFINITY), "reference");
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.error().message,
            "SGD(lr=inf, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)" + not_finite);
  inf = compile(OptimizerSpec::sgd(0.1).with_group("encoder", {.lr = INFINITY}), "reference");
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.error().message,
            "parameter group 'encoder' of SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, "
            "nesterov=False, groups=[encoder(lr=inf)])" + not_finite);
}

// A negative rate made the optimizer climb the loss (PyTorch refuses it): refused as a
// rate that is not finite is, with its value; 0 is a rate.
TEST(ParamGroupsApi, ANegativeLearningRateIsRefused) {
  const std::string negative =
      ": the learning rate must be >= 0 (a negative one makes the optimizer climb the loss; 0 leaves the "
      "weights as they are)";
  for (const char* backend : {"cpu", "reference"}) {
    auto t = compile(OptimizerSpec::adam(0.01).with_group("encoder.inner", {.lr = 0.001}), backend);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    const auto before = t->values();
    t->set_lr(-1);
    StatusOr<double> loss = t->step(batch(0, 6));
    ASSERT_FALSE(loss.ok()) << backend;
    EXPECT_EQ(loss.error().message, "set_lr(-1.0)" + negative);
    EXPECT_EQ(t->steps(), 0);
    EXPECT_EQ(t->values().at("encoder.inner.0.weight").to_doubles(),
              before.at("encoder.inner.0.weight").to_doubles());
    t->set_lr(0);
    EXPECT_EQ(t->set_lr("encoder.inner", -0.25).to_string(), "error: set_lr('encoder.inner', -0.25)" + negative);
    EXPECT_TRUE(t->set_lr("encoder.inner", 0).ok());
    ASSERT_TRUE(t->step(batch(0, 6)).ok());
  }
}

TEST(ParamGroupsApi, Errors) {
  auto overlap = compile(OptimizerSpec::sgd(0.1).with_group("encoder").with_group("encoder.inner"),
                         "reference");
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().message,
            "parameter 'encoder.inner.0.weight' is in two parameter groups, 'encoder' and "
            "'encoder.inner' (PyTorch: some parameters appear in more than one parameter group)");
  auto bad_lr = compile(OptimizerSpec::sgd(0.1).with_group("encoder", {.lr = -2}), "reference");
  ASSERT_FALSE(bad_lr.ok());
  EXPECT_EQ(bad_lr.error().message, "parameter group 'encoder': Invalid learning rate: -2.0");
  auto bad_k = compile(OptimizerSpec::sgd(0.1).with_accumulation(-1), "reference");
  ASSERT_FALSE(bad_k.ok());
  EXPECT_EQ(bad_k.error().message,
            "Invalid accumulate_steps value: -1 (the update is taken every accumulate_steps "
            "steps; 1 takes it every step)");
}

// A frozen group trains nothing; thawing it brings its lr back into play.
TEST(ParamGroupsApi, FreezingAGroup) {
  auto t = compile(OptimizerSpec::sgd(0.5).with_group("encoder", {.lr = 0.1}), "cpu");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_TRUE(t->freeze("encoder").ok());
  Tensor w = t->values().at("encoder.1.weight");
  ASSERT_TRUE(t->step(batch(0, 6)).ok());
  EXPECT_TRUE(t->values().at("encoder.1.weight") == w);
  ASSERT_TRUE(t->thaw("encoder").ok());
  ASSERT_TRUE(t->step(batch(0, 6)).ok());
  EXPECT_FALSE(t->values().at("encoder.1.weight") == w);
}

}  // namespace param_groups_test
}  // namespace
}  // namespace weft

// Every loss and reduction against torch.nn.functional (PyTorch 1.13; fixtures from
// frontend/testdata/make_sequence_fixtures.py), run through the reference interpreter
// to 1e-5 (huber, weighted nll / cross_entropy, poisson_nll, sigmoid_focal and
// hinge_embedding with their gradients w.r.t. the prediction too, and those against f64
// finite differences), plus the losses' user errors with their messages pinned.
#include "frontend/losses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/loss_fixtures.h"
#include "frontend/testing/run_model.h"

namespace weft {
namespace {
namespace losses_test {  // this file's names, apart in its package's unity test

using testing::to_f64;

const std::string kFile = "frontend/losses_test.cc";
constexpr double kTol = 1e-5;

Tensor load(const std::string& case_name, const std::string& file) {
  return testing::load_loss_fixture(case_name, file);
}

/// prediction -> loss(prediction, target), the target an extra input.
FlowBuilder loss_flow(ModulePtr loss) {
  return FlowBuilder::from(Identity()).input({"target"}).through(std::move(loss)).uses({"target"});
}

struct Case {
  std::string name;  ///< Fixture folder.
  std::function<ModulePtr()> make;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

/// Each fixture's reduction suffix.
const std::pair<const char*, Reduction> kReductions[] = {
    {"mean", Reduction::Mean}, {"sum", Reduction::Sum}, {"none", Reduction::None}};

class LossParity : public ::testing::TestWithParam<Case> {};

TEST_P(LossParity, MatchesTorch) {
  const Case& c = GetParam();
  Tensor prediction = load(c.name, "input");
  Tensor target = load(c.name, "target");
  auto model = loss_flow(c.make()).build({{"x", prediction.type()}, {"target", target.type()}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {prediction, target}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  Tensor want = load(c.name, "output");
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], want, kTol, &why)) << why;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto [suffix, r] : kReductions) {
    std::string s = suffix;
    out.push_back({"loss_mse_" + s, [r] { return MSELoss(r); }});
    out.push_back({"loss_l1_" + s, [r] { return L1Loss(r); }});
    out.push_back({"loss_smooth_l1_" + s, [r] { return SmoothL1Loss(r, 1.0); }});
    out.push_back({"loss_cross_entropy_" + s, [r] { return CrossEntropyLoss({.reduction = r, .label_smoothing = 0, .weight = {}}); }});
    out.push_back({"loss_cross_entropy_smooth_" + s,
                   [r] { return CrossEntropyLoss({.reduction = r, .label_smoothing = 0.1, .weight = {}}); }});
    out.push_back({"loss_nll_" + s, [r] { return NLLLoss(r); }});
    out.push_back({"loss_bce_" + s, [r] { return BCELoss(r); }});
    out.push_back({"loss_bce_with_logits_" + s, [r] { return BCEWithLogitsLoss(r); }});
    out.push_back({"loss_kl_div_" + s, [r] { return KLDivLoss(r); }});
  }
  out.push_back({"loss_smooth_l1_beta0.5_mean", [] { return SmoothL1Loss(Reduction::Mean, 0.5); }});
  out.push_back({"loss_smooth_l1_beta0_sum", [] { return SmoothL1Loss(Reduction::Sum, 0.0); }});
  out.push_back({"loss_kl_div_batchmean", [] { return KLDivLoss(Reduction::BatchMean); }});
  out.push_back({"loss_kl_div_log_target_batchmean",
                 [] { return KLDivLoss(Reduction::BatchMean, /*log_target=*/true); }});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return testing::test_name(info.param.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, LossParity, ::testing::ValuesIn(cases()), case_name);

// ---- Losses whose fixtures hold the gradient too: grad.input = d sum(output · seed) / d
// input.

std::vector<Case> grad_cases() {
  const std::vector<double> weight = {0.5, 2.0, 1.0, 3.0};
  std::vector<Case> out;
  for (auto [suffix, r] : kReductions) {
    std::string s = suffix;
    out.push_back({"loss_huber_" + s, [r] { return HuberLoss(r); }});
    out.push_back({"loss_nll_weight_" + s, [r, weight] { return NLLLoss(r, weight); }});
    out.push_back({"loss_cross_entropy_weight_" + s,
                   [r, weight] { return CrossEntropyLoss({.reduction = r, .weight = weight}); }});
    out.push_back({"loss_cross_entropy_weight_smooth_" + s, [r, weight] {
                     return CrossEntropyLoss(
                         {.reduction = r, .label_smoothing = 0.1, .weight = weight});
                   }});
    out.push_back({"loss_poisson_nll_" + s, [r] { return PoissonNLLLoss({.reduction = r}); }});
    out.push_back({"loss_focal_" + s, [r] { return SigmoidFocalLoss({.reduction = r}); }});
    out.push_back({"loss_hinge_embedding_" + s, [r] { return HingeEmbeddingLoss(r); }});
  }
  out.push_back({"loss_focal_alpha0.5_gamma1_mean", [] {
                   return SigmoidFocalLoss({.reduction = Reduction::Mean, .alpha = 0.5, .gamma = 1});
                 }});
  out.push_back({"loss_focal_noalpha_gamma0_sum", [] {
                   return SigmoidFocalLoss({.reduction = Reduction::Sum, .alpha = -1, .gamma = 0});
                 }});
  out.push_back({"loss_hinge_embedding_margin0.5_mean",
                 [] { return HingeEmbeddingLoss(Reduction::Mean, 0.5); }});
  out.push_back({"loss_huber_delta0.5_mean", [] { return HuberLoss(Reduction::Mean, 0.5); }});
  out.push_back({"loss_huber_delta2_sum", [] { return HuberLoss(Reduction::Sum, 2.0); }});
  out.push_back({"loss_poisson_nll_rate_mean", [] {
                   return PoissonNLLLoss({.reduction = Reduction::Mean, .log_input = false});
                 }});
  out.push_back({"loss_poisson_nll_full_sum",
                 [] { return PoissonNLLLoss({.reduction = Reduction::Sum, .full = true}); }});
  out.push_back({"loss_poisson_nll_rate_full_eps_none", [] {
                   return PoissonNLLLoss({.reduction = Reduction::None,
                                          .log_input = false,
                                          .full = true,
                                          .eps = 1e-3});
                 }});
  return out;
}

/// The loss of `c` on (prediction, target) as a built model.
StatusOr<Model> build_loss(const Case& c, const Tensor& prediction, const Tensor& target) {
  return loss_flow(c.make()).build({{"x", prediction.type()}, {"target", target.type()}});
}

/// d sum(output · seed) / d prediction, by autodiff on the reference interpreter.
StatusOr<Tensor> gradient(const Model& model, const Tensor& prediction, const Tensor& target,
                          const Tensor& seed) {
  auto grads = testing::input_gradients(model, {"x"}, {prediction, target}, seed);
  if (!grads.ok()) return grads.error();
  return (*grads)[0];
}

class LossGradParity : public ::testing::TestWithParam<Case> {};

TEST_P(LossGradParity, MatchesTorch) {
  const Case& c = GetParam();
  Tensor prediction = load(c.name, "input");
  Tensor target = load(c.name, "target");
  auto model = build_loss(c, prediction, target);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {prediction, target}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], load(c.name, "output"), kTol, &why)) << why;
  auto grad = gradient(*model, prediction, target, load(c.name, "seed"));
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  EXPECT_TRUE(all_close(*grad, load(c.name, "grad.input"), kTol, &why)) << why;
}

/// In f64, autodiff's gradient against central differences of sum(output · seed).
TEST_P(LossGradParity, FiniteDifferencesF64) {
  const Case& c = GetParam();
  Tensor prediction = to_f64(load(c.name, "input"));
  Tensor target = to_f64(load(c.name, "target"));
  Tensor seed = to_f64(load(c.name, "seed"));
  auto model = build_loss(c, prediction, target);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto grad = gradient(*model, prediction, target, seed);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  testing::expect_input_gradients_match_finite_differences(*model, {prediction, target}, {0},
                                                           {*grad}, seed);
}

INSTANTIATE_TEST_SUITE_P(Torch, LossGradParity, ::testing::ValuesIn(grad_cases()), case_name);

/// The function form, used directly inside a module: the same value as the module form.
class SumOfLosses : public Module {
 public:
  std::string describe() const override { return "SumOfLosses"; }
  ValueId forward(Emitter& e, const std::vector<ValueId>& in) override {
    return e.add(loss::mse(e, in[0], in[1]), loss::l1(e, in[0], in[1], Reduction::Mean));
  }
};

TEST(Losses, FunctionFormComposes) {
  Tensor p = load("loss_mse_mean", "input");
  Tensor t = load("loss_mse_mean", "target");
  auto model =
      loss_flow(std::make_shared<SumOfLosses>()).build({{"x", p.type()}, {"target", t.type()}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {p, t}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  double want =
      load("loss_mse_mean", "output").get_double(0) + load("loss_l1_mean", "output").get_double(0);
  EXPECT_NEAR(run->outputs[0].get_double(0), want, kTol * (1 + std::abs(want)));
}

/// Class weights with runs of equal values (emitted as one full() per run): the sum
/// -Σ_n w[label_n]·log_probs[n, label_n], computed here from the fixture's inputs.
TEST(Losses, ClassWeightRuns) {
  Tensor log_probs = load("loss_nll_weight_sum", "input");
  Tensor labels = load("loss_nll_weight_sum", "target");
  const int64_t classes = log_probs.type().shape[1];
  for (const std::vector<double>& weight :
       {std::vector<double>{2, 2, 2, 2}, {0.5, 0.5, 3, 3}, {1, 4, 4, 1}}) {
    auto model = loss_flow(NLLLoss(Reduction::Sum, weight))
                     .build({{"x", log_probs.type()}, {"target", labels.type()}});
    ASSERT_TRUE(model.ok()) << model.error().to_string();
    auto run = testing::run_model(*model, {log_probs, labels}, {});
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    double want = 0;
    for (int64_t n = 0; n < labels.numel(); ++n) {
      const auto label = static_cast<int64_t>(labels.get_double(n));
      want -= weight[static_cast<size_t>(label)] * log_probs.get_double(n * classes + label);
    }
    EXPECT_NEAR(run->outputs[0].get_double(0), want, kTol * (1 + std::abs(want)));
  }
}

TEST(Losses, ReductionNames) {
  EXPECT_STREQ(to_string(Reduction::Mean), "mean");
  EXPECT_STREQ(to_string(Reduction::BatchMean), "batchmean");
}

// ---- User errors, messages pinned.

std::string error_of(const FlowBuilder& b, const std::vector<InputSpec>& inputs) {
  return testing::build_error(b, inputs);
}

std::string at(int line) { return kFile + ":" + std::to_string(line) + ":"; }

TEST(LossErrors, ShapeMismatch) {
  auto b = loss_flow(MSELoss());
  EXPECT_NE(error_of(b, {{"x", f32({3, 4})}, {"target", f32({3})}})
                .find("error: mse: the prediction f32[3,4] and the target f32[3] must have the "
                      "same type (weft does not broadcast losses)"),
            std::string::npos);
}

TEST(LossErrors, LabelsMustBeIntegers) {
  auto b = loss_flow(CrossEntropyLoss());
  EXPECT_NE(error_of(b, {{"x", f32({4, 5})}, {"target", f32({4})}})
                .find("error: cross_entropy: labels must be i64 class indices i64[4] (one per "
                      "row of the logits f32[4,5]), got f32[4]"),
            std::string::npos);
}

TEST(LossErrors, LogitsMustBeTwoDimensional) {
  auto b = loss_flow(NLLLoss());
  EXPECT_NE(error_of(b, {{"x", f32({5})}, {"target", i64({1})}})
                .find("error: nll: log-probabilities must be a float [batch, classes] tensor, "
                      "got f32[5]"),
            std::string::npos);
}

TEST(LossErrors, BatchMeanOnlyForKlDiv) {
  auto b = loss_flow(L1Loss(Reduction::BatchMean));
  EXPECT_NE(error_of(b, {{"x", f32({3})}, {"target", f32({3})}})
                .find("error: l1: reduction 'batchmean' is only defined for kl_div; use mean, "
                      "sum or none"),
            std::string::npos);
}

TEST(LossErrors, LabelSmoothingRange) {
  auto b = loss_flow(CrossEntropyLoss({.label_smoothing = 1.5, .weight = {}}));
  EXPECT_NE(error_of(b, {{"x", f32({4, 5})}, {"target", i64({4})}})
                .find("error: cross_entropy: label_smoothing must be in [0, 1], got 1.5"),
            std::string::npos);
}

TEST(LossErrors, HuberDeltaPositive) {
  auto b = loss_flow(HuberLoss(Reduction::Mean, 0.0));
  EXPECT_NE(error_of(b, {{"x", f32({3})}, {"target", f32({3})}})
                .find("error: huber: delta must be > 0, got 0.0 (PyTorch: huber_loss does not "
                      "support non-positive values for delta.)"),
            std::string::npos);
}

TEST(LossErrors, HuberShapeMismatchNamesHuber) {
  auto b = loss_flow(HuberLoss());
  EXPECT_NE(error_of(b, {{"x", f32({3, 4})}, {"target", f32({3})}})
                .find("error: huber: the prediction f32[3,4] and the target f32[3] must have "
                      "the same type (weft does not broadcast losses)"),
            std::string::npos);
}

TEST(LossErrors, NllWeightPerClass) {
  auto b = loss_flow(NLLLoss(Reduction::Mean, {1.0, 2.0, 3.0}));
  EXPECT_NE(error_of(b, {{"x", f32({4, 5})}, {"target", i64({4})}})
                .find("error: nll: weight must hold one value per class (5), got 3 (PyTorch: "
                      "weight tensor should be defined either for all 5 classes or no classes "
                      "but got weight tensor of shape: [3])"),
            std::string::npos);
}

TEST(LossErrors, CrossEntropyWeightPerClass) {
  auto b = loss_flow(CrossEntropyLoss({.weight = {1.0, 2.0}}));
  EXPECT_NE(error_of(b, {{"x", f32({4, 5})}, {"target", i64({4})}})
                .find("error: cross_entropy: weight must hold one value per class (5), got 2"),
            std::string::npos);
}

TEST(LossErrors, PoissonNllShapeMismatch) {
  auto b = loss_flow(PoissonNLLLoss());
  EXPECT_NE(error_of(b, {{"x", f32({3, 4})}, {"target", f32({4})}})
                .find("error: poisson_nll: the input f32[3,4] and the target f32[4] must have "
                      "the same type (weft does not broadcast losses)"),
            std::string::npos);
}

TEST(LossErrors, FocalGammaNonNegative) {
  auto b = loss_flow(SigmoidFocalLoss({.gamma = -1}));
  EXPECT_NE(error_of(b, {{"x", f32({3})}, {"target", f32({3})}})
                .find("error: sigmoid_focal: gamma must be >= 0, got -1.0"),
            std::string::npos);
}

TEST(LossErrors, FocalAlphaAtMostOne) {
  auto b = loss_flow(SigmoidFocalLoss({.alpha = 1.5}));
  EXPECT_NE(error_of(b, {{"x", f32({3})}, {"target", f32({3})}})
                .find("error: sigmoid_focal: alpha must be in [0, 1] (or negative for no "
                      "weighting), got 1.5"),
            std::string::npos);
}

TEST(LossErrors, HingeEmbeddingShapeMismatch) {
  auto b = loss_flow(HingeEmbeddingLoss());
  EXPECT_NE(error_of(b, {{"x", f32({3, 4})}, {"target", f32({4})}})
                .find("error: hinge_embedding: the input f32[3,4] and the target f32[4] must "
                      "have the same type (weft does not broadcast losses)"),
            std::string::npos);
}

TEST(LossErrors, TargetMissing) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(BCEWithLogitsLoss());
  EXPECT_EQ(error_of(b, {{"x", f32({3})}}),
            at(line) +
                "29: error: BCEWithLogitsLoss(mean) takes two inputs, the prediction (the "
                "stream) and the target from uses({...}), but 1 were given"
                " [in BCEWithLogitsLoss(mean)]");
}

}  // namespace losses_test
}  // namespace
}  // namespace weft

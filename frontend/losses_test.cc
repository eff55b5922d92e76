// Every loss and reduction against torch.nn.functional (PyTorch 1.13; fixtures from
// frontend/testdata/make_sequence_fixtures.py), run through the reference interpreter
// to 1e-5, plus the losses' user errors with their messages pinned.
#include "frontend/losses.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <functional>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/run_model.h"
#include "runtime/npy.h"

namespace weft {
namespace {

const std::string kDir = "frontend/testdata/sequence/";
const std::string kFile = "frontend/losses_test.cc";
constexpr double kTol = 1e-5;

Tensor load(const std::string& case_name, const std::string& file) {
  auto t = read_npy(kDir + case_name + "/" + file + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
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
  const std::pair<const char*, Reduction> reductions[] = {
      {"mean", Reduction::Mean}, {"sum", Reduction::Sum}, {"none", Reduction::None}};
  for (auto [suffix, r] : reductions) {
    std::string s = suffix;
    out.push_back({"loss_mse_" + s, [r] { return MSELoss(r); }});
    out.push_back({"loss_l1_" + s, [r] { return L1Loss(r); }});
    out.push_back({"loss_smooth_l1_" + s, [r] { return SmoothL1Loss(r, 1.0); }});
    out.push_back({"loss_cross_entropy_" + s, [r] { return CrossEntropyLoss({.reduction = r}); }});
    out.push_back({"loss_cross_entropy_smooth_" + s,
                   [r] { return CrossEntropyLoss({.reduction = r, .label_smoothing = 0.1}); }});
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

INSTANTIATE_TEST_SUITE_P(Torch, LossParity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

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

TEST(Losses, ReductionNames) {
  EXPECT_STREQ(to_string(Reduction::Mean), "mean");
  EXPECT_STREQ(to_string(Reduction::BatchMean), "batchmean");
}

// ---- User errors, messages pinned.

std::string error_of(const FlowBuilder& b, const std::vector<InputSpec>& inputs) {
  auto model = b.build(inputs);
  return model.ok() ? "(built)" : model.error().to_string();
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
  auto b = loss_flow(CrossEntropyLoss({.label_smoothing = 1.5}));
  EXPECT_NE(error_of(b, {{"x", f32({4, 5})}, {"target", i64({4})}})
                .find("error: cross_entropy: label_smoothing must be in [0, 1], got 1.5"),
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

}  // namespace
}  // namespace weft

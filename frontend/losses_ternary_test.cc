// The three-input losses (margin_ranking, cosine_embedding, triplet_margin) against
// torch.nn.functional (PyTorch 1.13; fixtures from
// frontend/testdata/make_sequence_fixtures.py's losses_multi_input): forward and the
// gradient w.r.t. every float input to 1e-5 for every reduction, the same gradients
// against f64 finite differences, and the user errors with their messages pinned.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "frontend/flow.h"
#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/testing/loss_fixtures.h"
#include "frontend/testing/run_model.h"

namespace weft {
namespace {
namespace losses_ternary_test {  // this file's names, apart in its package's unity test

using testing::to_f64;

const std::string kFile = "frontend/losses_ternary_test.cc";
constexpr double kTol = 1e-5;

Tensor load(const std::string& case_name, const std::string& file) {
  return testing::load_loss_fixture(case_name, file);
}

struct Case {
  std::string name;                  ///< Fixture folder.
  std::vector<std::string> extras;   ///< The two inputs after the stream, in uses order.
  std::vector<std::string> wrt;      ///< The inputs with gradient fixtures ("x" = input).
  std::function<ModulePtr()> make;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

/// The fixture file of graph input `name` ("x" is the stream, saved as "input").
std::string file_of(const std::string& name) { return name == "x" ? "input" : name; }

/// x -> loss(x, extras...), the extras graph inputs passed with uses(...).
FlowBuilder ternary_flow(const Case& c) {
  return FlowBuilder::from(Identity()).input(c.extras).through(c.make()).uses(c.extras);
}

/// The case's inputs in graph order: x, then the extras.
std::vector<std::string> names_of(const Case& c) {
  std::vector<std::string> names = {"x"};
  names.insert(names.end(), c.extras.begin(), c.extras.end());
  return names;
}

std::vector<Tensor> inputs_of(const Case& c, bool f64) {
  std::vector<Tensor> out;
  for (const std::string& n : names_of(c)) {
    Tensor t = load(c.name, file_of(n));
    out.push_back(f64 ? to_f64(t) : t);
  }
  return out;
}

StatusOr<Model> build(const Case& c, const std::vector<Tensor>& inputs) {
  std::vector<InputSpec> specs;
  std::vector<std::string> names = names_of(c);
  for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], inputs[i].type()});
  return ternary_flow(c).build(specs);
}

class TernaryLossParity : public ::testing::TestWithParam<Case> {};

TEST_P(TernaryLossParity, MatchesTorch) {
  const Case& c = GetParam();
  std::vector<Tensor> inputs = inputs_of(c, /*f64=*/false);
  auto model = build(c, inputs);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, inputs, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], load(c.name, "output"), kTol, &why)) << why;
  auto grads = testing::input_gradients(*model, c.wrt, inputs, load(c.name, "seed"));
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  for (size_t i = 0; i < c.wrt.size(); ++i) {
    EXPECT_TRUE(all_close((*grads)[i], load(c.name, "grad." + file_of(c.wrt[i])), kTol, &why))
        << c.wrt[i] << ": " << why;
  }
}

/// In f64, autodiff's gradients against central differences of sum(output · seed).
TEST_P(TernaryLossParity, FiniteDifferencesF64) {
  const Case& c = GetParam();
  std::vector<Tensor> inputs = inputs_of(c, /*f64=*/true);
  Tensor seed = to_f64(load(c.name, "seed"));
  auto model = build(c, inputs);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto grads = testing::input_gradients(*model, c.wrt, inputs, seed);
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  const std::vector<std::string> names = names_of(c);
  std::vector<size_t> positions;
  for (const std::string& w : c.wrt) {
    positions.push_back(static_cast<size_t>(std::find(names.begin(), names.end(), w) - names.begin()));
  }
  testing::expect_input_gradients_match_finite_differences(*model, inputs, positions, *grads, seed);
}

const std::pair<const char*, Reduction> kReductions[] = {
    {"mean", Reduction::Mean}, {"sum", Reduction::Sum}, {"none", Reduction::None}};

std::vector<Case> cases() {
  const std::vector<std::string> pair = {"x2", "y"};
  const std::vector<std::string> triplet = {"positive", "negative"};
  std::vector<Case> out;
  for (auto [suffix, r] : kReductions) {
    std::string s = suffix;
    out.push_back({"loss_margin_ranking_" + s, pair, {"x", "x2"}, [r] { return MarginRankingLoss(r); }});
    out.push_back({"loss_cosine_embedding_" + s, pair, {"x", "x2"},
                   [r] { return CosineEmbeddingLoss(r); }});
    out.push_back({"loss_triplet_" + s, triplet, {"x", "positive", "negative"},
                   [r] { return TripletMarginLoss({.reduction = r}); }});
  }
  out.push_back({"loss_margin_ranking_margin0.5_mean", pair, {"x", "x2"},
                 [] { return MarginRankingLoss(Reduction::Mean, 0.5); }});
  out.push_back({"loss_cosine_embedding_margin0.2_sum", pair, {"x", "x2"},
                 [] { return CosineEmbeddingLoss(Reduction::Sum, 0.2); }});
  out.push_back({"loss_triplet_swap_margin2_mean", triplet, {"x", "positive", "negative"},
                 [] { return TripletMarginLoss({.margin = 2.0, .swap = true}); }});
  out.push_back({"loss_triplet_p1_sum", triplet, {"x", "positive", "negative"},
                 [] { return TripletMarginLoss({.reduction = Reduction::Sum, .p = 1.0}); }});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return testing::test_name(info.param.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, TernaryLossParity, ::testing::ValuesIn(cases()), case_name);

// ---- User errors, messages pinned.

std::string error_of(const FlowBuilder& b, const std::vector<InputSpec>& inputs) {
  return testing::build_error(b, inputs);
}

FlowBuilder with_extras(ModulePtr loss) {
  return FlowBuilder::from(Identity()).input({"b", "c"}).through(std::move(loss)).uses({"b", "c"});
}

TEST(TernaryLossErrors, MarginRankingTypes) {
  EXPECT_NE(error_of(with_extras(MarginRankingLoss()),
                     {{"x", f32({4})}, {"b", f32({4})}, {"c", f32({3})}})
                .find("error: margin_ranking: the target f32[3] must have the x1's type f32[4] "
                      "(weft does not broadcast losses)"),
            std::string::npos);
}

TEST(TernaryLossErrors, CosineEmbeddingRank) {
  EXPECT_NE(error_of(with_extras(CosineEmbeddingLoss()),
                     {{"x", f32({4})}, {"b", f32({4})}, {"c", f32({4})}})
                .find("error: cosine_embedding: x1 and x2 must be [batch, features], got f32[4]"),
            std::string::npos);
}

TEST(TernaryLossErrors, CosineEmbeddingTarget) {
  EXPECT_NE(error_of(with_extras(CosineEmbeddingLoss()),
                     {{"x", f32({3, 4})}, {"b", f32({3, 4})}, {"c", i64({3})}})
                .find("error: cosine_embedding: the target must be f32[3] (1 or -1 per row of "
                      "x1 f32[3,4]), got i64[3]"),
            std::string::npos);
}

TEST(TernaryLossErrors, TripletIntegerAnchor) {
  EXPECT_NE(error_of(with_extras(TripletMarginLoss()),
                     {{"x", i64({3, 4})}, {"b", i64({3, 4})}, {"c", i64({3, 4})}})
                .find("error: triplet_margin: the anchor must be a float tensor, got i64[3,4]"),
            std::string::npos);
}

TEST(TernaryLossErrors, TripletPPositive) {
  EXPECT_NE(error_of(with_extras(TripletMarginLoss({.p = 0})),
                     {{"x", f32({3, 4})}, {"b", f32({3, 4})}, {"c", f32({3, 4})}})
                .find("error: triplet_margin: p must be > 0, got 0.0"),
            std::string::npos);
}

TEST(TernaryLossErrors, ThreeInputsNeeded) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(Identity()).input({"b"}).through(MarginRankingLoss()).uses({"b"});
  EXPECT_EQ(error_of(b, {{"x", f32({3})}, {"b", f32({3})}}),
            kFile + ":" + std::to_string(line) +
                ":62: error: MarginRankingLoss(mean, margin=0.0) takes three inputs, x1 (the "
                "stream), then x2 and the target from uses({...}), but 2 were given [in "
                "MarginRankingLoss(mean, margin=0.0)]");
}

}  // namespace losses_ternary_test
}  // namespace
}  // namespace weft

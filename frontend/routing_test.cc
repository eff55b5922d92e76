// FlowBuilder::gate and ::route (frontend/routing.h): what they compute per sample, the
// parameter names, gradients against finite differences (gate) and only through the
// branch each sample took (route), and the shape errors naming the builder call.
#include "frontend/routing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/grad.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/gradcheck.h"
#include "frontend/testing/run_model.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

FlowPtr twice() { return *FlowBuilder::from(Identity()).also(Identity()).build(); }

TEST(Gate, IsTheSoftmaxWeightedSumOfTheExperts) {
  // The router is the identity (the two features are the logits); expert 0 maps x to 2x,
  // expert 1 is the identity: y = p0·2x + p1·x, p = softmax(x), per sample.
  auto model = FlowBuilder::from(Identity()).gate(Identity(), {twice(), Identity()}).build({{"x", f32({2, 2})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_TRUE(model->parameters().empty());
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({2, 2}, {0.5f, -1.0f, 2.0f, 0.0f})}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  const std::vector<double> got = run->outputs[0].to_doubles();
  const double a0 = 1 / (1 + std::exp(-1.5)), a1 = 1 - a0;  // sample 0: logits 0.5, -1
  const double b0 = 1 / (1 + std::exp(-2.0)), b1 = 1 - b0;  // sample 1: logits 2, 0
  EXPECT_NEAR(got[0], a0 * 1.0 + a1 * 0.5, 1e-6);
  EXPECT_NEAR(got[1], a0 * -2.0 + a1 * -1.0, 1e-6);
  EXPECT_NEAR(got[2], b0 * 4.0 + b1 * 2.0, 1e-6);
  EXPECT_NEAR(got[3], 0.0, 1e-6);
}

TEST(Gate, ParameterNamesAreThoseOfRouterAndExpertsModuleLists) {
  auto expert = [] { return *FlowBuilder::from(Linear(4, 4)).through(GELU()).build(); };
  auto model = FlowBuilder::from(Linear(4, 4))
                   .gate(Linear(4, 2), {expert(), expert()})
                   .through(Linear(4, 3))
                   .build({{"x", f32({5, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.router.weight", "1.router.bias",
                                             "1.experts.0.0.weight", "1.experts.0.0.bias",
                                             "1.experts.1.0.weight", "1.experts.1.0.bias", "2.weight",
                                             "2.bias"}));
}

TEST(Gate, WeightsBroadcastOverTheAxesAfterTheRoutersOwn) {
  // Router [B, E] over experts giving [B, C, H, W]: each sample's whole map is weighted.
  auto model = FlowBuilder::from(Identity())
                   .gate(*FlowBuilder::from(Flatten()).through(Linear(8, 2)).build(), {twice(), Identity()})
                   .build({{"x", f32({3, 2, 2, 2})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(model->graph().type(model->graph().outputs()[0]), f32({3, 2, 2, 2}));
}

TEST(Route, EachSampleTakesItsSelectorsArgmaxBranch) {
  // Selector: the identity on two features. Sample 0 scores (0.5, -1): branch 0, 2x;
  // sample 1 scores (-3, 1): branch 1, x; sample 2 ties (1, 1): the first, branch 0.
  auto model = FlowBuilder::from(Identity()).route(Identity(), {twice(), Identity()}).build({{"x", f32({3, 2})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({3, 2}, {0.5f, -1, -3, 1, 1, 1})}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>{1, -2, -3, 1, 2, 2}));
}

TEST(Route, ABranchNotTakenCannotLeakAnInfinityIntoTheResult) {
  // Branch 1 overflows to infinity on this sample, which takes branch 0 (scores 5, 1).
  auto model = FlowBuilder::from(Identity()).route(Identity(), {Identity(), Linear(2, 2)}).build({{"x", f32({1, 2})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({1, 2}, {5, 1})},
                                {{"1.branches.1.weight", Tensor::from_vector<float>({2, 2}, {3e38f, 3e38f, 3e38f, 3e38f})},
                                 {"1.branches.1.bias", Tensor::from_vector<float>({2}, {0, 0})}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>{5, 1}));
}

TEST(Gate, GradientsMatchFiniteDifferences) {
  auto model = FlowBuilder::from(Linear(3, 3))
                   .gate(Linear(3, 2), {*FlowBuilder::from(Linear(3, 3)).through(Tanh()).build(), Linear(3, 3)})
                   .build({{"x", f64({4, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<double> xv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(1.7 * static_cast<double>(i));
  testing::expect_gradients_match_finite_differences(*model, Tensor::from_doubles(DType::f64, {4, 3}, xv), 1e-6);
}

TEST(Route, GradientsReachOnlyTheBranchEachSampleTook) {
  // Every sample's selector scores favour branch 0 (a fixed bias), so branch 1 and the
  // selector get no gradient; branch 0's gradient matches finite differences.
  auto model = FlowBuilder::from(Identity())
                   .route(Linear(3, 2), {Linear(3, 3), Linear(3, 3)})
                   .build({{"x", f64({4, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const Graph& g = model->graph();
  std::vector<double> xv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.1 * std::cos(static_cast<double>(i));
  const Tensor x = Tensor::from_doubles(DType::f64, {4, 3}, xv);
  std::vector<std::string> wrt;
  std::vector<Tensor> inputs = {x};
  for (const ParamInfo& p : model->parameters()) {
    wrt.push_back(p.name);
    const Type& t = g.type(p.value);
    std::vector<double> v(static_cast<size_t>(t.numel()), 0.3);
    if (p.name == "1.selector.bias") v = {5.0, -5.0};
    inputs.push_back(Tensor::from_doubles(t.dtype, t.shape, v));
  }
  ASSERT_EQ(wrt, (std::vector<std::string>{"1.selector.weight", "1.selector.bias", "1.branches.0.weight",
                                           "1.branches.0.bias", "1.branches.1.weight", "1.branches.1.bias"}));
  inputs.push_back(Tensor::from_doubles(DType::f64, {4, 3}, std::vector<double>(12, 1.0)));
  StatusOr<Graph> grad = gradient_graph(g, 0, wrt, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  StatusOr<reference::RunResult> r = reference::run(*grad, inputs);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto all_zero = [](const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.get_double(i) != 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(all_zero(r->outputs[0]) && all_zero(r->outputs[1])) << "the selector";
  EXPECT_FALSE(all_zero(r->outputs[2]));
  EXPECT_EQ(r->outputs[3].to_doubles(), (std::vector<double>{4, 4, 4}));  // 4 samples, seed 1
  EXPECT_TRUE(all_zero(r->outputs[4]) && all_zero(r->outputs[5])) << "branch 1, taken by no sample";
}

TEST(Route, GradientsMatchFiniteDifferencesAwayFromTies) {
  auto model = FlowBuilder::from(Linear(3, 3))
                   .route(Linear(3, 3), {Linear(3, 2), *FlowBuilder::from(Linear(3, 2)).through(Tanh()).build(),
                                         Linear(3, 2)})
                   .build({{"x", f64({5, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<double> xv(15);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(2.3 * static_cast<double>(i) + 0.4);
  testing::expect_gradients_match_finite_differences(*model, Tensor::from_doubles(DType::f64, {5, 3}, xv), 1e-6);
}

TEST(Routing, ShapeErrorsNameTheBuilderCallAndBothShapes) {
  auto bad_router = FlowBuilder::from(Identity()).gate(Linear(2, 3), {Identity(), Identity()}).build({{"x", f32({1, 2})}});
  ASSERT_FALSE(bad_router.ok());
  EXPECT_NE(bad_router.error().to_string().find("routing_test.cc:"), std::string::npos) << bad_router.error().to_string();
  EXPECT_EQ(bad_router.error().message,
            "gate(2 experts): the router's output f32[1,3] must be floating point with 2 features on its last "
            "axis, one per expert");

  auto mismatched = FlowBuilder::from(Identity()).route(Linear(4, 2), {Linear(4, 3), Linear(4, 5)}).build({{"x", f32({2, 4})}});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.error().message,
            "route(2 branches): branch 1's output f32[2,5] differs from branch 0's f32[2,3]; every branch must "
            "give the same type");

  // A per-token router [B, T, E] cannot weigh experts whose output lost the T axis.
  auto leading = FlowBuilder::from(Identity())
                     .gate(Linear(4, 2), {*FlowBuilder::from(Flatten()).build(), *FlowBuilder::from(Flatten()).build()})
                     .build({{"x", f32({2, 3, 4})}});
  ASSERT_FALSE(leading.ok());
  EXPECT_EQ(leading.error().message,
            "gate(2 experts): the router's output f32[2,3,2] weighs expert 0's output f32[2,12] per sample, so "
            "its leading axes [2,3] must lead that output's shape, in the same dtype");

  auto integer = FlowBuilder::from(Identity()).route(Identity(), {Identity(), Identity()}).build({{"x", i64({2, 2})}});
  ASSERT_FALSE(integer.ok());
  EXPECT_EQ(integer.error().message,
            "route(2 branches): the selector's output i64[2,2] must be floating point with 2 features on its last "
            "axis, one per branch");

  auto none = FlowBuilder::from(Identity()).route(Identity(), {}).build({{"x", f32({2, 4})}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "route(0 branches) needs at least one branch");
}

}  // namespace
}  // namespace weft

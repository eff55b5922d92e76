// FlowBuilder::map (frontend/map.h): slices as extra batch rows and back, on [B, D] and
// [B, T, D], parameter names, gradients against finite differences, errors.
#include "frontend/map.h"

#include <gtest/gtest.h>

#include <cmath>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/gradcheck.h"
#include "frontend/testing/run_model.h"

namespace weft {
namespace {

// The body Linear(2, 1) with weight (1, 10) and bias 0.5: y = a + 10·b + 0.5 per slice.
std::map<std::string, Tensor> weights(const std::string& prefix) {
  return {{prefix + "weight", Tensor::from_vector<float>({1, 2}, {1, 10})},
          {prefix + "bias", Tensor::from_vector<float>({1}, {0.5f})}};
}

TEST(Map, SlicesOfTheLastAxisAreMappedAsRowsAndPutBackInOrder) {
  auto model = FlowBuilder::from(Identity()).map(Linear(2, 1)).slices(3).build({{"x", f32({2, 6})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  ASSERT_EQ(model->parameters().size(), 2u);
  EXPECT_EQ(model->parameters()[0].name, "1.weight");  // as through(Linear(2, 1)) would be
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({2, 6}, {1, 2, 3, 4, 5, 6, 0, 1, 1, 0, 2, 2})},
                                weights("1."));
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].type(), f32({2, 3}));
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>{21.5, 43.5, 65.5, 10.5, 1.5, 22.5}));
}

TEST(Map, SlicesOfASequencesFeatures) {
  // [B=1, T=2, D=4] in 2 slices: each token's features (a, b | c, d) -> (a+10b, c+10d).
  auto model = FlowBuilder::from(Identity()).map(Linear(2, 1)).slices(2).build({{"x", f32({1, 2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})},
                                weights("1."));
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].type(), f32({1, 2, 2}));
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>{21.5, 43.5, 65.5, 87.5}));
}

TEST(Map, ABodyThatMixesTheMiddleAxisSeesEachSlicesOwnSequence) {
  // [B=2, T=2, D=4] in 2 slices, body Softmax over axis 1 (the T axis of each slice):
  // output[b, t, k·2 + j] = softmax over t of x[b, :, k·2 + j], for slice k.
  auto model = FlowBuilder::from(Identity()).map(Softmax(1)).slices(2).build({{"x", f32({2, 2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) - 0.5f * static_cast<float>(i / 5);
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({2, 2, 4}, x)}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  const std::vector<double> got = run->outputs[0].to_doubles();
  for (int b = 0; b < 2; ++b) {
    for (int d = 0; d < 4; ++d) {  // feature d of slice d / 2: a softmax over t, per (b, d)
      const double a0 = x[static_cast<size_t>(b * 8 + d)], a1 = x[static_cast<size_t>(b * 8 + 4 + d)];
      const double p0 = 1 / (1 + std::exp(a1 - a0));
      EXPECT_NEAR(got[static_cast<size_t>(b * 8 + d)], p0, 1e-6) << b << "," << d;
      EXPECT_NEAR(got[static_cast<size_t>(b * 8 + 4 + d)], 1 - p0, 1e-6) << b << "," << d;
    }
  }
}

TEST(Map, ALabelledBodyKeepsItsLabel) {
  auto body = *FlowBuilder::from(Linear(2, 1)).label("enc").build();
  auto model = FlowBuilder::from(Identity()).map(body).slices(2).build({{"x", f32({3, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(model->parameters()[0].name, "1.enc.0.weight");
  EXPECT_EQ(model->parameters()[0].label_path, "enc");
}

TEST(Map, BatchedIsTheBodyOnTheWholeStream) {
  auto mapped = FlowBuilder::from(Linear(3, 4)).map(Linear(4, 2)).batched().build({{"x", f32({5, 3})}});
  auto through = FlowBuilder::from(Linear(3, 4)).through(Linear(4, 2)).build({{"x", f32({5, 3})}});
  ASSERT_TRUE(mapped.ok() && through.ok());
  EXPECT_EQ(mapped->structural_hash(), through->structural_hash());
}

TEST(Map, GradientsMatchFiniteDifferences) {
  auto model = FlowBuilder::from(Linear(3, 6))
                   .map(*FlowBuilder::from(Linear(2, 3)).through(Tanh()).build())
                   .slices(3)
                   .build({{"x", f64({2, 2, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<double> xv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(0.9 * static_cast<double>(i));
  testing::expect_gradients_match_finite_differences(*model, Tensor::from_doubles(DType::f64, {2, 2, 3}, xv), 1e-6);
}

TEST(Map, Errors) {
  auto uneven = FlowBuilder::from(Identity()).map(Linear(2, 1)).slices(4).build({{"x", f32({2, 6})}});
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.error().to_string().find("map_test.cc:"), std::string::npos) << uneven.error().to_string();
  EXPECT_EQ(uneven.error().message,
            "map(Linear(2->1)).slices(4) splits the last axis of [batch, ..., features] into 4 equal slices; the "
            "stream is f32[2,6]");
  auto none = FlowBuilder::from(Identity()).map(Linear(2, 1)).slices(0).build({{"x", f32({2, 6})}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "map(Linear(2->1)).slices(0): the number of slices must be at least 1");
  auto flat = FlowBuilder::from(Identity()).map(Identity()).slices(2).build({{"x", f32({6})}});
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.error().message,
            "map(Identity).slices(2) splits the last axis of [batch, ..., features] into 2 equal slices; the "
            "stream is f32[6]");
  auto rows = FlowBuilder::from(Identity()).map(Flatten(0)).slices(2).build({{"x", f32({2, 4})}});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().message,
            "map(Flatten(0, -1)).slices(2): the body maps the slices f32[4,2] to f32[8]; it must keep their rank "
            "and rows");
}

}  // namespace
}  // namespace weft

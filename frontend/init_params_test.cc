#include "frontend/init_params.h"

#include <gtest/gtest.h>

#include <cmath>

#include "frontend/flow.h"
#include "frontend/modules.h"

namespace weft {
namespace {

TEST(InitParams, FollowsEachParametersInitializer) {
  auto model = FlowBuilder::from(Linear(16, 8)).through(LayerNorm(8)).build({{"x", f32({2, 16})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto values = initialize_parameter_map(*model, /*seed=*/1);
  ASSERT_TRUE(values.ok()) << values.error().to_string();
  ASSERT_EQ(values->size(), 4u);
  const Tensor& w = values->at("0.weight");
  EXPECT_EQ(w.type().to_string(), "f32[8,16]");
  double max_abs = 0;
  for (double v : w.to_doubles()) max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, 0.25f);  // Linear: U(±1/sqrt(16))
  EXPECT_GT(max_abs, 0.15);
  for (double v : values->at("1.weight").to_doubles()) EXPECT_EQ(v, 1.0);
  for (double v : values->at("1.bias").to_doubles()) EXPECT_EQ(v, 0.0);
}

TEST(InitParams, DeterministicAndSeeded) {
  auto model = FlowBuilder::from(Linear(4, 4)).build({{"x", f32({1, 4})}});
  ASSERT_TRUE(model.ok());
  auto a = initialize_parameters(*model, 5), b = initialize_parameters(*model, 5),
       c = initialize_parameters(*model, 6);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)[0], (*b)[0]);
  EXPECT_FALSE((*a)[0] == (*c)[0]);
}

TEST(InitParams, AddingAParameterLeavesTheOthersUnchanged) {
  auto small = FlowBuilder::from(Linear(4, 4)).through(Linear(4, 4)).build({{"x", f32({1, 4})}});
  auto big = FlowBuilder::from(Linear(4, 4))
                 .through(Linear(4, 4))
                 .through(Linear(4, 3))
                 .build({{"x", f32({1, 4})}});
  ASSERT_TRUE(small.ok() && big.ok());
  auto a = initialize_parameter_map(*small, 9);
  auto b = initialize_parameter_map(*big, 9);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& [name, t] : *a) EXPECT_EQ(t, b->at(name)) << name;
  // Two parameters of one shape and initializer still differ: their streams do.
  EXPECT_FALSE(a->at("0.weight") == a->at("1.weight"));
}

TEST(InitParams, StreamIsFnv1a) {
  EXPECT_EQ(parameter_stream(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(parameter_stream("a"), 0xaf63dc4c8601ec8cull);
}

TEST(InitParams, ErrorNamesTheParameter) {
  int line = __LINE__ + 1;
  auto model = FlowBuilder::from(LearnedParameter({4}, Initializer::orthogonal()))
                   .build({{"x", f32({2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto values = initialize_parameters(*model, 0);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().to_string(),
            "frontend/init_params_test.cc:" + std::to_string(line) +
                ":33: error: cannot initialize parameter '0.weight': orthogonal(1.0) for "
                "f32[4]: orthogonal initialization needs at least 2 dimensions [in "
                "LearnedParameter([4])]");
}

}  // namespace
}  // namespace weft

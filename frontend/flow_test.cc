#include "frontend/flow.h"

#include <gtest/gtest.h>

#include "frontend/modules.h"
#include "ir/text.h"

namespace weft {
namespace {

const std::string kFile = "frontend/flow_test.cc";

std::string at(int line) { return kFile + ":" + std::to_string(line); }

std::vector<std::string> param_names(const Model& m) {
  std::vector<std::string> names;
  for (const ParamInfo& p : m.parameters()) names.push_back(p.name);
  return names;
}

TEST(Flow, BuildsTheReadmeModel) {
  auto model = FlowBuilder::from(Linear(8, 16))
                   .through(GELU())
                   .tag("hidden")
                   .through(LayerNorm(16))
                   .also(Linear(16, 16))
                   .through(Linear(16, 4))
                   .build({{"x", f32({2, 8})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "3.weight",
                                      "3.bias", "4.weight", "4.bias"}));
  EXPECT_EQ(model->parameter_count(), 8 * 16 + 16 + 16 + 16 + 16 * 16 + 16 + 16 * 4 + 4);
  const Graph& g = model->graph();
  EXPECT_EQ(g.type(g.outputs()[0]).to_string(), "f32[2,4]");
  // Every node points at the builder call that placed its module.
  for (const Node& n : g.nodes()) {
    EXPECT_EQ(n.loc.file, kFile);
    EXPECT_GT(n.loc.line, 0);
    EXPECT_FALSE(n.loc.path.empty()) << op_name(n.op);
  }
}

TEST(Flow, PrintsIrWithBuilderPaths) {
  int line = __LINE__ + 1;
  auto model = FlowBuilder::from(Linear(3, 2)).through(ReLU()).build({{"x", f32({4, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::string text = print_graph(model->graph());
  EXPECT_NE(text.find("%0 = transpose(%0.weight) {perm=[1, 0]} : f32[3,2] loc(\"" + kFile +
                      "\":" + std::to_string(line)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"Linear(3->2)\")"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ReLU\")"), std::string::npos) << text;
}

TEST(Flow, SharedModuleSharesParameters) {
  auto shared = Linear(4, 4);
  auto model = FlowBuilder::from(shared).through(Tanh()).through(shared).build({{"x", f32({1, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model), (std::vector<std::string>{"0.weight", "0.bias"}));
}

TEST(Flow, SplitMergeForkUsesAndLabels) {
  auto encoder = FlowBuilder::from(Linear(4, 8)).through(ReLU()).label("encoder").build();
  ASSERT_TRUE(encoder.ok()) << encoder.error().to_string();
  auto model = FlowBuilder::from(*encoder)
                   .fork(Linear(8, 8))
                   .tag("side")
                   .split({Linear(8, 8), Linear(8, 8)})
                   .tag_group("heads")
                   .merge(Merge::add())
                   .split({Identity(), Identity()})
                   .merge(Merge::concat(1))
                   .through(Linear(16, 8))
                   .build({{"x", f32({2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model),
            (std::vector<std::string>{"encoder.0.weight", "encoder.0.bias", "1.weight", "1.bias",
                                      "2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias",
                                      "4.weight", "4.bias"}));
  EXPECT_EQ(model->label_paths(), std::vector<std::string>{"encoder"});
  auto in_encoder = model->parameters_at("encoder");
  ASSERT_TRUE(in_encoder.ok());
  EXPECT_EQ(in_encoder->size(), 2u);
  EXPECT_EQ(model->parameters_at("decoder").error().to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: encoder");
}

TEST(Flow, StructuralErrorsNameTheCall) {
  int line = __LINE__ + 1;
  auto never_merged = FlowBuilder::from(Linear(2, 2)).split({ReLU(), Tanh()}).build();
  EXPECT_EQ(never_merged.error().to_string(),
            at(line) + ":60: error: split(...) is never merged: merge(...) must follow it "
                       "(after an optional tag_group)");

  line = __LINE__ + 1;
  auto unknown = FlowBuilder::from(Linear(2, 2)).through(Linear(2, 2)).uses({"ghost"}).build();
  EXPECT_EQ(unknown.error().to_string(),
            at(line) + ":76: error: uses of unknown tag 'ghost'; tags defined before this call: "
                       "(none)");

  line = __LINE__ + 1;
  auto dup = FlowBuilder::from(Linear(2, 2)).tag("a").through(ReLU()).tag("a").build();
  EXPECT_EQ(dup.error().to_string(),
            at(line) + ":74: error: duplicate tag 'a': already defined at " + at(line));

  line = __LINE__ + 1;
  auto dotted = FlowBuilder::from(Linear(2, 2)).label("enc.oder").build();
  EXPECT_EQ(dotted.error().to_string(),
            at(line) + ":54: error: label 'enc.oder' contains a dot; dots separate the levels "
                       "of a label path (encoder.scan), so a label cannot contain one");
}

TEST(Flow, ShapeErrorsNameFileLinePathOpAndShapes) {
  int line = __LINE__ + 2;
  auto model = FlowBuilder::from(Linear(4, 8))
                   .through(Linear(6, 2))
                   .build({{"x", f32({2, 4})}});
  EXPECT_EQ(model.error().to_string(),
            at(line) + ":28: error: Linear(6->2) expects inputs whose last dim is 6, got "
                       "f32[2,8] [in Linear(6->2)]");
}

}  // namespace
}  // namespace weft

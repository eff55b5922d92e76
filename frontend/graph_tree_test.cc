// The graph tree of a built model: label paths, parameters_at, subgraph, freeze/thaw,
// the structural hash, and drawings.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "frontend/draw.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "ir/text_util.h"

namespace weft {
namespace {

// encoder { 0: Linear, scan { 0: Linear, 1: ReLU }, 2: LayerNorm } then a Linear head.
StatusOr<Model> nested_model(int64_t width = 8, BuildOptions options = {}) {
  auto scan = FlowBuilder::from(Linear(width, width)).through(ReLU()).tag("inner").label("scan").build();
  if (!scan.ok()) return scan.error();
  auto encoder = FlowBuilder::from(Linear(4, width))
                     .through(*scan)
                     .through(LayerNorm(width))
                     .label("encoder")
                     .build();
  if (!encoder.ok()) return encoder.error();
  return FlowBuilder::from(*encoder).tag("features").through(Linear(width, 2)).build(
      {{"x", f32({3, 4})}}, options);
}

std::vector<std::string> names(const std::vector<const ParamInfo*>& params) {
  std::vector<std::string> out;
  for (const ParamInfo* p : params) out.push_back(p->name);
  return out;
}

TEST(GraphTree, LabelPathsAndParameters) {
  auto model = nested_model();
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(model->label_paths(), (std::vector<std::string>{"encoder", "encoder.scan"}));
  EXPECT_TRUE(model->validate_path("encoder.scan").ok());
  EXPECT_TRUE(model->validate_path("").ok());
  EXPECT_EQ(model->validate_path("encoder.scna").error().to_string(),
            "error: no subgraph labelled 'encoder.scna'; label paths in this model: encoder, "
            "encoder.scan");
  EXPECT_EQ(names(*model->parameters_at("encoder.scan")),
            (std::vector<std::string>{"encoder.scan.0.weight", "encoder.scan.0.bias"}));
  EXPECT_EQ(names(*model->parameters_at("encoder")),
            (std::vector<std::string>{"encoder.0.weight", "encoder.0.bias", "encoder.scan.0.weight",
                                      "encoder.scan.0.bias", "encoder.2.weight", "encoder.2.bias"}));
  EXPECT_EQ(model->parameters_at("").value().size(), 8u);
  // The scan's nodes: transpose, matmul, add (Linear) and relu.
  auto nodes = model->subgraph("encoder.scan");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ(model->graph().node(nodes->back()).op, Op::Relu);
}

TEST(GraphTree, FreezeAndThaw) {
  auto model = nested_model();
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(model->freeze("encoder").ok());
  EXPECT_TRUE(model->is_frozen("encoder.scan.0.weight"));
  EXPECT_TRUE(model->is_frozen("encoder.2.bias"));
  EXPECT_FALSE(model->is_frozen("1.weight"));
  ASSERT_TRUE(model->thaw("encoder.scan").ok());
  EXPECT_FALSE(model->is_frozen("encoder.scan.0.weight"));
  EXPECT_TRUE(model->is_frozen("encoder.0.weight"));
  EXPECT_EQ(model->freeze("decoder").error().to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: encoder, "
            "encoder.scan");
}

TEST(GraphTree, StructuralHashIgnoresValuesButNotArchitecture) {
  BuildOptions other_seed;
  other_seed.seed = 42;
  uint64_t h = nested_model(8)->structural_hash();
  EXPECT_EQ(h, nested_model(8, other_seed)->structural_hash());
  EXPECT_NE(h, nested_model(16)->structural_hash());
  // Eval mode changes nothing for this model (no BatchNorm/Dropout).
  BuildOptions eval;
  eval.training = false;
  EXPECT_EQ(h, nested_model(8, eval)->structural_hash());
  // A renamed label renames parameters: a different checkpoint layout.
  auto renamed = FlowBuilder::from(Linear(4, 8)).label("enc").build({{"x", f32({3, 4})}});
  auto original = FlowBuilder::from(Linear(4, 8)).label("encoder").build({{"x", f32({3, 4})}});
  EXPECT_NE(renamed->structural_hash(), original->structural_hash());
}

// A subgraph's structure is its own nodes with values renumbered: the same encoder after
// other layers, in a model with another label name around it and another head, prints
// and hashes alike; another activation does not.
TEST(GraphTree, SubgraphStructureIsIndependentOfWhereItSits) {
  auto encoder = [](ModulePtr activation) {
    return *FlowBuilder::from(Linear(4, 8)).through(activation).through(Linear(8, 8)).label("encoder").build();
  };
  auto alone = FlowBuilder::from(encoder(ReLU())).through(Linear(8, 2)).build({{"x", f32({3, 4})}});
  auto inside = FlowBuilder::from(Linear(4, 4))
                    .through(Tanh())
                    .through(encoder(ReLU()))
                    .through(Linear(8, 3))
                    .build({{"x", f32({3, 4})}});
  auto tanh = FlowBuilder::from(encoder(Tanh())).through(Linear(8, 2)).build({{"x", f32({3, 4})}});
  ASSERT_TRUE(alone.ok() && inside.ok() && tanh.ok());
  const std::string expected =
      "graph @subgraph(%in0: f32[8,4] {param}, %in1: f32[3,4], %in2: f32[8] {param}, "
      "%in3: f32[8,8] {param}, %in4: f32[8] {param}) -> () {\n"
      "  %0 = transpose(%in0) {perm=[1, 0]} : f32[4,8]\n"
      "  %1 = matmul(%in1, %0) : f32[3,8]\n"
      "  %2 = add(%1, %in2) : f32[3,8]\n"
      "  %3 = relu(%2) : f32[3,8]\n"
      "  %4 = transpose(%in3) {perm=[1, 0]} : f32[8,8]\n"
      "  %5 = matmul(%3, %4) : f32[3,8]\n"
      "  %6 = add(%5, %in4) : f32[3,8]\n"
      "  return\n"
      "}\n";
  EXPECT_EQ(*alone->structure("encoder"), expected);
  EXPECT_EQ(*inside->structure("encoder"), expected);
  EXPECT_EQ(*alone->structural_hash("encoder"), *inside->structural_hash("encoder"));
  EXPECT_NE(alone->structural_hash(), inside->structural_hash());
  EXPECT_NE(*alone->structural_hash("encoder"), *tanh->structural_hash("encoder"));
  EXPECT_EQ(alone->structural_hash(), fnv1a64(*alone->structure("")));
  EXPECT_EQ(alone->structure("decoder").error().message,
            "no subgraph labelled 'decoder'; label paths in this model: encoder");
}

TEST(GraphTree, DotHasClustersTagsAndShapes) {
  auto model = nested_model();
  ASSERT_TRUE(model.ok());
  std::string dot = model_to_dot(*model);
  EXPECT_NE(dot.find("subgraph \"cluster_encoder\" {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph \"cluster_encoder_scan\" {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"scan\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"ReLU\\nrelu\\n#encoder.scan.inner\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("in0 [shape=ellipse, label=\"x\\nf32[3,4]\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("#features"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"[3,8]\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"Linear(4->8)\\nmatmul\"]"), std::string::npos) << dot;
}

TEST(GraphTree, RendersSvgOrNamesGraphviz) {
  auto model = nested_model();
  ASSERT_TRUE(model.ok());
  std::string dir = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  std::string svg = dir + "/model.svg";
  Status s = render_svg(model_to_dot(*model), svg);
  ASSERT_TRUE(s.ok()) << s.to_string();  // tools/setup installs graphviz
  std::ifstream f(svg);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);

  // The path goes to dot as it is, never through a shell: a quote made the render fail,
  // and `';CMD;'` ran CMD.
  const std::string odd = dir + "/it's a ';touch injected;'.svg";
  s = render_svg(model_to_dot(*model), odd);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(std::ifstream(odd).good());
  EXPECT_FALSE(std::ifstream("injected").good());
  EXPECT_EQ(render_svg(model_to_dot(*model), "").to_string(),
            "error: cannot render: the file name is empty; give the path of an .svg file");

  std::string path = std::getenv("PATH");
  setenv("PATH", "/nonexistent", 1);
  s = render_svg(model_to_dot(*model), svg);
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(s.to_string(), "error: cannot render '" + svg +
                               "': graphviz's `dot` is not on PATH; install the Debian package "
                               "`graphviz` (tools/setup installs it)");
}

}  // namespace
}  // namespace weft

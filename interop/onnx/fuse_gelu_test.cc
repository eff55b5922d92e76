// The importer's GELU fusion (fuse_gelu.h): the spellings exporters write become one
// weft gelu with the same values; a spelling whose intermediate values something else
// reads, or whose constants are not GELU's, stays as written.
#include "interop/onnx/fuse_gelu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "interop/onnx/testing/onnx_builder.h"
#include "ir/text.h"

namespace weft::onnx_io {
namespace {
namespace fuse_gelu_test {  // this file's names, apart in its package's unity test

const std::vector<float> kX = {-3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 2.0f};

Tensor scalar(double v) { return Tensor::scalar(DType::f32, v); }

void constant_node(OnnxBuilder& b, const std::string& name, double v) {
  onnx::AttributeProto* a = b.node("Constant", {}, {name}).add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  tensor_to_proto(scalar(v), a->mutable_t());
}

// torch.onnx.export's order: Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5),
// its constants initializers.
OnnxBuilder torch_spelling(double root2 = std::sqrt(2.0)) {
  OnnxBuilder b;
  b.input("x", DType::f32, {6});
  b.initializer("root2", scalar(root2));
  b.initializer("one", scalar(1.0));
  b.initializer("half", scalar(0.5));
  b.node("Div", {"x", "root2"}, {"t"});
  b.node("Erf", {"t"}, {"e"});
  b.node("Add", {"e", "one"}, {"a"});
  b.node("Mul", {"x", "a"}, {"m"});
  b.node("Mul", {"m", "half"}, {"y"}, "gelu_out");
  b.output("y", DType::f32);
  return b;
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

void expect_gelu_values(const OnnxBuilder& b) {
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {Tensor::from_vector<float>({6}, kX)});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  for (size_t i = 0; i < kX.size(); ++i) {
    const double x = kX[i];
    EXPECT_NEAR((*y)[0].get_double(static_cast<int64_t>(i)), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-6);
  }
}

TEST(FuseGelu, TorchsSpellingBecomesOneGelu) {
  OnnxBuilder b = torch_spelling();
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(count(g->graph, Op::Gelu), 1) << print_graph(g->graph);
  EXPECT_EQ(count(g->graph, Op::Erf), 0);
  EXPECT_TRUE(g->params.empty());  // the constants fused away are never parameters
  expect_gelu_values(b);
}

TEST(FuseGelu, WeftsExporterSpellingWithConstantNodesBecomesOneGelu) {
  // Mul(x, 1/√2) → Erf;  Mul(0.5, x);  Add(1, erf);  Mul(both), operands swapped.
  OnnxBuilder b;
  b.input("x", DType::f32, {6});
  constant_node(b, "c", std::sqrt(0.5));
  constant_node(b, "half", 0.5);
  constant_node(b, "one", 1.0);
  b.node("Mul", {"x", "c"}, {"t"});
  b.node("Erf", {"t"}, {"e"});
  b.node("Mul", {"half", "x"}, {"h"});
  b.node("Add", {"one", "e"}, {"a"});
  b.node("Mul", {"h", "a"}, {"y"});
  b.output("y", DType::f32);
  const std::map<int, GeluSpan> spans = find_gelu_spans(b.model().graph());
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans.begin()->first, 7);
  EXPECT_EQ(spans.begin()->second.x, "x");
  EXPECT_EQ(spans.begin()->second.nodes, (std::vector<int>{3, 4, 5, 6, 7}));
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(count(g->graph, Op::Gelu), 1) << print_graph(g->graph);
  EXPECT_EQ(count(g->graph, Op::Erf), 0);
  expect_gelu_values(b);
}

TEST(FuseGelu, AValueReadOutsideTheSpanKeepsItAsWritten) {
  OnnxBuilder b = torch_spelling();
  b.output("e", DType::f32);  // the erf is an output too
  EXPECT_TRUE(find_gelu_spans(b.model().graph()).empty());
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(count(g->graph, Op::Gelu), 0);
  EXPECT_EQ(count(g->graph, Op::Erf), 1);
}

TEST(FuseGelu, OtherConstantsAreNotGelu) {
  OnnxBuilder b = torch_spelling(/*root2=*/1.5);
  EXPECT_TRUE(find_gelu_spans(b.model().graph()).empty());
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(count(g->graph, Op::Gelu), 0);
  EXPECT_EQ(count(g->graph, Op::Erf), 1);
}

}  // namespace fuse_gelu_test
}  // namespace
}  // namespace weft::onnx_io

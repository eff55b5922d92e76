#include "ir/dot.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "ir/scan.h"
#include "ir/shape_rules.h"

namespace weft {
namespace {

TEST(Dot, DrawsInputsNodesAndOutputs) {
  Graph g("f");
  ValueId x = g.add_input("x", {DType::f32, {4, 6}});
  ValueId w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
  ValueId h = g.add_node(Op::Matmul, {x, w}, {}, {}, Type{DType::f32, {4, 5}}, "h");
  ValueId s = g.add_node(Op::Sum, {h}, {{"axes", IntList{1}}}, {}, Type{DType::f32, {4}}, "s");
  g.add_output(s);
  EXPECT_EQ(graph_to_dot(g),
            "digraph \"f\" {\n"
            "  rankdir=TB;\n"
            "  node [fontname=\"monospace\", fontsize=10];\n"
            "  edge [fontname=\"monospace\", fontsize=9];\n"
            "  in0 [shape=ellipse, label=\"%x\\nf32[4,6]\"];\n"
            "  in1 [shape=ellipse, style=filled, fillcolor=\"#e8e0ff\", "
            "label=\"%w\\nf32[6,5]\\n{param}\"];\n"
            "  n0 [shape=box, label=\"matmul\\nf32[4,5]\"];\n"
            "  in0 -> n0 [label=\"%x [4,6]\"];\n"
            "  in1 -> n0 [label=\"%w [6,5]\"];\n"
            "  n1 [shape=box, label=\"sum\\naxes=[1]\\nf32[4]\"];\n"
            "  n0 -> n1 [label=\"%h [4,5]\"];\n"
            "  out0 [shape=doublecircle, label=\"out 0\"];\n"
            "  n1 -> out0;\n"
            "}\n");
}

TEST(Dot, EscapesStringAttributes) {
  Graph g("q");
  ValueId x = g.add_input("x", {DType::f32, {2}});
  g.add_output(g.add_node(Op::Gelu, {x}, {{"approximate", std::string("tanh")}}, {},
                          Type{DType::f32, {2}}, "y"));
  EXPECT_NE(graph_to_dot(g).find("label=\"gelu\\napproximate=\\\"tanh\\\"\\nf32[2]\""),
            std::string::npos)
      << graph_to_dot(g);
}

TEST(Dot, DrawsALoopsBodyAsANestedCluster) {
  Graph g("f");
  ValueId w = g.add_input("w", {DType::f32, {3}}, InputKind::param);
  ValueId h0 = g.add_input("h0", {DType::f32, {3}});
  auto body = std::make_shared<Graph>("step");
  ValueId bw = body->add_input("w", {DType::f32, {3}});
  ValueId bh = body->add_input("h", {DType::f32, {3}});
  body->add_output(*add_typed_node(*body, Op::Mul, {bh, bw}, {}, Location{}));
  auto r = add_scan(g, {w, h0}, {5, 1, 1}, body, Location{});
  ASSERT_TRUE(r.ok());
  g.add_output((*r)[0]);
  const std::string dot = graph_to_dot(g);
  EXPECT_NE(dot.find("  subgraph cluster_n0 {\n    label=\"@step, 5 iterations\";\n    style=dashed;\n"
                     "    n0_in0 [shape=ellipse, label=\"%w\\nf32[3]\"];\n"),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("    n0_n0 [shape=box, label=\"mul\\nf32[3]\"];\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("  n0 -> n0_in1 [style=dashed];\n  n0_n0 -> n0 [style=dashed];\n"), std::string::npos) << dot;
}

// The one runner of graphviz's dot (frontend's render_svg and tools/viz call it).
TEST(DotToSvg, LaysOutOrSaysWhatWentWrong) {
  StatusOr<std::string> svg = dot_to_svg("digraph { a -> b }");
  ASSERT_TRUE(svg.ok()) << svg.error().to_string();  // tools/setup installs graphviz
  EXPECT_EQ(svg->rfind("<svg", 0), 0u) << svg->substr(0, 80);
  EXPECT_NE(svg->find("</svg>"), std::string::npos);

  StatusOr<std::string> bad = dot_to_svg("digraph { a -> }");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("graphviz's dot failed: ", 0), 0u) << bad.error().message;
  EXPECT_NE(bad.error().message.find("syntax error"), std::string::npos) << bad.error().message;

  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  StatusOr<std::string> missing = dot_to_svg("digraph { a -> b }");
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "graphviz's `dot` is not on PATH; install the Debian package `graphviz` (tools/setup installs it)");
}

}  // namespace
}  // namespace weft

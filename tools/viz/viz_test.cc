// The viewer's DOT and page, checked structurally: one DOM element per node, input and
// output, clusters from builder paths, fused kernels outlined, buffers from the plan,
// nothing loaded from the network. (tools/viz/chromium_test.cc renders the page.)

#include "tools/viz/viz.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "codegen/lower.h"
#include "tools/viz/cpu_viz.h"

namespace weft::viz {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Graph read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  StatusOr<Graph> g = parse_graph(text.str(), path);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  return std::move(*g);
}

TEST(VizDot, GoldenForASmallGraph) {
  Graph g("f");
  ValueId x = g.add_input("x", {DType::f32, {4, 6}});
  ValueId w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
  Location loc{"net.cc", 12, 3, "encoder > Linear(6->5)"};
  ValueId h = g.add_node(Op::Matmul, {x, w}, {}, loc, Type{DType::f32, {4, 5}}, "h");
  ValueId y = g.add_node(Op::Relu, {h}, {}, {}, Type{DType::f32, {4, 5}}, "y");
  g.add_output(y);
  VizOptions options;
  options.tags = {{"y", "hidden"}};
  EXPECT_EQ(graph_to_viz_dot(g, options),
            "digraph \"f\" {\n"
            "  rankdir=TB; newrank=true; nodesep=0.25; ranksep=0.35;\n"
            "  graph [fontname=\"sans-serif\", fontsize=11];\n"
            "  node [shape=box, fontname=\"monospace\", fontsize=10, margin=\"0.08,0.04\"];\n"
            "  edge [fontname=\"monospace\", fontsize=8, color=\"#666666\", arrowsize=0.6];\n"
            "  in0 [id=\"in0\", shape=ellipse, style=filled, fillcolor=\"#ffffff\", color=\"#666666\", "
            "label=\"%x\\nf32[4,6]\"];\n"
            "  in1 [id=\"in1\", shape=ellipse, style=filled, fillcolor=\"#dcf1e9\", color=\"#666666\", "
            "label=\"%w\\nf32[6,5]\\n{param}\"];\n"
            "  subgraph \"cluster_0\" {\n"
            "    id=\"c0\"; label=\"encoder\"; style=\"rounded,filled\"; fillcolor=\"#f7f5ff\"; "
            "color=\"#7060c0\";\n"
            "    n0 [id=\"n0\", class=\"kind-activation dtype-f32\", style=\"rounded,filled\", "
            "fillcolor=\"#e3f2fb\", color=\"#666666\", label=\"Linear(6->5)\\nmatmul\\nf32[4,5]\"];\n"
            "  }\n"
            "  n1 [id=\"n1\", class=\"kind-activation dtype-f32 tagged\", style=\"rounded,filled\", "
            "fillcolor=\"#e3f2fb\", color=\"#666666\", fontcolor=\"#7a4f00\", label=\"relu\\nf32[4,5]\\n#hidden\"];\n"
            "  in0 -> n0 [id=\"e0\", label=\"[4,6]\", class=\"dtype-f32\", color=\"#666666\"];\n"
            "  in1 -> n0 [id=\"e1\", label=\"[6,5]\", class=\"dtype-f32\", color=\"#666666\"];\n"
            "  n0 -> n1 [id=\"e2\", label=\"[4,5]\", class=\"dtype-f32\", color=\"#666666\"];\n"
            "  out0 [id=\"out0\", shape=doublecircle, fixedsize=true, width=0.5, label=\"out 0\"];\n"
            "  n1 -> out0 [id=\"e3\", class=\"dtype-f32\", color=\"#666666\"];\n"
            "}\n");
}

// The page of the CPU backend's training step: every node, input and output is one
// element, fused kernels are marked, every arena value shows its buffer, and the page
// references nothing outside itself.
TEST(VizHtml, TrainingStepOnTheCpuBackend) {
  Graph g = read("examples/fashion_mnist/mlp_train_step.wir");
  ASSERT_TRUE(codegen::cpu_pipeline().run(g).ok());
  StatusOr<MemoryPlan> plan = cpu_memory_plan(g);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  VizOptions options;
  options.plan = &*plan;
  options.backend = "cpu";
  StatusOr<std::string> html = graph_to_html(g, options);
  ASSERT_TRUE(html.ok()) << html.error().to_string();

  EXPECT_EQ(count(*html, "data-node=\""), g.nodes().size());
  EXPECT_EQ(count(*html, "<g id=\"n"), g.nodes().size());
  EXPECT_EQ(count(*html, "class=\"input\""), g.inputs().size());
  EXPECT_EQ(count(*html, "class=\"output\""), g.outputs().size());
  int fused = 0, arena_values = 0, arena_mentions = 0;
  for (const Node& n : g.nodes()) {
    fused += n.op == Op::Fused;
    for (ValueId r : n.results) arena_values += plan->offset[r] >= 0;
    for (ValueId v : n.results) arena_mentions += plan->offset[v] >= 0;
    for (ValueId v : n.operands) arena_mentions += plan->offset[v] >= 0;
  }
  ASSERT_GT(fused, 0);
  EXPECT_EQ(count(*html, "class=\"node kind-"), g.nodes().size());
  EXPECT_EQ(static_cast<int>(count(*html, " fused\" data-node=")), fused);
  // Every arena value's offset is in the page's data (as a result and as an operand);
  // the parameters updated in place say where they went.
  EXPECT_EQ(static_cast<int>(count(*html, "\"offset\":")), arena_mentions);
  EXPECT_NE(html->find("written straight into %w1's buffer (update in place)"), std::string::npos);
  EXPECT_NE(html->find("\"fused\":{\"kind\":\"elementwise\""), std::string::npos);
  // The memory tab, with one rectangle per arena value, linked to its node.
  EXPECT_NE(html->find("data-tab=\"memory\""), std::string::npos);
  EXPECT_EQ(static_cast<int>(count(*html, "data-producer=\"")), arena_values);
  // Self-contained: no external scripts, styles, images or fonts.
  for (const char* ref : {"<link", "src=", "@import", "url(", "https:"}) {
    EXPECT_EQ(html->find(ref), std::string::npos) << ref;
  }
  std::string without_namespaces = std::regex_replace(
      *html, std::regex("xmlns(:xlink)?=\"http://www.w3.org/[0-9a-z/]*\""), "");
  EXPECT_EQ(without_namespaces.find("http"), std::string::npos);
  // The data block cannot end the script early.
  size_t data = html->find("id=\"weft-data\">");
  ASSERT_NE(data, std::string::npos);
  EXPECT_EQ(html->find("</script>", data), html->find("</script>\n<script>", data));
}

TEST(VizHtml, WithoutAPlanThereIsNoMemoryTab) {
  Graph g = read("examples/mlp/mlp.wir");
  StatusOr<std::string> html = graph_to_html(g);
  ASSERT_TRUE(html.ok()) << html.error().to_string();
  EXPECT_EQ(count(*html, "data-node=\""), g.nodes().size());
  EXPECT_EQ(html->find("data-tab=\"memory\""), std::string::npos);
  EXPECT_EQ(html->find("\"offset\":"), std::string::npos);
  // Source locations of a parsed file are FILE:LINE:COL.
  EXPECT_NE(html->find("\"loc\":\"examples/mlp/mlp.wir:13:"), std::string::npos);
}

// Values are coloured by dtype: every edge and every node's outline in its value's
// colour, with a class saying which (`dtype-bf16`, `dtype-int`...), and a legend with
// the five keys (f64's only where a graph has one).
TEST(VizHtml, ValuesAreColouredByDtype) {
  StatusOr<Graph> g = parse_graph(R"(graph @mixed(%x: f32[4,6], %w: f32[6,5] {param}, %labels: i64[4]) {
  %xb = cast(%x) {dtype=bf16}
  %wb = cast(%w) {dtype=bf16}
  %h = matmul(%xb, %wb)
  %hf = cast(%h) {dtype=f32}
  %pos = gt(%hf, %hf)
  %z = full() {shape=[], value=0.0, dtype=f32}
  %y = select(%pos, %hf, %z)
  %loss = cross_entropy(%y, %labels)
  %hh = cast(%h) {dtype=f16}
  return %loss, %hh
}
)", "mixed.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  const std::string dot = graph_to_viz_dot(*g);
  // Edges by their value's dtype: %xb, %wb into the matmul and %h into two casts (bf16);
  // %x, %w, %hf twice, %hf into select, %z, %y, %loss out (f32); %pos (bool); %labels (int);
  // %hh out (f16).
  EXPECT_EQ(count(dot, "class=\"dtype-bf16\", color=\"#1565c0\""), 4u) << dot;
  EXPECT_EQ(count(dot, "class=\"dtype-bool\", color=\"#b8860b\""), 1u) << dot;
  EXPECT_EQ(count(dot, "class=\"dtype-int\", color=\"#2e7d32\""), 1u) << dot;
  EXPECT_EQ(count(dot, "class=\"dtype-f16\", color=\"#8e24aa\""), 1u) << dot;
  // Nodes outlined by their result: the two casts to bf16 and the matmul; %pos.
  EXPECT_EQ(count(dot, "dtype-bf16\", style="), 3u) << dot;
  EXPECT_EQ(count(dot, "dtype-bool\", style="), 1u) << dot;
  EXPECT_NE(dot.find("label=\"%labels\\ni64[4]\"") , std::string::npos) << dot;
  StatusOr<std::string> html = graph_to_html(*g);
  ASSERT_TRUE(html.ok()) << html.error().to_string();
  // graphviz keeps the classes on the SVG's edge groups.
  EXPECT_EQ(count(*html, "class=\"edge dtype-bf16\""), 4u);
  EXPECT_EQ(count(*html, "stroke=\"#1565c0\""), 4u + 4u + 3u);  // paths, arrowheads, outlines
  for (const char* key : {"f32", "bf16", "f16", "int", "bool"}) {
    EXPECT_NE(html->find("data-dtype=\"" + std::string(key) + "\""), std::string::npos) << key;
  }
  EXPECT_NE(html->find("></i>integers</span>"), std::string::npos);
  EXPECT_EQ(html->find("data-dtype=\"f64\""), std::string::npos);
}

// A builder graph: labelled subgraphs become clusters (nested as the builder path is),
// tags are annotated, and the node elements still match the nodes one for one.
TEST(VizHtml, BuilderLabelsBecomeClustersAndTagsAreAnnotated) {
  StatusOr<FlowPtr> encoder = FlowBuilder::from(Linear(16, 32))
                                  .through(GELU())
                                  .tag("hidden")
                                  .through(LayerNorm(32))
                                  .also(Linear(32, 32))
                                  .label("encoder")
                                  .build();
  ASSERT_TRUE(encoder.ok()) << encoder.error().to_string();
  StatusOr<FlowPtr> head =
      FlowBuilder::from(Linear(32, 32)).through(Tanh()).label("head").build();
  ASSERT_TRUE(head.ok());
  StatusOr<Model> model = FlowBuilder::from(*encoder)
                              .through(*head)
                              .through(Linear(32, 10))
                              .build({{"x", f32({8, 16})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const Graph& g = model->graph();
  VizOptions options;
  for (const auto& [tag, v] : model->tags()) options.tags[g.value(v).name] = tag;
  ASSERT_FALSE(options.tags.empty());

  std::string dot = graph_to_viz_dot(g, options);
  EXPECT_NE(dot.find("label=\"encoder\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"head\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("#encoder.hidden"), std::string::npos) << dot;
  // The residual's Linear is drawn inside `encoder`'s cluster, the last Linear outside
  // every cluster; the node's first line is the module that emitted it.
  const size_t encoder_at = dot.find("label=\"encoder\""), head_at = dot.find("label=\"head\"");
  const size_t residual_at = dot.find("Linear(32->32)\\nmatmul");
  const size_t last_at = dot.find("Linear(32->10)\\nmatmul");
  EXPECT_LT(encoder_at, residual_at);
  EXPECT_LT(residual_at, head_at);
  const size_t last_line = dot.rfind('\n', last_at) + 1;
  EXPECT_EQ(dot.substr(last_line, 3), "  n");  // indented once: at the top level

  StatusOr<std::string> html = graph_to_html(g, options);
  ASSERT_TRUE(html.ok()) << html.error().to_string();
  EXPECT_EQ(count(*html, "data-node=\""), g.nodes().size());
  EXPECT_EQ(count(*html, "class=\"cluster\" data-cluster=\""), 2u);  // encoder, head
  EXPECT_NE(html->find("id=\"collapse-all\""), std::string::npos);
  EXPECT_NE(html->find("\"path\":\"encoder \\u003e Linear(16-\\u003e32)\""), std::string::npos);

  // The CPU backend's view of the same graph keeps the clusters and the tag: the tagged
  // value (the GELU's output) is computed inside the layer norm's row kernel there, and
  // the tag moves to that fused node.
  StatusOr<std::string> cpu = cpu_graph_to_html(g, options);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  EXPECT_NE(cpu->find("data-tab=\"memory\""), std::string::npos);
  EXPECT_EQ(count(*cpu, "class=\"cluster\" data-cluster=\""), 2u);
  EXPECT_NE(cpu->find("#encoder.hidden (fused)"), std::string::npos);
}

// A profile fills each timed node by its share of the step and labels its time.
TEST(VizDot, ProfileTimesColourTheNodes) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%x: f32[4]) {
  %a = exp(%x) : f32[4]
  %b = neg(%a) : f32[4]
  return %b
}
)", "f.wir");
  ASSERT_TRUE(g.ok());
  VizOptions options;
  options.time_us = {{"a", 30.0}, {"b", 10.0}};
  const std::string dot = graph_to_viz_dot(*g, options);
  EXPECT_NE(dot.find("30.0 us (75.0%)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("10.0 us (25.0%)"), std::string::npos) << dot;
  EXPECT_EQ(count(dot, " timed"), 2u) << dot;
  EXPECT_NE(dot.find("fillcolor=\"#ff5140\""), std::string::npos) << dot;  // 75%: deep red
}

// A loop's body is drawn as a cluster nested at the loop, nested loops inside it; the page
// renders it.
TEST(VizDot, LoopBodiesAreNestedClusters) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%w: f32[4,4], %h0: f32[2,4], %xs: f32[3,2,4]) {
  %h, %ys = scan(%w, %h0, %xs) {carries=1, consts=1, length=3} : f32[2,4], f32[3,2,4] ({
    ^cell(%cw: f32[4,4], %ch: f32[2,4], %cx: f32[2,4]):
      %i = scan(%cw, %ch) {carries=1, consts=1, length=2, reverse=true} : f32[2,4] ({
        ^inner(%iw: f32[4,4], %ih: f32[2,4]):
          %im = matmul(%ih, %iw) : f32[2,4]
          return %im
      })
      %n = add(%i, %cx) : f32[2,4]
      %t = tanh(%n) : f32[2,4]
      return %t, %t
  })
  return %h, %ys
}
)", "loop.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::string dot = graph_to_viz_dot(*g);
  EXPECT_NE(dot.find("subgraph \"cluster_n0_body\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"@cell, 3 iterations\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph \"cluster_n0_n0_body\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"@inner, 2 iterations, reversed\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0_n0_n0 [id=\"n0_n0_n0\""), std::string::npos) << "the inner matmul\n" << dot;
  EXPECT_NE(dot.find("n0 -> n0_in1 [style=dashed"), std::string::npos) << "the carry goes in\n" << dot;
  EXPECT_NE(dot.find("n0_n2 -> n0 [style=dashed"), std::string::npos) << "the next carry comes back\n" << dot;
  StatusOr<std::string> html = graph_to_html(*g);
  ASSERT_TRUE(html.ok()) << html.error().to_string();
  EXPECT_NE(html->find("@cell, 3 iterations"), std::string::npos);
}

TEST(RenderDotToSvg, ReportsDotsErrors) {
  StatusOr<std::string> svg = render_dot_to_svg("digraph { a -> }");
  ASSERT_FALSE(svg.ok());
  EXPECT_NE(svg.error().to_string().find("cannot lay out the graph: graphviz's dot failed: "),
            std::string::npos)
      << svg.error().to_string();
}

TEST(RenderDotToSvg, SaysWhichPackageIsMissing) {
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  StatusOr<std::string> svg = render_dot_to_svg("digraph { a -> b }");
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_FALSE(svg.ok());
  EXPECT_EQ(svg.error().to_string(),
            "error: cannot lay out the graph: graphviz's `dot` is not on PATH; install the "
            "Debian package `graphviz` (tools/setup installs it)");
}

}  // namespace
}  // namespace weft::viz

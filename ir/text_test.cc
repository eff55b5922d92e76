// The text form (ir/text.h): printing, parsing and round trips. The parse errors, one
// test per message, are in text_errors_test.cc.
#include "ir/text.h"
#include "ir/text_testing.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <cmath>

namespace weft {
namespace {

// The graph of ir/graph.h's header comment, f(x) = relu(x·w + b), with known types.
Graph small_graph() {
  Graph g("f");
  ValueId x = g.add_input("x", {DType::f32, {4, 6}});
  ValueId w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
  ValueId b = g.add_input("b", {DType::f32, {5}}, InputKind::param);
  ValueId h = g.add_node(Op::Matmul, {x, w}, {}, {}, Type{DType::f32, {4, 5}});
  ValueId s = g.add_node(Op::Add, {h, b}, {}, {}, Type{DType::f32, {4, 5}});
  g.add_output(g.add_node(Op::Relu, {s}, {}, {}, Type{DType::f32, {4, 5}}));
  return g;
}

// ---- Printing ----------------------------------------------------------------------

TEST(PrintTest, GraphHeaderExample) {
  EXPECT_EQ(print_graph(small_graph(), {.locations = false}),
            "graph @f(%x: f32[4,6], %w: f32[6,5] {param}, %b: f32[5] {param}) -> (f32[4,5]) {\n"
            "  %0 = matmul(%x, %w) : f32[4,5]\n"
            "  %1 = add(%0, %b) : f32[4,5]\n"
            "  %2 = relu(%1) : f32[4,5]\n"
            "  return %2\n"
            "}\n");
}

TEST(PrintTest, UnknownLocationsPrintAsUnknown) {
  EXPECT_EQ(print_graph(small_graph()),
            "graph @f(%x: f32[4,6], %w: f32[6,5] {param}, %b: f32[5] {param}) -> (f32[4,5]) {\n"
            "  %0 = matmul(%x, %w) : f32[4,5] loc(unknown)\n"
            "  %1 = add(%0, %b) : f32[4,5] loc(unknown)\n"
            "  %2 = relu(%1) : f32[4,5] loc(unknown)\n"
            "  return %2\n"
            "}\n");
}

TEST(PrintTest, AttributesStatementsLocationsAndUntypedValues) {
  Graph g("step");
  ValueId x = g.add_input("x", {DType::f32, {2, 3}});
  ValueId w = g.add_input("w", {DType::f32, {3}}, InputKind::param);
  ValueId n = g.add_input("n", {DType::i64, {}}, InputKind::state);
  ValueId s = g.add_node(Op::Sum, {x}, {{"axes", IntList{1}}, {"keepdims", true}},
                         {"model.cc", 12, 5, "encoder > split[1] > Linear(256->10)"});
  ValueId c = g.add_node(Op::Full, {}, {{"shape", IntList{2}}, {"value", 1e-05}},
                         {"model.cc", 13, 1, ""}, Type{DType::f32, {2}}, "c");
  ValueId gl = g.add_node(Op::Gelu, {w}, {{"approximate", std::string("say \"hi\"\\\n")}},
                          {}, std::nullopt, "w_new");
  g.add_node(Op::Assign, {w, gl}, {}, {"model.cc", 20, 3, ""});
  g.add_node(Op::Cast, {n}, {{"dtype", DType::bf16}}, {}, Type{DType::bf16, {}}, "a b");
  g.set_outputs({s, c});
  EXPECT_EQ(print_graph(g),
            "graph @step(%x: f32[2,3], %w: f32[3] {param}, %n: i64[] {state}) {\n"
            "  %0 = sum(%x) {axes=[1], keepdims=true} "
            "loc(\"model.cc\":12:5, \"encoder > split[1] > Linear(256->10)\")\n"
            "  %c = full() {shape=[2], value=1e-05} : f32[2] loc(\"model.cc\":13:1)\n"
            "  %w_new = gelu(%w) {approximate=\"say \\\"hi\\\"\\\\\\n\"} loc(unknown)\n"
            "  assign(%w, %w_new) loc(\"model.cc\":20:3)\n"
            "  %\"a b\" = cast(%n) {dtype=bf16} : bf16[] loc(unknown)\n"
            "  return %0, %c\n"
            "}\n");
}

TEST(PrintTest, DeclaredOutputTypesWhenOutputsAreUntyped) {
  Graph g("d");
  ValueId x = g.add_input("x", {DType::f32, {4}});
  g.add_output(g.add_node(Op::Exp, {x}, {}, {}, std::nullopt, "y"));
  EXPECT_EQ(print_graph(g, {.locations = false}),
            "graph @d(%x: f32[4]) {\n  %y = exp(%x)\n  return %y\n}\n");
  g.set_declared_output_types({Type{DType::f32, {4}}});
  EXPECT_EQ(print_graph(g, {.locations = false}),
            "graph @d(%x: f32[4]) -> (f32[4]) {\n  %y = exp(%x)\n  return %y\n}\n");
}

TEST(PrintTest, NoOutputs) {
  Graph g("empty");
  EXPECT_EQ(print_graph(g), "graph @empty() -> () {\n  return\n}\n");
}

// ---- Parsing -----------------------------------------------------------------------

constexpr std::string_view kMlp =
    "# comment\n"
    "graph @mlp(%x: f32[4,6], %w1: f32[6,5] {param}, %b1: f32[5] {param}, "
    "%w1_new: f32[6,5]) -> (f32[4,5]) {\n"
    "  %h = matmul(%x, %w1)\n"
    "  %hb = add(%h, %b1) : f32[4,5]  # a comment after a statement\n"
    "  %p = softmax(%hb) {axis=1}\n"
    "  assign(%w1, %w1_new)\n"
    "  return %p\n"
    "}\n";

TEST(ParseTest, IssueExample) {
  StatusOr<Graph> parsed = parse_graph(kMlp, "mlp.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  const Graph& g = *parsed;
  EXPECT_EQ(g.name(), "mlp");
  EXPECT_EQ(g.loc(), (Location{"mlp.wir", 2, 1, ""}));  // the `graph` keyword
  ASSERT_EQ(g.inputs().size(), 4u);
  EXPECT_EQ(g.inputs()[1].kind, InputKind::param);
  EXPECT_EQ(g.inputs()[3].kind, InputKind::data);
  EXPECT_EQ(g.inputs()[1].loc, (Location{"mlp.wir", 2, 26, ""}));
  EXPECT_EQ(g.type(g.inputs()[0].value), (Type{DType::f32, {4, 6}}));
  ASSERT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.nodes()[0].op, Op::Matmul);
  EXPECT_EQ(g.nodes()[0].loc, (Location{"mlp.wir", 3, 3, ""}));
  EXPECT_FALSE(g.value(g.nodes()[0].result()).type.has_value());
  EXPECT_EQ(g.value(g.nodes()[1].result()).type, (Type{DType::f32, {4, 5}}));
  EXPECT_EQ(g.nodes()[2].int_attr("axis"), 1);
  EXPECT_EQ(g.nodes()[3].op, Op::Assign);
  EXPECT_TRUE(g.nodes()[3].results.empty());
  EXPECT_EQ(g.nodes()[3].loc, (Location{"mlp.wir", 6, 3, ""}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "p");
  // %p's type is not known yet, so the header is kept as the declared output type.
  EXPECT_EQ(g.declared_output_types(), (std::vector<Type>{{DType::f32, {4, 5}}}));
  EXPECT_EQ(print_graph(g, {.locations = false}),
            "graph @mlp(%x: f32[4,6], %w1: f32[6,5] {param}, %b1: f32[5] {param}, "
            "%w1_new: f32[6,5]) -> (f32[4,5]) {\n"
            "  %h = matmul(%x, %w1)\n"
            "  %hb = add(%h, %b1) : f32[4,5]\n"
            "  %p = softmax(%hb) {axis=1}\n"
            "  assign(%w1, %w1_new)\n"
            "  return %p\n"
            "}\n");
}

TEST(ParseTest, HeaderImpliedByOutputTypesIsNotStored) {
  StatusOr<Graph> g = parse_graph(print_graph(small_graph()), "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(g->declared_output_types().empty());
  std::string why;
  EXPECT_TRUE(structurally_equal(small_graph(), *g, &why)) << why;
}

// Files written before conv took 1-3 spatial dims name it conv2d: they load, and print
// under the current names.
TEST(ParseTest, FormerConvolutionNamesLoad) {
  StatusOr<Graph> g = parse_graph(
      "graph @g(%x: f32[1,2,5,5], %w: f32[3,2,3,3], %gy: f32[1,3,3,3]) {\n"
      "  %y = conv2d(%x, %w) {stride=[1, 1]}\n"
      "  %gx = conv2d_backward_input(%gy, %w) {input_shape=[1, 2, 5, 5]}\n"
      "  %gw = conv2d_backward_weight(%x, %gy) {weight_shape=[3, 2, 3, 3]}\n"
      "  return %y, %gx, %gw\n"
      "}\n",
      "old.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->node(0).op, Op::Conv);
  EXPECT_EQ(g->node(1).op, Op::ConvBackwardInput);
  EXPECT_EQ(g->node(2).op, Op::ConvBackwardWeight);
  const std::string text = print_graph(*g, {.locations = false});
  EXPECT_NE(text.find("= conv(%x, %w)"), std::string::npos) << text;
  EXPECT_EQ(text.find("conv2d"), std::string::npos) << text;
}

TEST(ParseTest, AttributeValues) {
  StatusOr<Graph> g = parse_graph(
      "graph @a(%x: f32[2,2]) {\n"
      "  %c = full() {shape=[2, 2], value=-2, dtype=f64}\n"
      "  %p = pad(%x) {low=[0,0], high=[1, 1], value=-inf}\n"
      "  %q = pad(%x) {low=[], high=[], value=nan}\n"
      "  %n = layer_norm(%x, %x, %x) {eps=1e-05, axes=[-1]}\n"
      "  %g = gelu(%x) {approximate=\"tanh\"}\n"
      "  %s = sum(%x) {keepdims=false}\n"
      "  return %c, %p, %q, %n, %g, %s\n"
      "}\n",
      "a.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const auto& n = g->nodes();
  EXPECT_EQ(n[0].attrs.at("value"), Attribute(-2.0));  // int widened to the schema's float
  EXPECT_EQ(n[0].dtype_attr("dtype"), DType::f64);
  EXPECT_EQ(n[0].ints_attr("shape"), (IntList{2, 2}));
  EXPECT_EQ(n[1].float_attr("value"), -INFINITY);
  EXPECT_TRUE(std::isnan(n[2].float_attr("value")));
  EXPECT_EQ(n[2].ints_attr("low"), IntList{});
  EXPECT_EQ(n[3].float_attr("eps"), 1e-05);
  EXPECT_EQ(n[3].ints_attr("axes"), IntList{-1});
  EXPECT_EQ(n[4].str_attr("approximate"), "tanh");
  EXPECT_FALSE(n[5].bool_attr("keepdims"));
}

TEST(ParseTest, ExplicitLocationsAndQuotedNames) {
  StatusOr<Graph> g = parse_graph(
      "graph @\"my graph\"(%\"x 1\": f32[]) {\n"
      "  %y = neg(%\"x 1\") : f32[] loc(\"a \\\"b\\\".cc\":7:9, \"enc > Linear(2->3)\")\n"
      "  %z = neg(%y) loc(unknown)\n"
      "  %w.2 = neg(%z) loc(unknown, \"only a path\")\n"
      "  return %w.2\n"
      "}",
      "q.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->name(), "my graph");
  EXPECT_EQ(g->value(g->inputs()[0].value).name, "x 1");
  EXPECT_EQ(g->nodes()[0].loc, (Location{"a \"b\".cc", 7, 9, "enc > Linear(2->3)"}));
  EXPECT_EQ(g->nodes()[1].loc, Location{});
  EXPECT_EQ(g->nodes()[2].loc, (Location{"", 0, 0, "only a path"}));
  EXPECT_EQ(g->value(g->outputs()[0]).name, "w.2");
}

TEST(ParseTest, RoundTripsThroughText) {
  for (std::string_view text : {kMlp}) {
    StatusOr<Graph> g = parse_graph(text, "mlp.wir");
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    std::string printed = print_graph(*g);
    StatusOr<Graph> again = parse_graph(printed, "other.wir");
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    EXPECT_EQ(print_graph(*again), printed);
    std::string why;
    EXPECT_TRUE(structurally_equal(*g, *again, &why)) << why;
  }
  Graph g = small_graph();
  StatusOr<Graph> again = parse_graph(print_graph(g), "f.wir");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(print_graph(*again), print_graph(g));
}

TEST(ParseTest, AllReduceRoundTrips) {
  constexpr std::string_view kStep =
      "graph @step(%g: f32[3], %n: i64[2], %apply: bool[]) {\n"
      "  %m = all_reduce(%g)\n"
      "  %s = all_reduce(%n) {reduction=\"sum\"}\n"
      "  %p = all_reduce(%g, %apply)\n"
      "  return %m, %s, %p\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(kStep, "step.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(verify(*g, {.check_types = true}).ok());
  EXPECT_EQ(g->node(0).str_attr("reduction"), "mean");  // the default
  EXPECT_EQ(g->node(2).operands.size(), 2u);              // the predicate
  StatusOr<Graph> again = parse_graph(print_graph(*g), "again.wir");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *again, &why)) << why;
  StatusOr<Graph> mean_of_ints =
      parse_graph("graph @f(%n: i64[2]) {\n  %m = all_reduce(%n) : i64[2]\n  return %m\n}\n", "f.wir");
  ASSERT_TRUE(mean_of_ints.ok()) << mean_of_ints.error().to_string();
  EXPECT_EQ(verify(*mean_of_ints).to_string(),
            "f.wir:2:3: error: all_reduce: x i64[2] needs a floating dtype for reduction "
            "\"mean\" (\"sum\" takes integers)");
}

TEST(ParseTest, MultipleOutputsAndNoOutputs) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[2]) { return %x, %x }"), "ok");
  EXPECT_EQ(parse_error("graph @g() -> () {\n  return\n}"), "ok");
  EXPECT_EQ(parse_error("graph @g(%x: f32[2]) {\n  %y = concat(%x, %x, %x) {axis=0}\n"
                        "  return %y\n}"),
            "ok");
}

// A file saved as "UTF-8 with BOM" was "1:1: error: unexpected character '\xef'"; the
// mark is skipped, and an error on line 1 keeps the column an editor shows.
TEST(ParseTest, AByteOrderMarkIsSkipped) {
  EXPECT_EQ(parse_error("\xEF\xBB\xBFgraph @g(%x: f32[2]) { return %x }"), "ok");
  EXPECT_EQ(parse_error("\xEF\xBB\xBFgraph @g(%x: f32[2]) { return %y }"),
            "bad.wir:1:31: error: use of undefined value '%y'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[2]) {\xEF\xBB\xBF return %x }"), "bad.wir:1:23: error: unexpected character '\\xef'");
}

TEST(TextTest, FusedNodesWithSeveralResultsRoundTrip) {
  const std::string text =
      "graph @g(%m: f32[4] {state}, %g: f32[4]) -> (f32[4]) {\n"
      "  %p, %m1 = fused(%m, %g) : f32[4], f32[4] ({\n"
      "    ^body(%a: f32[4], %b: f32[4]):\n"
      "      %0 = add(%a, %b) : f32[4]\n"
      "      %1 = mul(%0, %b) : f32[4]\n"
      "      return %1, %0\n"
      "  })\n"
      "  assign(%m, %m1)\n"
      "  return %p\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(text, "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->nodes()[0].results.size(), 2u);
  EXPECT_TRUE(verify(*g).ok()) << verify(*g).to_string();
  EXPECT_EQ(print_graph(*g, {.locations = false}), text);
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %a, %b = neg(%x)\n  return %a\n}"),
            "bad.wir:2:7: error: 'neg' has one result; only 'fused', 'scan' and 'attention_grad' may have several");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %a, %b = fused(%x) : f32[4], f32[4] ({\n"
                        "    ^body(%y: f32[4]):\n      return %y\n  })\n  return %a\n}"),
            "bad.wir:2:3: error: the body returns 1 value but 'fused' names 2 results");
  // #28: a loop's error names the loop.
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %a, %b = scan(%x) {carries=1, length=2} : f32[4], f32[2,4] ({\n"
                        "    ^body(%y: f32[4]):\n      return %y\n  })\n  return %a\n}"),
            "bad.wir:2:3: error: the body returns 1 value but 'scan' names 2 results");
}

// #31: attention_grad is one node with three results (dq, dk, dv); the text names each.
TEST(TextTest, AttentionGradWithThreeResultsRoundTrips) {
  const std::string text =
      "graph @g(%q: f32[2,5,4], %k: f32[2,7,4], %v: f32[2,7,3], %dy: f32[2,5,3], "
      "%m: bool[2,1,7]) -> (f32[2,5,3], f32[2,5,4], f32[2,7,4], f32[2,7,3]) {\n"
      "  %y = attention(%q, %k, %v, %m) {causal=true, scale=0.5} : f32[2,5,3]\n"
      "  %dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy, %m) {causal=true, scale=0.5} : "
      "f32[2,5,4], f32[2,7,4], f32[2,7,3]\n"
      "  return %y, %dq, %dk, %dv\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(text, "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->nodes()[1].results.size(), 3u);
  EXPECT_TRUE(verify(*g).ok()) << verify(*g).to_string();
  EXPECT_EQ(print_graph(*g, {.locations = false}), text);
  // Declared types are checked against the rule: dk is k's type.
  std::string wrong = text;
  const std::string declared = "f32[2,5,4], f32[2,7,4], f32[2,7,3]\n";
  wrong.replace(wrong.find(declared), declared.size(), "f32[2,5,4], f32[2,7,3], f32[2,7,3]\n");
  StatusOr<Graph> bad = parse_graph(wrong, "f.wir");
  ASSERT_TRUE(bad.ok()) << bad.error().to_string();
  EXPECT_EQ(verify(*bad).to_string(),
            "f.wir:3:3: error: %dk has type f32[2,7,3] but attention_grad's shape rule gives "
            "f32[2,7,4]");
}

// The one-result form with `wrt` (before #31) is refused, naming the new form.
TEST(TextTest, FormerAttentionGradFormIsAnErrorNamingTheNewOne) {
  const std::string former =
      "graph @g(%q: f32[5,4], %k: f32[7,4], %v: f32[7,3], %dy: f32[5,3]) {\n"
      "  %dq = attention_grad(%q, %k, %v, %dy) {scale=0.5, wrt=\"q\"}\n"
      "  return %dq\n}";
  EXPECT_EQ(parse_error(former),
            "bad.wir:2:3: error: 'attention_grad' has 3 results, but 1 was named; write "
            "'%dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy[, %mask]) {scale=..., "
            "causal=...}' (y: attention's result, dy: its cotangent); the former one-result "
            "form with 'wrt' is gone");
  EXPECT_EQ(parse_error("graph @g(%q: f32[5,4]) {\n  %a, %b = attention_grad(%q) {scale=0.5}\n"
                        "  return %a\n}"),
            "bad.wir:2:3: error: 'attention_grad' has 3 results, but 2 were named; write "
            "'%dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy[, %mask]) {scale=..., "
            "causal=...}' (y: attention's result, dy: its cotangent); the former one-result "
            "form with 'wrt' is gone");
}

TEST(TextTest, ReadGraphFileNamesAnUnreadableFile) {
  StatusOr<Graph> g = read_graph_file("/nonexistent/model.wir");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().to_string(),
            "error: cannot read '/nonexistent/model.wir': No such file or directory");
}

TEST(TextTest, FusedBodyRoundTrips) {
  const std::string text =
      "graph @g(%x: f32[4,5], %b: f32[5]) -> (f32[4,5]) {\n"
      "  %y = fused(%x, %b) : f32[4,5] ({\n"
      "    ^body(%a: f32[4,5], %c: f32[5]):\n"
      "      %0 = add(%a, %c) : f32[4,5]\n"
      "      %1 = relu(%0) : f32[4,5]\n"
      "      return %1\n"
      "  })\n"
      "  return %y\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(text, "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_NE(g->nodes()[0].body, nullptr);
  EXPECT_EQ(g->nodes()[0].body->nodes().size(), 2u);
  EXPECT_TRUE(verify(*g).ok()) << verify(*g).to_string();
  EXPECT_EQ(print_graph(*g, {.locations = false}), text);
  StatusOr<Graph> again = parse_graph(print_graph(*g), "f.wir");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *again, &why)) << why;
}

// A block argument's kind prints as a graph input's does, so it survives the round trip
// (the fuzzer found a body argument's {state} lost in print).
TEST(TextTest, BlockArgumentKindsRoundTrip) {
  const std::string text =
      "graph @g(%x: f32[4]) -> (f32[4]) {\n"
      "  %y = fused(%x) : f32[4] ({\n"
      "    ^body(%a: f32[4] {state}):\n"
      "      %0 = neg(%a) : f32[4]\n"
      "      return %0\n"
      "  })\n"
      "  return %y\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(text, "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->nodes()[0].body->inputs()[0].kind, InputKind::state);
  EXPECT_EQ(print_graph(*g, {.locations = false}), text);
  StatusOr<Graph> again = parse_graph(print_graph(*g), "f.wir");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *again, &why)) << why;
}

// Renumbered, graphs that differ only in value names (here the fused body's too) print
// alike, and the text still parses.
TEST(PrintTest, RenumberPrintsValuesByPosition) {
  const std::string text =
      "graph @g(%x: f32[4,5], %b: f32[5] {param}) -> (f32[4,5]) {\n"
      "  %h = neg(%x) : f32[4,5]\n"
      "  %y = fused(%h, %b) : f32[4,5] ({\n"
      "    ^body(%a: f32[4,5], %c: f32[5]):\n"
      "      %s = add(%a, %c) : f32[4,5]\n"
      "      %r = relu(%s) : f32[4,5]\n"
      "      return %r\n"
      "  })\n"
      "  return %y\n"
      "}\n";
  const std::string renumbered =
      "graph @g(%in0: f32[4,5], %in1: f32[5] {param}) -> (f32[4,5]) {\n"
      "  %0 = neg(%in0) : f32[4,5]\n"
      "  %1 = fused(%0, %in1) : f32[4,5] ({\n"
      "    ^body(%in0: f32[4,5], %in1: f32[5]):\n"
      "      %0 = add(%in0, %in1) : f32[4,5]\n"
      "      %1 = relu(%0) : f32[4,5]\n"
      "      return %1\n"
      "  })\n"
      "  return %1\n"
      "}\n";
  StatusOr<Graph> g = parse_graph(text, "g.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(print_graph(*g, {.locations = false, .renumber = true}), renumbered);
  EXPECT_EQ(print_graph(*g, {.locations = false}), text);  // Names by default.
  StatusOr<Graph> again = parse_graph(renumbered, "r.wir");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(print_graph(*again, {.locations = false}), renumbered);
}

}  // namespace
}  // namespace weft

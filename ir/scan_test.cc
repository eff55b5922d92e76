// `scan` nodes (ir/ops.def, ir/scan.h): result types, the shape rule's errors, the
// verifier, and both text formats round-tripping a loop with its body.
#include "ir/scan.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "ir/json.h"
#include "ir/shape_rules.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace weft {
namespace {

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

// h' = tanh(h·w + x); y = h' · h'.
std::shared_ptr<Graph> cell(Type h_type = f32({2, 3})) {
  auto body = std::make_shared<Graph>("cell");
  ValueId w = body->add_input("w", f32({3, 3}));
  ValueId h = body->add_input("h", h_type);
  ValueId x = body->add_input("x", f32({2, 3}));
  ValueId m = *add_typed_node(*body, Op::Matmul, {h, w}, {}, Location{});
  ValueId next = *add_typed_node(*body, Op::Tanh, {*add_typed_node(*body, Op::Add, {m, x}, {}, Location{})}, {}, Location{});
  body->add_output(next);
  body->add_output(*add_typed_node(*body, Op::Mul, {next, next}, {}, Location{}));
  return body;
}

Graph rnn(int64_t length = 4) {
  Graph g("rnn");
  ValueId w = g.add_input("w", f32({3, 3}), InputKind::param);
  ValueId h0 = g.add_input("h0", f32({2, 3}));
  ValueId xs = g.add_input("xs", f32({length, 2, 3}));
  auto r = add_scan(g, {w, h0, xs}, {length, 1, 1}, cell(), Location{"model.cc", 7, 3, ""});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  g.add_output((*r)[0]);
  g.add_output((*r)[1]);
  return g;
}

TEST(Scan, ResultsAreTheLastCarriesThenTheStackedYs) {
  Graph g = rnn();
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  EXPECT_EQ(g.type(g.outputs()[0]), f32({2, 3}));
  EXPECT_EQ(g.type(g.outputs()[1]), f32({4, 2, 3}));
}

TEST(Scan, RoundTripsThroughTextAndJson) {
  Graph g = rnn();
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("scan(%w, %h0, %xs) {carries=1, consts=1, length=4} : f32[2,3], f32[4,2,3] ({"),
            std::string::npos)
      << text;
  auto parsed = parse_graph(text, "rnn.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *parsed, &why)) << why;
  EXPECT_EQ(print_graph(*parsed), text);
  auto from_json = graph_from_json(graph_to_json(g), "rnn.json");
  ASSERT_TRUE(from_json.ok()) << from_json.error().to_string();
  EXPECT_TRUE(structurally_equal(g, *from_json, &why)) << why;
}

TEST(Scan, ShapeErrorsNameTheBodyAndBothTypes) {
  auto error = [](std::shared_ptr<Graph> body, std::vector<Type> operands, ScanShape shape) {
    Graph g("f");
    std::vector<ValueId> in;
    for (size_t i = 0; i < operands.size(); ++i) in.push_back(g.add_input("a" + std::to_string(i), operands[i]));
    auto r = add_scan(g, in, shape, body, Location{"model.cc", 9, 1, ""});
    return r.ok() ? std::string("ok") : r.status().to_string();
  };
  EXPECT_EQ(error(cell(), {f32({3, 3}), f32({2, 3}), f32({5, 2, 3})}, {4, 1, 1}),
            "model.cc:9:1: error: scan: operand 2 (an xs) is f32[5,2,3]; it must have a leading axis of the "
            "length 4");
  EXPECT_EQ(error(cell(), {f32({3, 3}), f32({2, 4}), f32({4, 2, 3})}, {4, 1, 1}),
            "model.cc:9:1: error: scan: operand 1 gives body input %h the type f32[2,4], but it is f32[2,3]");
  // #28: a body returning fewer values than its carries; a count of one is singular.
  auto two = std::make_shared<Graph>("two");
  two->add_output(two->add_input("a", f32({4})));
  two->add_input("b", f32({4}));
  EXPECT_EQ(error(two, {f32({4}), f32({4})}, {2, 2, 0}),
            "model.cc:9:1: error: scan: body @two returns 1 value; it must return its 2 next carries, then "
            "its per-iteration outputs, at least one in all");
  EXPECT_EQ(error(cell(), {f32({3, 3}), f32({2, 3}), f32({4, 2, 3})}, {0, 1, 1}),
            "model.cc:9:1: error: scan: length 0 must be >= 1");
  EXPECT_EQ(error(cell(), {f32({3, 3}), f32({2, 3}), f32({4, 2, 3})}, {4, 3, 1}),
            "model.cc:9:1: error: scan: consts=1 and carries=3 do not fit its 3 operands");
  // A carry whose next value has another type: h is [1,3], the body makes [2,3].
  auto widening = std::make_shared<Graph>("widen");
  ValueId h = widening->add_input("h", f32({1, 3}));
  ValueId x = widening->add_input("x", f32({2, 3}));
  widening->add_output(*add_typed_node(*widening, Op::Add, {h, x}, {}, Location{}));
  EXPECT_EQ(error(widening, {f32({1, 3}), f32({4, 2, 3})}, {4, 1, 0}),
            "model.cc:9:1: error: scan: the body's next carry %0 is f32[2,3], but carry %h is f32[1,3]: a "
            "carry keeps its type across iterations");
  // #28: the stacked ys of a long loop must be measurable; 2^40 slots of f32[4] are.
  auto negate = std::make_shared<Graph>("negate");
  ValueId c = negate->add_input("c", f32({4}));
  ValueId n = *add_typed_node(*negate, Op::Neg, {c}, {}, Location{});
  negate->add_output(n);
  negate->add_output(n);
  EXPECT_EQ(error(negate, {f32({4})}, {INT64_MAX, 1, 0}),
            "model.cc:9:1: error: scan: the body's per-iteration output %0 (f32[4]) stacked over length "
            "9223372036854775807 is too large: its size in bytes overflows int64");
  EXPECT_EQ(error(negate, {f32({4})}, {int64_t{1} << 62, 1, 0}),
            "model.cc:9:1: error: scan: the body's per-iteration output %0 (f32[4]) stacked over length "
            "4611686018427387904 is too large: its size in bytes overflows int64");
  EXPECT_EQ(error(negate, {f32({4})}, {int64_t{1} << 40, 1, 0}), "ok");
}

TEST(Scan, TheParserRequiresABodyAndAllowsSeveralResults) {
  auto no_body = parse_graph(
      "graph @f(%h: f32[2]) {\n  %a, %b = scan(%h) {length=2, carries=1} : f32[2], f32[2,2]\n  return %a\n}\n",
      "f.wir");
  ASSERT_FALSE(no_body.ok());
  EXPECT_NE(no_body.error().message.find("'({' to begin the body of 'scan'"), std::string::npos)
      << no_body.error().to_string();
  auto several = parse_graph("graph @f(%h: f32[2]) {\n  %a, %b = add(%h, %h)\n  return %a\n}\n", "f.wir");
  ASSERT_FALSE(several.ok());
  EXPECT_NE(several.error().message.find("only 'fused', 'scan' and 'attention_grad' may have several"), std::string::npos)
      << several.error().to_string();
}

// A body whose const %w is read only through its cast, and whose carry %h is also read
// through one (the shapes autocast and rotate-carry-casts rebuild).
Graph cast_body() {
  auto parsed = parse_graph(R"(graph @cell(%w: f32[3,3], %h: f32[2,3]) {
  %c = cast(%w) {dtype=bf16} : bf16[3,3]
  %hb = cast(%h) {dtype=bf16} : bf16[2,3]
  %m = matmul(%hb, %c) : bf16[2,3]
  %y = cast(%m) {dtype=f32} : f32[2,3]
  return %y
}
)",
                            "cell.wir");
  EXPECT_TRUE(parsed.ok()) << parsed.error().to_string();
  parsed->set_loc(Location{"model.cc", 3, 1, "cell"});
  parsed->set_declared_output_types({f32({2, 3})});
  return std::move(*parsed);
}

TEST(BodyRebuilder, RetypesAParameterThatReplacesItsCast) {
  const Graph body = cast_body();
  BodyRebuilder b(body);
  b.replace(0, b.input(0, DType::bf16));
  b.inputs(1, 2);
  b.copy_nodes();
  const Graph out = std::move(b).finish();
  ASSERT_TRUE(verify(out).ok()) << verify(out).to_string();
  EXPECT_EQ(print_graph(out), R"(graph @cell(%w: bf16[3,3], %h: f32[2,3]) -> (f32[2,3]) {
  %hb = cast(%h) {dtype=bf16} : bf16[2,3] loc("cell.wir":3:3)
  %m = matmul(%hb, %w) : bf16[2,3] loc("cell.wir":4:3)
  %y = cast(%m) {dtype=f32} : f32[2,3] loc("cell.wir":5:3)
  return %y
}
)");
  EXPECT_EQ(out.loc().line, 3);
  EXPECT_EQ(out.declared_output_types(), body.declared_output_types());
}

TEST(BodyRebuilder, AddsParametersForValuesAndLeavesOutputsToTheCaller) {
  const Graph body = cast_body();
  BodyRebuilder b(body);
  b.inputs(0, 1);
  const ValueId c = b.input_for(body.node(0).result());  // %c, passed in: %w's cast hoisted
  b.skip(0);
  const ValueId hb = b.input_for(body.node(1).result(), InputKind::data, Location{"model.cc", 5, 2, ""});
  b.skip(1);
  b.inputs(1, 2);
  b.copy_nodes();
  EXPECT_EQ(b[body.node(0).result()], c);
  EXPECT_EQ(b[body.inputs()[1].value], b.graph().inputs()[3].value);
  b.graph().add_output(b[body.outputs()[0]]);
  b.graph().add_output(hb);
  const Graph& out = b.graph();
  ASSERT_TRUE(verify(out).ok()) << verify(out).to_string();
  EXPECT_EQ(print_graph(out),
            R"(graph @cell(%w: f32[3,3], %c: bf16[3,3], %hb: bf16[2,3], %h: f32[2,3]) -> (f32[2,3], bf16[2,3]) {
  %m = matmul(%hb, %c) : bf16[2,3] loc("cell.wir":4:3)
  %y = cast(%m) {dtype=f32} : f32[2,3] loc("cell.wir":5:3)
  return %y, %hb
}
)");
  EXPECT_EQ(out.inputs()[2].loc.line, 5);
}

TEST(BodyRebuilder, ReadsAWindowOfAWiderParameter) {
  auto parsed = parse_graph(R"(graph @k(%x: f32[2,3], %b: f32[2,3]) {
  %s = add(%x, %b) : f32[2,3]
  return %s
}
)",
                            "k.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  const Graph& body = *parsed;
  BodyRebuilder b(body);
  const ValueId whole = b.input(0, f32({4, 3}));  // fold-slices: the kernel reads rows 2..4 of %x's source
  b.input(1);
  b.read_as(body.inputs()[0].value, b.graph().add_node(Op::Slice, {whole}, {{"start", IntList{2, 0}}, {"stop", IntList{4, 3}}},
                                                       Location{"k.wir", 9, 1, ""}, f32({2, 3}), "w"));
  b.copy_nodes();
  const Graph out = std::move(b).finish();
  ASSERT_TRUE(verify(out).ok()) << verify(out).to_string();
  EXPECT_EQ(print_graph(out), R"(graph @k(%x: f32[4,3], %b: f32[2,3]) -> (f32[2,3]) {
  %w = slice(%x) {start=[2, 0], stop=[4, 3]} : f32[2,3] loc("k.wir":9:1)
  %s = add(%w, %b) : f32[2,3] loc("k.wir":2:3)
  return %s
}
)");
}

TEST(BodyRebuilder, RenumbersNumericNamesAmongTheCallersParameters) {
  auto parsed = parse_graph(R"(graph @k(%0: f32[2,3], %1: f32[2,3]) {
  %2 = add(%0, %1) : f32[2,3]
  %y = tanh(%2) : f32[2,3]
  return %y
}
)",
                            "k.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  const Graph& body = *parsed;
  BodyRebuilder b(body, /*renumber=*/true);
  const ValueId first = b.graph().add_input("", f32({2, 3}));  // fold-window-producers: a leaf's input
  b.input(0);
  b.input(1);
  b.copy_nodes();
  const Graph out = std::move(b).finish();
  ASSERT_TRUE(verify(out).ok()) << verify(out).to_string();
  EXPECT_EQ(out.value(first).name, "0");
  EXPECT_EQ(print_graph(out), R"(graph @k(%0: f32[2,3], %1: f32[2,3], %2: f32[2,3]) -> (f32[2,3]) {
  %3 = add(%1, %2) : f32[2,3] loc("k.wir":2:3)
  %y = tanh(%3) : f32[2,3] loc("k.wir":3:3)
  return %y
}
)");
}

}  // namespace
}  // namespace weft

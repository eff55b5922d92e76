#include "ir/json.h"
#include "ir/text_util.h"
#include "ir/text.h"
#include "ir/shape_rules.h"

#include <gtest/gtest.h>

#include <cmath>

namespace weft {
namespace {

Graph example_graph() {
  Graph g("mlp");
  g.set_loc({"model.wir", 2, 1, ""});
  ValueId x = g.add_input("x", {DType::f32, {4, 6}}, InputKind::data, {"model.cc", 3, 1, ""});
  ValueId w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
  ValueId n = g.add_input("n", {DType::i64, {}}, InputKind::state);
  ValueId h = g.add_node(Op::Matmul, {x, w}, {}, {"model.cc", 12, 5, "encoder > Linear(6->5)"},
                         Type{DType::f32, {4, 5}}, "h");
  ValueId p = g.add_node(Op::Softmax, {h}, {{"axis", int64_t{1}}}, {"model.cc", 13, 5, ""},
                         std::nullopt, "p");
  ValueId c = g.add_node(Op::Full, {},
                         {{"shape", IntList{2}},
                          {"value", -INFINITY},
                          {"dtype", DType::bf16}},
                         {}, Type{DType::bf16, {2}}, "c");
  ValueId gl = g.add_node(Op::Gelu, {x}, {{"approximate", std::string("q\"\\\n")}});
  ValueId r = g.add_node(Op::Sum, {gl}, {{"axes", IntList{}}, {"keepdims", true}});
  g.add_node(Op::Assign, {n, n});
  g.set_outputs({p, c, r});
  g.set_declared_output_types({Type{DType::f32, {4, 5}}, Type{DType::bf16, {2}}, Type{}});
  return g;
}

std::string import_error(std::string_view text) {
  StatusOr<Graph> g = graph_from_json(text, "g.json");
  return g.ok() ? "ok" : g.error().to_string();
}

TEST(JsonTest, RoundTrip) {
  Graph g = example_graph();
  std::string text = graph_to_json(g);
  StatusOr<Graph> back = graph_from_json(text, "g.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *back, &why)) << why;
  EXPECT_EQ(graph_to_json(*back), text);
  // Input locations survive too (structurally_equal does not compare them).
  EXPECT_EQ(back->inputs()[0].loc, (Location{"model.cc", 3, 1, ""}));
  EXPECT_EQ(back->loc(), (Location{"model.wir", 2, 1, ""}));  // the graph header's
  EXPECT_EQ(graph_to_json(*back, -1), graph_to_json(g, -1));
}

TEST(JsonTest, AllReduceRoundTrips) {
  Graph g("step");
  ValueId grad = g.add_input("grad", {DType::f32, {3}});
  g.add_output(g.add_node(Op::AllReduce, {grad}, {{"reduction", std::string("sum")}}, {},
                          Type{DType::f32, {3}}, "reduced"));
  std::string text = graph_to_json(g);
  EXPECT_NE(text.find("\"all_reduce\""), std::string::npos) << text;
  StatusOr<Graph> back = graph_from_json(text, "g.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *back, &why)) << why;
  EXPECT_EQ(back->node(0).str_attr("reduction"), "sum");
}

TEST(JsonTest, NanSurvives) {
  Graph g("n");
  ValueId x = g.add_input("x", {DType::f32, {2}});
  g.add_output(g.add_node(Op::Pad, {x},
                          {{"low", IntList{0}}, {"high", IntList{1}}, {"value", NAN}}));
  StatusOr<Graph> back = graph_from_json(graph_to_json(g), "n.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(std::isnan(back->nodes()[0].float_attr("value")));
}

TEST(JsonTest, Format) {
  Graph g("f");
  ValueId x = g.add_input("x", {DType::f32, {4}});
  g.add_output(g.add_node(Op::Softmax, {x}, {{"axis", int64_t{0}}}, {"m.cc", 2, 3, "a > b"},
                          Type{DType::f32, {4}}, "y"));
  EXPECT_EQ(graph_to_json(g, -1),
            R"({"version": 1, "name": "f", "inputs": [{"name": "x", "kind": "data", )"
            R"("type": {"dtype": "f32", "shape": [4]}}], "nodes": [{"op": "softmax", )"
            R"("operands": ["x"], "results": [{"name": "y", "type": {"dtype": "f32", )"
            R"("shape": [4]}}], "attrs": {"axis": {"int": 0}}, "loc": {"file": "m.cc", )"
            R"("line": 2, "col": 3, "path": "a > b"}}], "outputs": ["y"], )"
            R"("declared_output_types": []})"
            "\n");
  EXPECT_EQ(graph_to_json(g),
            R"({
  "version": 1,
  "name": "f",
  "inputs": [{"name": "x", "kind": "data", "type": {"dtype": "f32", "shape": [4]}}],
  "nodes": [
    {
      "op": "softmax",
      "operands": ["x"],
      "results": [{"name": "y", "type": {"dtype": "f32", "shape": [4]}}],
      "attrs": {"axis": {"int": 0}},
      "loc": {"file": "m.cc", "line": 2, "col": 3, "path": "a > b"}
    }
  ],
  "outputs": ["y"],
  "declared_output_types": []
}
)");
}

// A one-node document in which `node` replaces the node and `extra` adds fields.
std::string doc(std::string_view node, std::string_view top = R"("version": 1)") {
  return std::string("{") + std::string(top) +
         R"(, "name": "g", "inputs": [{"name": "x", "kind": "data", )"
         R"("type": {"dtype": "f32", "shape": [4]}}], "nodes": [)" +
         std::string(node) + R"(], "outputs": []})";
}

TEST(JsonErrorTest, IntegerWhereFloatIsExpected) {
  StatusOr<Graph> g = graph_from_json(
      doc(R"({"op": "full", "operands": [], "results": [{"name": "c"}], )"
          R"("attrs": {"shape": {"ints": [2]}, "value": {"int": 3}}})"),
      "g.json");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->nodes()[0].attrs.at("value"), Attribute(3.0));
}

TEST(JsonErrorTest, InvalidJson) {
  EXPECT_EQ(import_error("{\n  \"version\": 1,\n  \"name\": \n}"),
            "g.json:4:1: error: invalid JSON: syntax error while parsing value - unexpected '}'; "
            "expected '[', '{', or a literal");
}

TEST(JsonErrorTest, WrongVersion) {
  EXPECT_EQ(import_error(doc("", R"("version": 2)")),
            "g.json: error: version: unsupported version 2; this weft reads version 1");
}

TEST(JsonErrorTest, MissingField) {
  EXPECT_EQ(import_error(R"({"version": 1, "name": "g", "inputs": [], "nodes": []})"),
            "g.json: error: missing field 'outputs'");
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["x"]})")),
            "g.json: error: nodes[0]: missing field 'results'");
}

TEST(JsonErrorTest, GraphLocation) {
  EXPECT_EQ(import_error(doc("", R"("version": 1, "loc": {"file": "m.wir", "line": 2, "col": 1})")),
            "ok");
  EXPECT_EQ(import_error(doc("", R"("version": 1, "loc": {"file": "m.wir", "line": -2, "col": 1})")),
            "g.json: error: loc.line: out of range: -2");
  EXPECT_EQ(import_error(doc("", R"("version": 1, "loc": {"file": "m.wir"})")),
            "g.json: error: loc: missing field 'line'");
}

TEST(JsonErrorTest, UnknownField) {
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["x"], "results": [{"name": "y"}], )"
                             R"("attributes": {}})")),
            "g.json: error: nodes[0]: unknown field 'attributes'");
}

TEST(JsonErrorTest, WrongFieldType) {
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": "x", "results": []})")),
            "g.json: error: nodes[0].operands: expected an array, found string");
  EXPECT_EQ(import_error(doc("", R"("version": "1")")),
            "g.json: error: version: expected an integer, found string");
  EXPECT_EQ(import_error(R"({"version": 1, "name": "g", "inputs": [{"name": "x", "kind": "data",)"
                         R"( "type": {"dtype": "f32", "shape": [4.5]}}], "nodes": [],)"
                         R"( "outputs": []})"),
            "g.json: error: inputs[0].type.shape[0]: expected an integer, found number");
  EXPECT_EQ(import_error("[1, 2]"), "g.json: error: expected an object, found array");
}

TEST(JsonErrorTest, UnknownOp) {
  EXPECT_EQ(import_error(doc(R"({"op": "matmull", "operands": ["x", "x"], "results": []})")),
            "g.json: error: nodes[0].op: unknown op 'matmull'; did you mean 'matmul'?");
}

TEST(JsonErrorTest, UnknownValue) {
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["z"], "results": [{"name": "y"}]})")),
            "g.json: error: nodes[0].operands[0]: use of undefined value '%z'");
  EXPECT_EQ(import_error(R"({"version": 1, "name": "g", "inputs": [], "nodes": [],)"
                         R"( "outputs": ["y"]})"),
            "g.json: error: outputs[0]: use of undefined value '%y'");
}

TEST(JsonErrorTest, DuplicateValue) {
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["x"], "results": [{"name": "x"}]})")),
            "g.json: error: nodes[0].results[0].name: value '%x' is defined twice");
}

// A key given twice in one object is refused where it repeats (nlohmann kept the last).
TEST(JsonErrorTest, DuplicateKey) {
  EXPECT_EQ(import_error("{\"version\": 1,\n \"name\": \"g\", \"name\": \"h\", \"inputs\": [], \"nodes\": [],"
                         " \"outputs\": []}"),
            "g.json:2:15: error: invalid JSON: the key \"name\" appears twice in one object; remove one "
            "(JSON readers keep either)");
  // The same key in two objects, or as a string value, is fine.
  EXPECT_EQ(find_duplicate_json_key(R"({"a": {"a": 1}, "b": ["a", "a"], "c": {"a": 2}})"), std::nullopt);
  EXPECT_EQ(find_duplicate_json_key(R"({"a": [{"k": 1, "k": 2}]})"), 16u);
}

TEST(JsonErrorTest, OperandAndResultCounts) {
  EXPECT_EQ(import_error(doc(R"({"op": "add", "operands": ["x"], "results": [{"name": "y"}]})")),
            "g.json: error: nodes[0].operands: 'add' takes 2 operands, but 1 was given");
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["x"], "results": []})")),
            "g.json: error: nodes[0].results: 'neg' has 1 result(s), but 0 were given");
  // #31: the former one-result attention_grad (with `wrt`) is refused, naming the new form.
  EXPECT_EQ(import_error(doc(R"({"op": "attention_grad", "operands": ["x", "x", "x", "x"],)"
                             R"( "results": [{"name": "dq"}], "attrs": {"scale": 0.5,)"
                             R"( "wrt": "q"}})")),
            "g.json: error: nodes[0].results: 'attention_grad' has 3 results, but 1 was named; "
            "write '%dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy[, %mask]) {scale=..., "
            "causal=...}' (y: attention's result, dy: its cotangent); the former one-result "
            "form with 'wrt' is gone");
}

// attention_grad's three results survive the JSON form.
TEST(JsonTest, AttentionGradThreeResultsRoundTrip) {
  Graph g("a");
  const Type q{DType::f32, {5, 4}}, k{DType::f32, {7, 4}}, v{DType::f32, {7, 3}}, y{DType::f32, {5, 3}};
  std::vector<ValueId> in = {g.add_input("q", q), g.add_input("k", k), g.add_input("v", v),
                             g.add_input("y", y), g.add_input("dy", y)};
  StatusOr<ValueId> dq = add_typed_node(g, Op::AttentionGrad, in, {{"scale", 0.5}}, {});
  ASSERT_TRUE(dq.ok()) << dq.error().to_string();
  for (ValueId r : g.node(0).results) g.add_output(r);
  const std::string text = graph_to_json(g);
  StatusOr<Graph> back = graph_from_json(text, "g.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *back, &why)) << why;
  ASSERT_EQ(back->node(0).results.size(), 3u);
  EXPECT_EQ(back->type(back->node(0).results[1]), k);
  EXPECT_EQ(graph_to_json(*back), text);
}

TEST(JsonErrorTest, Attributes) {
  auto softmax = [](std::string_view attrs) {
    return doc(std::string(R"({"op": "softmax", "operands": ["x"], "results": [{"name": "y"}],)") +
               R"( "attrs": )" + std::string(attrs) + "}");
  };
  EXPECT_EQ(import_error(softmax(R"({"axes": {"ints": [0]}})")),
            "g.json: error: nodes[0].attrs.axes: 'softmax' has no attribute 'axes'; it accepts "
            "axis");
  EXPECT_EQ(import_error(softmax(R"({"axis": {"float": 0.5}})")),
            "g.json: error: nodes[0].attrs.axis: attribute 'axis' of 'softmax' must be an int, "
            "but 0.5 is a float");
  EXPECT_EQ(import_error(softmax(R"({"axis": 1})")),
            "g.json: error: nodes[0].attrs.axis: expected an object with one kind tag such as "
            "{\"int\": 3} or {\"floats\": [0.5]}, found 1");
  EXPECT_EQ(import_error(softmax(R"({"axis": {"integer": 1}})")),
            "g.json: error: nodes[0].attrs.axis: unknown attribute kind 'integer'; expected one of "
            "int, float, str, bool, dtype, ints, floats");
  EXPECT_EQ(import_error(softmax(R"({"axis": {"int": 1.5}})")),
            "g.json: error: nodes[0].attrs.axis.int: expected an integer, found number");
  EXPECT_EQ(import_error(doc(R"({"op": "reshape", "operands": ["x"], "results": [{"name": "y"}], )"
                             R"("attrs": {"shape": {"floats": [4, "-inf"]}}})")),
            "g.json: error: nodes[0].attrs.shape: attribute 'shape' of 'reshape' must be an int "
            "list, but [4.0, -inf] is a float list");
  EXPECT_EQ(import_error(doc(R"({"op": "reshape", "operands": ["x"], "results": [{"name": "y"}]})")),
            "g.json: error: nodes[0]: 'reshape' requires attribute 'shape' (ints)");
  EXPECT_EQ(import_error(doc(R"({"op": "pad", "operands": ["x"], "results": [{"name": "y"}], )"
                             R"("attrs": {"low": {"ints": [0]}, "high": {"ints": [0]}, )"
                             R"("value": {"float": "infinity"}}})")),
            "g.json: error: nodes[0].attrs.value.float: expected a number or \"nan\", \"inf\", "
            "\"-inf\", found \"infinity\"");
}

TEST(JsonErrorTest, TypesKindsAndLocations) {
  EXPECT_EQ(import_error(R"({"version": 1, "name": "g", "inputs": [{"name": "x", "kind": "data",)"
                         R"( "type": {"dtype": "f33", "shape": []}}], "nodes": [], "outputs": []})"),
            "g.json: error: inputs[0].type.dtype: unknown dtype 'f33'; expected one of f32, f64, "
            "f16, bf16, i32, i64, u8, bool");
  EXPECT_EQ(import_error(R"({"version": 1, "name": "g", "inputs": [{"name": "x", "kind": "parm",)"
                         R"( "type": {"dtype": "f32", "shape": []}}], "nodes": [], "outputs": []})"),
            "g.json: error: inputs[0].kind: unknown input kind 'parm'; expected 'data', 'param' "
            "or 'state'");
  EXPECT_EQ(import_error(doc(R"({"op": "neg", "operands": ["x"], "results": [{"name": "y"}], )"
                             R"("loc": {"file": "m.cc", "line": "3", "col": 1}})")),
            "g.json: error: nodes[0].loc.line: expected an integer, found string");
  EXPECT_EQ(import_error(doc(R"({"op": "assign", "operands": ["x", "x"], "results": []})")),
            "g.json: error: nodes[0].operands[0]: 'assign' target '%x' must be a param or state "
            "input, but it is a data input");
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(JsonTest, FusedBodyRoundTrips) {
  StatusOr<Graph> g = parse_graph(
      "graph @g(%x: f32[4,5], %b: f32[5]) {\n"
      "  %y = fused(%x, %b) : f32[4,5] ({\n"
      "    ^body(%a: f32[4,5], %c: f32[5]):\n"
      "      %0 = add(%a, %c) : f32[4,5]\n"
      "      return %0\n"
      "  })\n"
      "  return %y\n"
      "}\n", "f.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  StatusOr<Graph> back = graph_from_json(graph_to_json(*g), "f.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *back, &why)) << why;
  StatusOr<Graph> two = parse_graph(
      "graph @g(%x: f32[4]) {\n"
      "  %a, %b = fused(%x) : f32[4], f32[4] ({\n"
      "    ^body(%y: f32[4]):\n"
      "      %0 = neg(%y) : f32[4]\n"
      "      return %0, %y\n"
      "  })\n"
      "  return %a, %b\n"
      "}\n", "f.wir");
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  StatusOr<Graph> two_back = graph_from_json(graph_to_json(*two), "f.json");
  ASSERT_TRUE(two_back.ok()) << two_back.error().to_string();
  EXPECT_TRUE(structurally_equal(*two, *two_back, &why)) << why;
  StatusOr<Graph> bad = graph_from_json(
      R"({"version": 1, "name": "g", "inputs": [{"name": "x", "kind": "data", "type": {"dtype": "f32", "shape": [4]}}],
          "nodes": [{"op": "fused", "operands": ["x"], "results": [{"name": "y"}]}],
          "outputs": ["y"]})", "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "nodes[0]: 'fused' needs a \"body\" graph");
}

/// `depth` 'fused' nodes, each in the body of the one before, every result typed (the
/// deepest JSON the writer makes for that depth): the .wir text.
std::string nested_fused_text(int depth) {
  std::string text = "graph @g(%x: f32[4]) -> (f32[4]) {\n  %y = fused(%x) : f32[4] ({\n";
  for (int i = 1; i < depth; ++i) text += "^b(%a: f32[4]):\n  %y = fused(%a) : f32[4] ({\n";
  text += "^b(%a: f32[4]):\n  %n = neg(%a) : f32[4]\n  return %n\n";
  for (int i = 1; i < depth; ++i) text += "})\n  return %y\n";
  return text + "})\n  return %y\n}\n";
}

/// A JSON graph whose bodies nest `depth` deep, written by hand: the innermost body takes
/// and returns nothing (the reader refuses that once it has read the body), so its JSON is
/// as shallow as a body can be.
std::string nested_fused_json(int depth) {
  const std::string type = R"({"dtype": "f32", "shape": [4]})";
  std::string json = R"({"version": 1, "name": "b", "inputs": [], "nodes": [], "outputs": []})";
  for (int level = depth; level >= 1; --level) {
    const std::string input = level == 1 ? "x" : "a";
    const bool innermost = level == depth;
    json = R"({"version": 1, "name": "b", "inputs": [{"name": ")" + input + R"(", "kind": "data", "type": )" +
           type + R"(}], "nodes": [{"op": "fused", "operands": [")" + input + R"("], "results": [{"name": "y")" +
           (innermost ? "" : R"(, "type": )" + type) + R"(}], "body": )" + json + R"(}], "outputs": ["y"]})";
  }
  return json;
}

// `weftc dump --format=json` wrote graphs that the reader refused from 84 nested bodies up
// (JSON nesting was capped at 256 levels, 3 per body): the cap is now what the writer
// needs for the IR's own limit, kMaxBodyDepth bodies, and not a level more.
TEST(JsonTest, BodiesNestedToTheIrLimitRoundTrip) {
  StatusOr<Graph> g = parse_graph(nested_fused_text(kMaxBodyDepth), "deep.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::string json = graph_to_json(*g);
  EXPECT_TRUE(find_excess_nesting(json, 774).has_value());  // the writer's deepest
  EXPECT_FALSE(find_excess_nesting(json, 775).has_value());
  StatusOr<Graph> back = graph_from_json(json, "deep.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(*g, *back, &why)) << why;
  StatusOr<Graph> deep84 = graph_from_json(graph_to_json(*parse_graph(nested_fused_text(84), "84.wir")), "84.json");
  EXPECT_TRUE(deep84.ok()) << deep84.error().to_string();
}

TEST(JsonErrorTest, BodiesNestedPastTheIrLimitAreRefused) {
  // A body more than the writer can write: the JSON is too deep.
  const std::string too_deep = R"({"version": 1, "name": "g", "inputs": [{"name": "x", "kind": "data", )"
                               R"("type": {"dtype": "f32", "shape": [4]}}], "nodes": [{"op": "fused", )"
                               R"("operands": ["x"], "results": [{"name": "y", "type": {"dtype": "f32", )"
                               R"("shape": [4]}}], "body": )" +
                               graph_to_json(*parse_graph(nested_fused_text(kMaxBodyDepth), "deep.wir"), -1) +
                               R"(}], "outputs": ["y"]})";
  // Level 776 is first reached at the shape of the innermost body's input.
  const size_t shape = too_deep.find('[', too_deep.find("\"shape\"", too_deep.rfind("\"body\"")));
  EXPECT_EQ(import_error(too_deep), "g.json:1:" + std::to_string(shape + 1) +
                                        ": error: invalid JSON: nested deeper than 775 levels; weft reads graphs "
                                        "whose bodies nest at most 256 deep");
  // One body too deep in few JSON levels: the reader counts bodies too.
  std::string message = "nodes[0]: 'fused' bodies nested more than 256 deep; weft reads at most 256 levels";
  for (int level = 0; level < kMaxBodyDepth; ++level) message = "nodes[0].body." + message;
  EXPECT_EQ(import_error(nested_fused_json(kMaxBodyDepth + 1)), "g.json: error: " + message);
  // Brackets alone.
  EXPECT_EQ(import_error(std::string(4000, '[')),
            "g.json:1:776: error: invalid JSON: nested deeper than 775 levels; weft reads graphs whose bodies "
            "nest at most 256 deep");
}

}  // namespace
}  // namespace weft

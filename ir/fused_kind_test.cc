// Tests of the fused kinds (ir/fused_kind.h): their names, the refusal of an unknown kind
// by the parser, the JSON importer and the verifier, and the verifier's check that a
// fused node's kind agrees with its body.
#include "ir/fused_kind.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/json.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace weft {
namespace {

/// One fused node over %x: f32[8,16] with `attrs` and the body statements `body`
/// (the body's input is %a), returning `ret`.
std::string fused_graph(const std::string& attrs, const std::string& type,
                        const std::string& body, const std::string& ret) {
  return "graph @g(%x: f32[8,16]) {\n"
         "  %y = fused(%x)" + attrs + " : " + type + " ({\n"
         "    ^body(%a: f32[8,16]):\n" + body + "      return " + ret + "\n"
         "  })\n"
         "  return %y\n"
         "}\n";
}

const std::string kElementwise = "      %t0 = exp(%a) : f32[8,16]\n";
const std::string kReduction =
    "      %t0 = exp(%a) : f32[8,16]\n      %t1 = sum(%t0) {axes=[-1]} : f32[8]\n";
const std::string kRow =  // softmax's second half: a per-row sum its division consumes
    "      %t0 = exp(%a) : f32[8,16]\n"
    "      %t1 = sum(%t0) {axes=[-1], keepdims=true} : f32[8,1]\n"
    "      %t2 = div(%t0, %t1) : f32[8,16]\n";

Graph parse(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "k.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : Graph("empty");
}

std::string verify_error(const Graph& g) {
  Status s = verify(g);
  return s.ok() ? "ok" : s.error().to_string();
}

TEST(FusedKind, NamesRoundTrip) {
  for (FusedKind k : {FusedKind::elementwise, FusedKind::reduction, FusedKind::row,
                      FusedKind::contraction}) {
    EXPECT_EQ(parse_fused_kind(fused_kind_name(k)), k);
  }
  EXPECT_EQ(fused_kind_name(FusedKind::row), "row");
  EXPECT_FALSE(parse_fused_kind("rows").has_value());
  EXPECT_FALSE(check_fused_kind_name("contraction").has_value());
}

TEST(FusedKind, ReadFromTheNodeWithElementwiseTheDefault) {
  Graph g = parse(fused_graph("", "f32[8,16]", kElementwise, "%t0"));
  EXPECT_EQ(fused_kind(g.node(0)), FusedKind::elementwise);
  Graph r = parse(fused_graph(" {kind=\"row\"}", "f32[8,16]", kRow, "%t2"));
  EXPECT_EQ(fused_kind(r.node(0)), FusedKind::row);
}

// Elementwise is the default: setting it leaves the attribute out, so the printed node
// reads as the fuser has always written it.
TEST(FusedKind, SetWritesTheAttributeOnlyWhenItIsNotTheDefault) {
  Graph g = parse(fused_graph(" {kind=\"row\"}", "f32[8,16]", kRow, "%t2"));
  set_fused_kind(g.node(0), FusedKind::reduction);
  EXPECT_EQ(g.node(0).str_attr("kind"), "reduction");
  set_fused_kind(g.node(0), FusedKind::elementwise);
  EXPECT_FALSE(g.node(0).attrs.count("kind"));
  EXPECT_EQ(print_graph(g).find("kind="), std::string::npos) << print_graph(g);
}

TEST(FusedKind, TheBodysStructureHasOneKind) {
  EXPECT_EQ(body_fused_kind(*parse(fused_graph("", "f32[8,16]", kElementwise, "%t0")).node(0).body),
            FusedKind::elementwise);
  EXPECT_EQ(body_fused_kind(*parse(fused_graph(" {kind=\"reduction\"}", "f32[8]", kReduction, "%t1"))
                                 .node(0)
                                 .body),
            FusedKind::reduction);
  EXPECT_EQ(body_fused_kind(*parse(fused_graph(" {kind=\"row\"}", "f32[8,16]", kRow, "%t2")).node(0).body),
            FusedKind::row);
  // A reduction whose value also leaves the kernel beside another result: a row kernel.
  EXPECT_EQ(body_fused_kind(*parse("graph @g(%x: f32[8,16]) {\n"
                                   "  %y, %e = fused(%x) {kind=\"row\"} : f32[8], f32[8,16] ({\n"
                                   "    ^body(%a: f32[8,16]):\n" + kReduction +
                                   "      return %t1, %t0\n  })\n  return %y, %e\n}\n")
                                 .node(0)
                                 .body),
            FusedKind::row);
}

// The parser, the JSON importer and the verifier refuse an unknown kind alike.
TEST(FusedKind, AnUnknownKindIsRefused) {
  StatusOr<Graph> bad = parse_graph(fused_graph(" {kind=\"rows\"}", "f32[8,16]", kRow, "%t2"),
                                    "bad.wir");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            "bad.wir:2:24: error: unknown kind 'rows' of 'fused'; the kinds are elementwise, "
            "reduction, row, contraction");

  Graph g = parse(fused_graph(" {kind=\"row\"}", "f32[8,16]", kRow, "%t2"));
  std::string json = graph_to_json(g);
  const size_t at = json.find("\"row\"");
  ASSERT_NE(at, std::string::npos) << json;
  json.replace(at, 5, "\"rows\"");
  StatusOr<Graph> from_json = graph_from_json(json, "bad.json");
  ASSERT_FALSE(from_json.ok());
  EXPECT_NE(from_json.error().to_string().find(
                "unknown kind 'rows' of 'fused'; the kinds are elementwise, reduction, row, "
                "contraction"),
            std::string::npos)
      << from_json.error().to_string();

  g.node(0).attrs["kind"] = std::string("rows");  // as a buggy pass would write it
  EXPECT_EQ(verify_error(g),
            "k.wir:2:3: error: unknown kind 'rows' of 'fused'; the kinds are elementwise, "
            "reduction, row, contraction");
}

// A kind that disagrees with the body is refused, naming the body's kind.
TEST(FusedKind, AKindThatDisagreesWithTheBodyIsRefused) {
  EXPECT_EQ(verify_error(parse(fused_graph("", "f32[8,16]", kElementwise, "%t0"))), "ok");
  EXPECT_EQ(verify_error(parse(fused_graph(" {kind=\"reduction\"}", "f32[8,16]", kElementwise, "%t0"))),
            "k.wir:2:3: error: fused {kind=\"reduction\"}: the body has the structure of kind "
            "\"elementwise\"; write {kind=\"elementwise\"} (ir/fused_kind.h)");
  EXPECT_EQ(verify_error(parse(fused_graph("", "f32[8,16]", kRow, "%t2"))),
            "k.wir:2:3: error: fused {kind=\"elementwise\"}: the body has the structure of kind "
            "\"row\"; write {kind=\"row\"} (ir/fused_kind.h)");
  EXPECT_EQ(verify_error(parse(fused_graph(" {kind=\"row\"}", "f32[8]", kReduction, "%t1"))),
            "k.wir:2:3: error: fused {kind=\"row\"}: the body has the structure of kind "
            "\"reduction\"; write {kind=\"reduction\"} (ir/fused_kind.h)");
  EXPECT_EQ(verify_error(parse(fused_graph(" {kind=\"contraction\"}", "f32[8,16]", kRow, "%t2"))),
            "k.wir:2:3: error: fused {kind=\"contraction\"}: the body must start with a "
            "contraction of its first two inputs (passes/fuse_contraction_epilogue.h)");
}

TEST(FusedKind, AContractionIsTheFirstNodeOfAContractionBody) {
  const std::string text =
      "graph @g(%x: f32[4,4], %w: f32[4,4]) {\n"
      "  %y = fused(%x, %w)KIND : f32[4,4] ({\n"
      "    ^body(%a: f32[4,4], %b: f32[4,4]):\n"
      "      %t0 = matmul(%a, %b) : f32[4,4]\n"
      "      %t1 = relu(%t0) : f32[4,4]\n"
      "      return %t1\n"
      "  })\n"
      "  return %y\n"
      "}\n";
  auto with = [&](const std::string& kind) {
    std::string t = text;
    t.replace(t.find("KIND"), 4, kind);
    return parse(t);
  };
  EXPECT_EQ(verify_error(with(" {kind=\"contraction\"}")), "ok");
  EXPECT_EQ(verify_error(with("")),
            "k.wir:2:3: error: fused {kind=\"elementwise\"}: the body has the structure of kind "
            "\"contraction\"; write {kind=\"contraction\"} (ir/fused_kind.h)");
}

}  // namespace
}  // namespace weft

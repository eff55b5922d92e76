// The text parser's errors (ir/text.h): one test per message, pinning its text and
// line:col. The printer and parser's other tests are in text_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "ir/text.h"
#include "ir/text_testing.h"

namespace weft {
namespace {

// ---- Parse errors: one test per message, pinning text and line:col ----------------------

TEST(ParseErrorTest, UnexpectedEndOfFile) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[2]) {\n  %y = neg(%x)\n  return %y\n"),
            "bad.wir:4:1: error: unexpected end of file; expected '}' to close graph @g after "
            "its 'return'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[2]) {\n  %y = neg(%x"),
            "bad.wir:2:14: error: unexpected end of file; expected ',' or ')' after an operand "
            "of 'neg'");
  EXPECT_EQ(parse_error(""), "bad.wir:1:1: error: unexpected end of file; expected 'graph' to "
                             "begin a graph");
}

TEST(ParseErrorTest, UnknownOp) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4,6], %w: f32[6,5]) {\n"
                        "  # matmul, misspelt\n"
                        "  %h = matmull(%x, %w)\n"
                        "  return %h\n}"),
            "bad.wir:3:8: error: unknown op 'matmull'; did you mean 'matmul'?");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %h = frobnicate(%x)\n  return %h\n}"),
            "bad.wir:2:8: error: unknown op 'frobnicate'");
}

TEST(ParseErrorTest, WrongNumberOfOperands) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = add(%x, %x, %x)\n  return %y\n}"),
            "bad.wir:2:8: error: 'add' takes 2 operands, but 3 were given");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg()\n  return %y\n}"),
            "bad.wir:2:8: error: 'neg' takes 1 operand, but 0 were given");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = concat() {axis=0}\n  return %y\n}"),
            "bad.wir:2:8: error: 'concat' takes at least 1 operand, but none were given");
}

TEST(ParseErrorTest, UndefinedValue) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = add(%x, %z)\n  return %y\n}"),
            "bad.wir:2:16: error: use of undefined value '%z'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x)\n  return %q\n}"),
            "bad.wir:3:10: error: use of undefined value '%q'");
}

TEST(ParseErrorTest, ValueDefinedTwice) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x)\n  %y = neg(%y)\n  return %y\n}"),
            "bad.wir:3:3: error: value '%y' is defined twice; first defined at 2:3");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4], %x: f32[2]) {\n  return %x\n}"),
            "bad.wir:1:22: error: value '%x' is defined twice; first defined at 1:10");
}

TEST(ParseErrorTest, UnknownAttribute) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = sum(%x) {axis=[0]}\n  return %y\n}"),
            "bad.wir:2:17: error: 'sum' has no attribute 'axis'; it accepts axes, keepdims");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x) {axis=0}\n  return %y\n}"),
            "bad.wir:2:17: error: 'neg' takes no attributes, but 'axis' was given");
}

TEST(ParseErrorTest, AttributeOfWrongKind) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = softmax(%x) {axis=1.5}\n  return %y\n}"),
            "bad.wir:2:26: error: attribute 'axis' of 'softmax' must be an int, but 1.5 is a "
            "float");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = reshape(%x) {shape=\"4\"}\n"
                        "  return %y\n}"),
            "bad.wir:2:27: error: attribute 'shape' of 'reshape' must be an int list, but \"4\" "
            "is a string");
}

TEST(ParseErrorTest, FloatListWhereIntListIsExpected) {
  // Any float element makes a float list, which the int-list attribute rejects.
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = reshape(%x) {shape=[1, 0.5, inf]}\n"
                        "  return %y\n}"),
            "bad.wir:2:27: error: attribute 'shape' of 'reshape' must be an int list, but "
            "[1.0, 0.5, inf] is a float list");
}

TEST(ParseErrorTest, MissingRequiredAttribute) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = reshape(%x)\n  return %y\n}"),
            "bad.wir:2:8: error: 'reshape' requires attribute 'shape' (ints)");
}

TEST(ParseErrorTest, AttributeSyntax) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = reshape(%x) {shape=[4,]}\n"
                        "  return %y\n}"),
            "bad.wir:2:29: error: trailing ',' in the list; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = softmax(%x) {axis=0,}\n  return %y\n}"),
            "bad.wir:2:27: error: trailing ',' in the attributes; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = softmax(%x) {axis=1x}\n  return %y\n}"),
            "bad.wir:2:26: error: malformed number '1x'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = softmax(%x) {axis=one}\n  return %y\n}"),
            "bad.wir:2:26: error: expected an attribute value (a number, string, true/false, "
            "dtype or list), found 'one'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n"
                        "  %y = softmax(%x) {axis=0, axis=1}\n  return %y\n}"),
            "bad.wir:2:29: error: attribute 'axis' is given twice");
}

TEST(ParseErrorTest, BadTypes) {
  EXPECT_EQ(parse_error("graph @g(%x: f33[4]) {\n  return %x\n}"),
            "bad.wir:1:14: error: unknown dtype 'f33'; expected one of f32, f64, f16, bf16, i32, "
            "i64, u8, bool");
  EXPECT_EQ(parse_error("graph @g(%x: f32) {\n  return %x\n}"),
            "bad.wir:1:17: error: expected '[' and the dimensions after dtype 'f32' (a scalar is "
            "'f32[]'), found ')'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4,-1]) {\n  return %x\n}"),
            "bad.wir:1:20: error: expected a dimension size (a non-negative integer), found '-1'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4,]) {\n  return %x\n}"),
            "bad.wir:1:19: error: trailing ',' in the dimensions; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x) : f32[4\n  return %y\n}"),
            "bad.wir:3:3: error: expected ',' or ']' after a dimension, found 'return'");
  EXPECT_EQ(parse_error("graph @g(%x) {\n  return %x\n}"),
            "bad.wir:1:12: error: expected ':' and a type after input '%x', found ')'");
}

TEST(ParseErrorTest, AssignTargetMustBeParamOrState) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4], %v: f32[4]) {\n  assign(%x, %v)\n  return\n}"),
            "bad.wir:2:10: error: 'assign' target '%x' must be a param or state input, but it "
            "is a data input");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4] {state}) {\n  %y = neg(%x)\n  assign(%y, %x)\n"
                        "  return\n}"),
            "bad.wir:3:10: error: 'assign' target '%y' must be a param or state input, but it "
            "is the result of 'neg'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4] {parm}) {\n  return\n}"),
            "bad.wir:1:22: error: unknown input kind 'parm'; expected 'param' or 'state'");
}

TEST(ParseErrorTest, ResultNames) {
  EXPECT_EQ(parse_error("graph @g(%w: f32[4] {param}) {\n  %a = assign(%w, %w)\n  return\n}"),
            "bad.wir:2:3: error: 'assign' has no result; remove '%a ='");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  neg(%x)\n  return\n}"),
            "bad.wir:2:3: error: 'neg' has a result; name it: '%name = neg(...)'");
  EXPECT_EQ(parse_error("graph @g(%w: f32[4] {param}) {\n  assign(%w, %w) : f32[4]\n  return\n}"),
            "bad.wir:2:18: error: 'assign' has no result, so it takes no ': type'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y neg(%x)\n  return %y\n}"),
            "bad.wir:2:6: error: expected '=' after '%y', found 'neg'");
}

TEST(ParseErrorTest, UnterminatedString) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = gelu(%x) {approximate=\"tanh}\n"
                        "  return %y\n}"),
            "bad.wir:2:30: error: unterminated string; add the closing '\"' (a string may not "
            "span lines; write a newline as \\n)");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = gelu(%x) {approximate=\"a\\tb\"}\n"
                        "  return %y\n}"),
            "bad.wir:2:32: error: unknown escape sequence '\\t' in string; use \\\", \\\\ or \\n");
}

TEST(ParseErrorTest, GarbageAfterGraph) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  return %x\n}\ngraph @h() {\n  return\n}\n"),
            "bad.wir:4:1: error: unexpected 'graph' after the end of graph @g; a file holds "
            "exactly one graph");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  return %x\n} }"),
            "bad.wir:3:3: error: unexpected '}' after the end of graph @g; a file holds exactly "
            "one graph");
}

TEST(ParseErrorTest, TrailingCommas) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4],) {\n  return %x\n}"),
            "bad.wir:1:20: error: trailing ',' in the input list; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = add(%x, %x,)\n  return %y\n}"),
            "bad.wir:2:18: error: trailing ',' in the operands; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  return %x,\n}"),
            "bad.wir:2:12: error: trailing ',' in the return values; remove it");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) -> (f32[4],) {\n  return %x\n}"),
            "bad.wir:1:32: error: trailing ',' in the output types; remove it");
}

TEST(ParseErrorTest, Bodies) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x) : f32[4] ({\n    return %x\n"
                        "  })\n  return %y\n}"),
            "bad.wir:2:25: error: 'neg' takes no body; only 'fused' and 'scan' have a '({ ... })' "
            "region");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = fused(%x) : f32[4]\n  return %y\n}"),
            "bad.wir:3:3: error: expected '({' to begin the body of 'fused', found 'return'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = fused(%x) : f32[4] ({\n    ^body(%a: "
                        "f32[4]):\n  })\n  return %y\n}"),
            "bad.wir:4:3: error: the body of 'fused' has no 'return'; end it with 'return %value'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = fused(%x) : f32[4] ({\n    %a = neg(%x)"),
            "bad.wir:3:5: error: expected a block label such as '^body(%x: f32[4]):', found '%a'");
}

/// `depth` 'fused' (or `op`) nodes, each in the body of the one before; node number k is
/// on line 2k.
std::string nested_fused(int depth, const std::string& op = "fused") {
  const std::string attrs = op == "scan" ? " {carries=1, length=1}" : "";
  std::string text = "graph @g(%x: f32[4]) {\n  %y = " + op + "(%x)" + attrs + " : f32[4] ({\n";
  for (int i = 1; i < depth; ++i) text += "^b(%a: f32[4]):\n  %y = " + op + "(%a)" + attrs + " : f32[4] ({\n";
  text += "^b(%a: f32[4]):\n  %n = neg(%a)\n  return %n\n";
  for (int i = 1; i < depth; ++i) text += "})\n  return %y\n";
  return text + "})\n  return %y\n}\n";
}

// Nesting is capped as the JSON reader caps it: 4000 levels used to overflow the stack.
TEST(ParseErrorTest, DeeplyNestedBodiesAreRefusedNotAStackOverflow) {
  StatusOr<Graph> g = parse_graph(nested_fused(256), "deep.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  const std::string refused =
      "bad.wir:514:27: error: the body of this 'fused' is nested more than 256 deep; weft reads at "
      "most 256 levels";
  EXPECT_EQ(parse_error(nested_fused(257)), refused);
  EXPECT_EQ(parse_error(nested_fused(4000)), refused);
  // #28: loops are named as loops.
  EXPECT_TRUE(parse_graph(nested_fused(256, "scan"), "deep.wir").ok());
  EXPECT_EQ(parse_error(nested_fused(257, "scan")),
            "bad.wir:514:48: error: the body of this 'scan' is nested more than 256 deep; weft reads at "
            "most 256 levels");
}

// A .wir file is UTF-8: two names that differ only in invalid bytes used to parse, and
// `weftc dump --format=json` turned both into the same name, which weftc then refused.
TEST(ParseErrorTest, InvalidUtf8IsRefusedWhereItIs) {
  EXPECT_EQ(parse_error("graph @g(%\"a\xFF\": f32[2]) {\n  return %\"a\xFF\"\n}"),
            "bad.wir:1:13: error: invalid UTF-8 (byte 0xFF); a .wir file is UTF-8 text");
  EXPECT_EQ(parse_error("# caf\xC3\xA9\ngraph @g(%x: f32[2]) {\n  return %x\n}"), "ok");
}

TEST(ParseErrorTest, MiscellaneousSyntax) {
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x) $\n  return %y\n}"),
            "bad.wir:2:16: error: unexpected character '$'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n}"),
            "bad.wir:2:1: error: graph @g has no 'return'; end its body with 'return %value, "
            "...'");
  EXPECT_EQ(parse_error("graph g() {\n  return\n}"),
            "bad.wir:1:7: error: expected a graph name such as '@main', found 'g'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%x) loc(\"a.cc\":3)\n  return %y\n}"),
            "bad.wir:2:28: error: expected ':' in the location, found ')'");
  EXPECT_EQ(parse_error("graph @g(%x: f32[4]) {\n  %y = neg(%\"\")\n  return %y\n}"),
            "bad.wir:2:12: error: expected a name after '%'");
}

}  // namespace
}  // namespace weft

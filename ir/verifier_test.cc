#include "ir/verifier.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

Location at(int line) { return Location{"model.wir", line, 3, ""}; }

/// A graph with `%x: f32[4,6]` (data), `%w: f32[6,5]` (param), `%s: f32[4,5]` (state).
struct Fixture {
  Graph g{"f"};
  ValueId x = g.add_input("x", {DType::f32, {4, 6}});
  ValueId w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
  ValueId s = g.add_input("s", {DType::f32, {4, 5}}, InputKind::state);
};

std::string verify_message(const Graph& g) {
  Status status = verify(g);
  return status.ok() ? "ok" : status.error().to_string();
}

TEST(VerifierTest, AcceptsAWellFormedGraph) {
  Fixture f;
  ValueId h = f.g.add_node(Op::Matmul, {f.x, f.w}, {}, at(2), Type{DType::f32, {4, 5}});
  ValueId y = f.g.add_node(Op::Full, {}, {{"shape", IntList{4, 5}}, {"value", int64_t{0}}});
  f.g.add_node(Op::Assign, {f.s, f.g.add_node(Op::Add, {h, y})});
  f.g.add_output(h);
  EXPECT_EQ(verify_message(f.g), "ok");  // int for float `value` is accepted
}

TEST(VerifierTest, OperandCount) {
  Fixture f;
  f.g.add_node(Op::Add, {f.x}, {}, at(2));
  EXPECT_EQ(verify_message(f.g), "model.wir:2:3: error: 'add' takes 2 operands, but 1 was given");
  Fixture v;
  v.g.add_node(Op::Concat, {}, {{"axis", int64_t{0}}}, at(5));
  EXPECT_EQ(verify_message(v.g),
            "model.wir:5:3: error: 'concat' takes at least 1 operand, but none were given");
}

TEST(VerifierTest, OperandsMustBeDefinedEarlier) {
  Fixture f;
  ValueId a = f.g.add_node(Op::Exp, {f.x}, {}, at(2));
  ValueId b = f.g.add_node(Op::Neg, {a}, {}, at(3));
  f.g.node(0).operands[0] = b;
  EXPECT_EQ(verify_message(f.g),
            "model.wir:2:3: error: exp: operand %1 is used before it is defined (by node 1)");
  f.g.node(0).operands[0] = 42;
  EXPECT_EQ(verify_message(f.g),
            "model.wir:2:3: error: exp: operand 0 refers to value #42, which does not exist");

  Fixture r;
  ValueId c = r.g.add_node(Op::Exp, {r.x}, {}, at(2));
  r.g.add_node(Op::Neg, {c}, {}, at(3));
  r.g.remove_nodes({false, true});
  EXPECT_EQ(verify_message(r.g),
            "model.wir:3:3: error: neg: operand %0 is not defined (its producer was removed)");
}

TEST(VerifierTest, Attributes) {
  Fixture f;
  f.g.add_node(Op::Gelu, {f.x}, {{"approx", std::string("tanh")}}, at(2));
  EXPECT_EQ(verify_message(f.g),
            "model.wir:2:3: error: 'gelu' has no attribute 'approx'; it accepts approximate");

  Fixture n;
  n.g.add_node(Op::Neg, {n.x}, {{"axis", int64_t{0}}}, at(2));
  EXPECT_EQ(verify_message(n.g),
            "model.wir:2:3: error: 'neg' takes no attributes, but 'axis' was given");

  Fixture k;
  k.g.add_node(Op::Softmax, {k.x}, {{"axis", 1.5}}, at(2));
  EXPECT_EQ(verify_message(k.g),
            "model.wir:2:3: error: attribute 'axis' of 'softmax' must be an int, but 1.5 is a "
            "float");

  Fixture m;
  m.g.add_node(Op::Cast, {m.x}, {}, at(2));
  EXPECT_EQ(verify_message(m.g),
            "model.wir:2:3: error: 'cast' requires attribute 'dtype' (dtype)");
}

TEST(VerifierTest, AssignTargets) {
  Fixture f;
  f.g.add_node(Op::Assign, {f.x, f.x}, {}, at(2));
  EXPECT_EQ(verify_message(f.g),
            "model.wir:2:3: error: 'assign' target '%x' must be a param or state input, but it "
            "is a data input");

  Fixture r;
  ValueId e = r.g.add_node(Op::Exp, {r.s}, {}, at(2));
  r.g.add_node(Op::Assign, {e, r.s}, {}, at(3));
  EXPECT_EQ(verify_message(r.g),
            "model.wir:3:3: error: 'assign' target '%0' must be a param or state input, but it "
            "is the result of 'exp'");

  Fixture t;
  t.g.add_node(Op::Assign, {t.w, t.w}, {}, at(2));
  t.g.add_node(Op::Assign, {t.w, t.w}, {}, at(4));
  EXPECT_EQ(verify_message(t.g),
            "model.wir:4:3: error: assign: %w is assigned twice (first at model.wir:2:3); a "
            "param or state input takes at most one assign per step");
}

TEST(VerifierTest, Outputs) {
  Fixture f;
  f.g.add_output(17);
  EXPECT_EQ(verify_message(f.g), "error: output 0 refers to value #17, which does not exist");

  Fixture r;
  r.g.add_output(r.g.add_node(Op::Exp, {r.x}, {}, at(2)));
  r.g.mutable_nodes().clear();
  EXPECT_EQ(verify_message(r.g),
            "error: output 0 %0 is not defined (its producer was removed)");

  Fixture d;
  d.g.add_output(d.x);
  d.g.set_declared_output_types({Type{DType::f32, {4, 6}}, Type{DType::f32, {4, 6}}});
  EXPECT_EQ(verify_message(d.g),
            "error: the signature declares 2 output types but the graph returns 1 value");
  // #28: counts of one are singular.
  Fixture one;
  one.g.add_output(one.x);
  one.g.add_output(one.x);
  one.g.set_declared_output_types({Type{DType::f32, {4, 6}}});
  EXPECT_EQ(verify_message(one.g),
            "error: the signature declares 1 output type but the graph returns 2 values");
}

TEST(VerifierTest, ValuesAndResults) {
  Fixture f;
  f.g.add_node(Op::Exp, {f.x}, {}, at(2), std::nullopt, "y");
  f.g.mutable_value(*f.g.find_value("y")).name = "x";
  EXPECT_EQ(verify_message(f.g), "model.wir:2:3: error: value name %x is defined twice");

  Fixture u;
  u.g.mutable_value(u.w).type.reset();
  EXPECT_EQ(verify_message(u.g), "error: graph input %w has no type");

  Fixture r;
  r.g.add_node(Op::Exp, {r.x}, {}, at(2));
  r.g.node(0).results.clear();
  EXPECT_EQ(verify_message(r.g), "model.wir:2:3: error: exp: has 0 results but should have 1");
}

TEST(VerifierTest, TypesFollowTheShapeRules) {
  Fixture f;
  f.g.add_node(Op::Matmul, {f.x, f.w}, {}, at(2), Type{DType::f32, {4, 6}}, "h");
  EXPECT_EQ(verify_message(f.g),
            "model.wir:2:3: error: %h has type f32[4,6] but matmul's shape rule gives f32[4,5]");
  EXPECT_TRUE(verify(f.g, VerifyOptions{.check_types = false}).ok());

  Fixture r;
  r.g.add_node(Op::Matmul, {r.w, r.x}, {}, at(2));
  EXPECT_EQ(verify_message(r.g),
            "model.wir:2:3: error: matmul: contraction dims differ: lhs f32[6,5] has 5 columns "
            "but rhs f32[4,6] has 4 rows");
}

}  // namespace
}  // namespace weft

// unroll-scans: no loop is left, and the unrolled graph computes what the reference
// interpreter's scan does (forward and reverse, stacked ys, a loop's gradient).
#include "passes/unroll_scans.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "autodiff/grad.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {
namespace unroll_scans_test {  // this file's names, apart in its package's unity test

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

ValueId node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs = {}) {
  return *add_typed_node(g, op, std::move(operands), std::move(attrs), Location{});
}

Graph rnn(bool reverse) {
  Graph g("rnn");
  ValueId w = g.add_input("w", f32({3, 3}));
  ValueId h0 = g.add_input("h0", f32({2, 3}));
  ValueId xs = g.add_input("xs", f32({4, 2, 3}));
  auto body = std::make_shared<Graph>("cell");
  ValueId bw = body->add_input("w", f32({3, 3}));
  ValueId bh = body->add_input("h", f32({2, 3}));
  ValueId bx = body->add_input("x", f32({2, 3}));
  ValueId next = node(*body, Op::Tanh, {node(*body, Op::Add, {node(*body, Op::Matmul, {bh, bw}), bx})});
  body->add_output(next);
  body->add_output(node(*body, Op::Mul, {next, bx}));
  auto r = add_scan(g, {w, h0, xs}, {4, 1, 1, reverse}, body, Location{});
  g.add_output((*r)[0]);
  g.add_output((*r)[1]);
  g.add_output(node(g, Op::Sum, {node(g, Op::Mul, {(*r)[1], (*r)[1]})}));
  return g;
}


void expect_unrolled_matches(Graph g) {
  const auto inputs = testing::random_inputs(g, 7);
  auto before = reference::run(g, inputs);
  ASSERT_TRUE(before.ok()) << before.error().to_string();
  auto changed = UnrollScansPass().run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  for (const Node& n : g.nodes()) EXPECT_NE(n.op, Op::Scan);
  auto after = reference::run(g, inputs);
  ASSERT_TRUE(after.ok()) << after.error().to_string();
  ASSERT_EQ(before->outputs.size(), after->outputs.size());
  for (size_t k = 0; k < before->outputs.size(); ++k) {
    EXPECT_EQ(before->outputs[k].type(), after->outputs[k].type());
    EXPECT_EQ(before->outputs[k].to_doubles(), after->outputs[k].to_doubles()) << "output " << k;
  }
}

TEST(UnrollScans, ForwardLoop) { expect_unrolled_matches(rnn(false)); }

TEST(UnrollScans, ReverseLoop) { expect_unrolled_matches(rnn(true)); }

TEST(UnrollScans, ALoopsGradientIsTwoLoopsUnrolled) {
  auto grad = gradient_graph(rnn(false), 2, {"w", "h0", "xs"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  int loops = 0;
  for (const Node& n : grad->nodes()) loops += n.op == Op::Scan;
  EXPECT_EQ(loops, 2);
  expect_unrolled_matches(*grad);
}

TEST(UnrollScans, AGraphWithoutLoopsIsUnchanged) {
  Graph g("f");
  ValueId x = g.add_input("x", f32({2}));
  g.add_output(node(g, Op::Neg, {x}));
  auto changed = UnrollScansPass().run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace unroll_scans_test
}  // namespace
}  // namespace weft

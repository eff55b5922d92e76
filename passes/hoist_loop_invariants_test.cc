// hoist-loop-invariants: what depends on a loop's consts alone moves before the loop
// (the body keeps its carries and xs), values are unchanged, and a loop's gradient
// loop sheds its recomputed invariants.
#include "passes/hoist_loop_invariants.h"

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

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

ValueId node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs = {}) {
  return *add_typed_node(g, op, std::move(operands), std::move(attrs), Location{});
}

// h' = tanh(h·wᵀ + 2·b + x_t): wᵀ and 2·b depend on the consts alone.
Graph rnn() {
  Graph g("rnn");
  ValueId w = g.add_input("w", f32({8, 8}));
  ValueId b = g.add_input("b", f32({8}));
  ValueId h0 = g.add_input("h0", f32({4, 8}));
  ValueId xs = g.add_input("xs", f32({5, 4, 8}));
  auto body = std::make_shared<Graph>("cell");
  ValueId bw = body->add_input("w", f32({8, 8}));
  ValueId bb = body->add_input("b", f32({8}));
  ValueId bh = body->add_input("h", f32({4, 8}));
  ValueId bx = body->add_input("x", f32({4, 8}));
  ValueId wt = node(*body, Op::Transpose, {bw}, {{"perm", IntList{1, 0}}});
  ValueId two = node(*body, Op::Full, {}, {{"shape", IntList{}}, {"value", 2.0}});
  ValueId b2 = node(*body, Op::Mul, {bb, two});
  ValueId a = node(*body, Op::Add, {node(*body, Op::Matmul, {bh, wt}), b2});
  ValueId next = node(*body, Op::Tanh, {node(*body, Op::Add, {a, bx})});
  body->add_output(next);
  body->add_output(next);
  auto r = add_scan(g, {w, b, h0, xs}, {5, 1, 2}, body, Location{});
  g.add_output(node(g, Op::Sum, {node(g, Op::Mul, {(*r)[1], (*r)[1]})}));
  return g;
}


size_t body_nodes(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Scan) n += node.body->nodes().size();
  }
  return n;
}

void expect_same_values(const Graph& before, const Graph& after) {
  const auto inputs = testing::random_inputs(before, 5);
  auto a = reference::run(before, inputs), b = reference::run(after, inputs);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t k = 0; k < a->outputs.size(); ++k) {
    EXPECT_EQ(a->outputs[k].to_doubles(), b->outputs[k].to_doubles()) << "output " << k;
  }
}

TEST(HoistLoopInvariants, MovesWhatDependsOnTheConstsAloneBeforeTheLoop) {
  Graph g = rnn();
  const Graph before = g;
  auto changed = HoistLoopInvariantsPass().run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  // The transpose, the constant and the product 2·b left the body: matmul, two adds, tanh.
  EXPECT_EQ(body_nodes(g), 4u);
  const Node* loop = nullptr;
  for (const Node& n : g.nodes()) loop = n.op == Op::Scan ? &n : loop;
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->int_attr("consts"), 4);  // w, b, then wᵀ and 2·b
  expect_same_values(before, g);
  auto again = HoistLoopInvariantsPass().run(g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(HoistLoopInvariants, AGradientLoopShedsItsInvariants) {
  auto grad = gradient_graph(rnn(), 0, {"w", "b", "h0", "xs"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  Graph g = *grad;
  const size_t nodes_before = body_nodes(g);
  auto changed = HoistLoopInvariantsPass().run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  EXPECT_LT(body_nodes(g), nodes_before);
  expect_same_values(*grad, g);
}

}  // namespace
}  // namespace weft

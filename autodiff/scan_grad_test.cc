// Gradients through loops (`scan`, autodiff/scan_grad.cc) against central finite
// differences in f64: carries, consts, xs and ys; saved or recomputed intermediates;
// reverse loops; nested loops; and per-sample halting by a select on a carried mask,
// with samples stopping at different iterations.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
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
namespace scan_grad_test {  // this file's names, apart in its package's unity test

Type f64(std::vector<int64_t> dims) { return Type{DType::f64, Shape(std::move(dims))}; }

ValueId node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs = {}) {
  auto v = add_typed_node(g, op, std::move(operands), std::move(attrs), Location{});
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  return *v;
}


double run_scalar(const Graph& g, const std::vector<Tensor>& inputs) {
  auto r = reference::run(g, inputs);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->outputs[0].get_double(0) : NAN;
}

// d output 0 / d every input of `g` (a scalar loss): autodiff against finite differences.
void expect_gradients_match(const Graph& g, const std::vector<Tensor>& inputs, double tol = 1e-7) {
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  std::vector<std::string> wrt;
  for (const Input& in : g.inputs()) wrt.push_back(g.value(in.value).name);
  auto grad = gradient_graph(g, 0, wrt);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_TRUE(verify(*grad).ok()) << verify(*grad).to_string();
  auto r = reference::run(*grad, inputs);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const double h = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[k].set_double(i, inputs[k].get_double(i) + h);
      minus[k].set_double(i, inputs[k].get_double(i) - h);
      const double numeric = (run_scalar(g, plus) - run_scalar(g, minus)) / (2 * h);
      const double analytic = r->outputs[k].get_double(i);
      EXPECT_NEAR(analytic, numeric, tol * (1 + std::abs(numeric)))
          << "d/d" << wrt[k] << "[" << i << "]";
    }
  }
}

// An RNN: h' = tanh(h·W + x_t), y_t = h'·h'; loss = Σ h_T·h_T + Σ_t y_t · c.
Graph rnn(bool remat, bool reverse) {
  Graph g("rnn");
  ValueId w = g.add_input("w", f64({3, 3}));
  ValueId h0 = g.add_input("h0", f64({2, 3}));
  ValueId xs = g.add_input("xs", f64({4, 2, 3}));
  ValueId c = g.add_input("c", f64({4, 2, 3}));
  auto body = std::make_shared<Graph>("cell");
  ValueId bw = body->add_input("w", f64({3, 3}));
  ValueId bh = body->add_input("h", f64({2, 3}));
  ValueId bx = body->add_input("x", f64({2, 3}));
  ValueId next = node(*body, Op::Tanh, {node(*body, Op::Add, {node(*body, Op::Matmul, {bh, bw}), bx})});
  body->add_output(next);
  body->add_output(node(*body, Op::Mul, {next, next}));
  auto r = add_scan(g, {w, h0, xs}, {4, 1, 1, reverse, remat}, body, Location{});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  ValueId last = (*r)[0], ys = (*r)[1];
  g.add_output(node(g, Op::Add, {node(g, Op::Sum, {node(g, Op::Mul, {last, last})}),
                                 node(g, Op::Sum, {node(g, Op::Mul, {ys, c})})}));
  return g;
}

TEST(ScanGrad, ThroughCarriesConstsXsAndYs) {
  Graph g = rnn(false, false);
  expect_gradients_match(g, testing::random_inputs(g, 1));
}

TEST(ScanGrad, RecomputingTheIntermediatesGivesTheSameGradients) {
  Graph saved = rnn(false, false), recomputed = rnn(true, false);
  const auto inputs = testing::random_inputs(saved, 2);
  expect_gradients_match(recomputed, inputs);
  auto a = gradient_graph(saved, 0, {"w", "h0", "xs"});
  auto b = gradient_graph(recomputed, 0, {"w", "h0", "xs"});
  ASSERT_TRUE(a.ok() && b.ok());
  auto ra = reference::run(*a, inputs), rb = reference::run(*b, inputs);
  ASSERT_TRUE(ra.ok() && rb.ok());
  for (size_t k = 0; k < 3; ++k) {
    const auto x = ra->outputs[k].to_doubles(), y = rb->outputs[k].to_doubles();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-12);
  }
  // Saving stacks the intermediates the gradient reads; recomputing stacks the carries only.
  auto stacked = [](const Graph& grad) {
    for (const Node& n : grad.nodes()) {
      if (n.op == Op::Scan && !n.bool_attr("reverse")) return n.results.size();
    }
    return size_t{0};
  };
  EXPECT_GT(stacked(*a), stacked(*b));
}

TEST(ScanGrad, ReverseLoops) {
  Graph g = rnn(false, true);
  expect_gradients_match(g, testing::random_inputs(g, 3));
}

TEST(ScanGrad, NestedLoops) {
  // Outer: 2 iterations of (inner: 3 iterations of h ← sin(h·w)) then h ← h·v.
  Graph g("nested");
  ValueId w = g.add_input("w", f64({3}));
  ValueId v = g.add_input("v", f64({3}));
  ValueId h0 = g.add_input("h0", f64({3}));
  auto inner = std::make_shared<Graph>("inner");
  {
    ValueId iw = inner->add_input("w", f64({3}));
    ValueId ih = inner->add_input("h", f64({3}));
    inner->add_output(node(*inner, Op::Sin, {node(*inner, Op::Mul, {ih, iw})}));
  }
  auto outer = std::make_shared<Graph>("outer");
  {
    ValueId ow = outer->add_input("w", f64({3}));
    ValueId ov = outer->add_input("v", f64({3}));
    ValueId oh = outer->add_input("h", f64({3}));
    auto r = add_scan(*outer, {ow, oh}, {3, 1, 1}, inner, Location{});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    outer->add_output(node(*outer, Op::Mul, {(*r)[0], ov}));
  }
  auto r = add_scan(g, {w, v, h0}, {2, 1, 2}, outer, Location{});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  g.add_output(node(g, Op::Sum, {node(g, Op::Exp, {(*r)[0]})}));
  expect_gradients_match(g, testing::random_inputs(g, 4));
}

// Per-sample halting: carries (h [3,2], active bool[3]): h' = select(active, tanh(h·w +
// b), h); active' = active ∧ ¬(sum(h') > threshold). With `exit`, a third carry says that
// every sample has halted (stop=2), so the loop ends there, before its length. Outputs:
// sum(h_T²) + Σ_t sum(h_t²) (zero where no iteration ran), and whether each sample ran
// each iteration.
Graph halting(double threshold, int64_t length, bool exit) {
  Graph g("halting");
  ValueId w = g.add_input("w", f64({2, 2}));
  ValueId b = g.add_input("b", f64({2}));
  ValueId h0 = g.add_input("h0", f64({3, 2}));
  auto body = std::make_shared<Graph>("step");
  {
    ValueId bw = body->add_input("w", f64({2, 2}));
    ValueId bb = body->add_input("b", f64({2}));
    ValueId bh = body->add_input("h", f64({3, 2}));
    ValueId ba = body->add_input("active", Type{DType::boolean, Shape({3})});
    if (exit) body->add_input("done", Type{DType::boolean, Shape({})});
    ValueId f = node(*body, Op::Tanh, {node(*body, Op::Add, {node(*body, Op::Matmul, {bh, bw}), bb})});
    ValueId keep = node(*body, Op::Reshape, {ba}, {{"shape", IntList{3, 1}}});
    ValueId next = node(*body, Op::Select, {keep, f, bh});
    ValueId total = node(*body, Op::Sum, {next}, {{"axes", IntList{1}}});
    ValueId thr = node(*body, Op::Full, {}, {{"shape", IntList{}}, {"value", threshold}, {"dtype", DType::f64}});
    ValueId still = node(*body, Op::And, {ba, node(*body, Op::Not, {node(*body, Op::Gt, {total, thr})})});
    body->add_output(next);
    body->add_output(still);
    if (exit) {
      ValueId running = node(*body, Op::Sum, {node(*body, Op::Cast, {still}, {{"dtype", DType::f64}})});
      ValueId zero = node(*body, Op::Full, {}, {{"shape", IntList{}}, {"value", 0.0}, {"dtype", DType::f64}});
      body->add_output(node(*body, Op::Le, {running, zero}));
    }
    body->add_output(node(*body, Op::Cast, {ba}, {{"dtype", DType::f64}}));  // ran this iteration
    body->add_output(node(*body, Op::Mul, {next, next}));
  }
  std::vector<ValueId> operands = {w, b, h0};
  operands.push_back(node(g, Op::Full, {}, {{"shape", IntList{3}}, {"value", 1.0}, {"dtype", DType::boolean}}));
  ScanShape shape{length, 2, 2};
  if (exit) {
    operands.push_back(node(g, Op::Full, {}, {{"shape", IntList{}}, {"value", 0.0}, {"dtype", DType::boolean}}));
    shape.carries = 3;
    shape.stop = 2;
  }
  auto r = add_scan(g, operands, shape, body, Location{});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  const size_t ys = static_cast<size_t>(shape.carries);
  ValueId last = node(g, Op::Sum, {node(g, Op::Mul, {(*r)[0], (*r)[0]})});
  g.add_output(node(g, Op::Add, {last, node(g, Op::Sum, {(*r)[ys + 1]})}));
  g.add_output((*r)[ys]);
  return g;
}

std::vector<Tensor> halting_inputs() {
  return {Tensor::from_vector<double>({2, 2}, {0.9, 0.2, -0.3, 0.8}), Tensor::from_vector<double>({2}, {0.05, 0.1}),
          Tensor::from_vector<double>({3, 2}, {0.5, 0.4, -0.9, -0.7, 0.1, 0.0})};
}

// The iterations each of the three samples of `g` (halting()) ran.
std::vector<double> iterations_per_sample(const Graph& g) {
  auto ran = reference::run(g, halting_inputs());
  EXPECT_TRUE(ran.ok()) << ran.error().to_string();
  std::vector<double> count(3, 0);
  if (!ran.ok()) return count;
  const auto steps = ran->outputs[1].to_doubles();
  for (size_t i = 0; i < steps.size(); ++i) count[i % 3] += steps[i];
  return count;
}

TEST(ScanGrad, PerSampleHaltingByASelectOnACarriedMask) {
  // Samples stop at different iterations (one never does); the gradient reaches only
  // the iterations each one ran.
  const Graph g = halting(0.3, 6, /*exit=*/false);
  const std::vector<double> count = iterations_per_sample(g);
  EXPECT_NE(count[0], count[1]);
  EXPECT_NE(count[1], count[2]);
  EXPECT_EQ(*std::max_element(count.begin(), count.end()), 6.0);
  expect_gradients_match(g, halting_inputs());
}

TEST(ScanGrad, AnEarlyExitOnceEverySampleHalted) {
  const Graph g = halting(0.3, 8, /*exit=*/true);
  const std::vector<double> count = iterations_per_sample(g);
  EXPECT_NE(count[0], count[1]);
  EXPECT_NE(count[1], count[2]);
  // The loop stopped before its length: its last slots never ran.
  EXPECT_LT(*std::max_element(count.begin(), count.end()), 8.0);
  expect_gradients_match(g, halting_inputs());
}

TEST(ScanGrad, AnEarlyExitsGradientDifferentiatesAgain) {
  Graph g = halting(0.3, 8, /*exit=*/true);
  g.set_outputs({g.outputs()[0]});
  auto grad = gradient_graph(g, 0, {"w"}, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  Graph hv = *grad;
  ValueId u = hv.add_input("u", f64({2, 2}));
  hv.set_outputs({node(hv, Op::Sum, {node(hv, Op::Mul, {hv.outputs()[0], u})})});
  std::vector<Tensor> inputs = halting_inputs();
  inputs.push_back(Tensor::scalar(DType::f64, 1.0));  // the seed
  inputs.push_back(Tensor::from_vector<double>({2, 2}, {0.3, -0.2, 0.5, 0.1}));
  expect_gradients_match(hv, inputs, 1e-6);
}

TEST(ScanGrad, AGradientLoopDifferentiatesAgain) {
  // Hessian-vector product: differentiate the gradient graph (itself two loops).
  Graph g = rnn(false, false);
  auto grad = gradient_graph(g, 0, {"w"}, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  // <grad, u> as a scalar, then its gradient w.r.t. w.
  Graph hv = *grad;
  ValueId u = hv.add_input("u", f64({3, 3}));
  ValueId dot = node(hv, Op::Sum, {node(hv, Op::Mul, {hv.outputs()[0], u})});
  hv.set_outputs({dot});
  auto inputs = testing::random_inputs(hv, 5);
  inputs[4] = Tensor::scalar(DType::f64, 1.0);  // the seed
  expect_gradients_match(hv, inputs, 1e-6);
}

TEST(ScanGrad, AWeightsGradientIsOneProductOverEveryIterationAfterTheLoop) {
  // dW = Σ_t h_tᵀ·g_t: the reverse loop stacks g (h is stacked already) and one matmul
  // over all 4·2 rows follows it; the loop carries no accumulator for w.
  auto grad = gradient_graph(rnn(false, false), 0, {"w"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  const Node* reverse = nullptr;
  bool product = false;
  for (const Node& n : grad->nodes()) {
    if (n.op == Op::Scan && n.bool_attr("reverse")) reverse = &n;
    if (n.op == Op::Matmul && grad->type(n.result()) == f64({3, 3}) &&
        grad->type(n.operands[1]).shape == Shape({8, 3})) {
      product = true;
    }
  }
  ASSERT_NE(reverse, nullptr);
  EXPECT_EQ(reverse->int_attr("carries"), 1) << "only h's cotangent is carried";
  for (const Node& n : reverse->body->nodes()) {
    EXPECT_FALSE(n.op == Op::Matmul && reverse->body->type(n.result()) == f64({3, 3}))
        << "a weight-shaped product left in the loop";
  }
  EXPECT_TRUE(product);
}

// A gated cell: pre = x_t + h·W ([2,4]), h' = tanh(pre[:, :2]) · sigmoid(pre[:, 2:]);
// loss = Σ h_T·h_T. The xs are x_in·2 (computed in the graph) or x_in itself.
Graph gated(bool computed_xs) {
  Graph g("gated");
  ValueId w = g.add_input("w", f64({2, 4}));
  ValueId h0 = g.add_input("h0", f64({2, 2}));
  ValueId x_in = g.add_input("x_in", f64({3, 2, 4}));
  ValueId xs = computed_xs ? node(g, Op::Add, {x_in, x_in}) : x_in;
  auto body = std::make_shared<Graph>("cell");
  ValueId bw = body->add_input("w", f64({2, 4}));
  ValueId bh = body->add_input("h", f64({2, 2}));
  ValueId bx = body->add_input("x", f64({2, 4}));
  ValueId pre = node(*body, Op::Add, {bx, node(*body, Op::Matmul, {bh, bw})});
  auto half = [&](int64_t k) {
    return node(*body, Op::Slice, {pre}, {{"start", IntList{0, 2 * k}}, {"stop", IntList{2, 2 * k + 2}}});
  };
  body->add_output(node(*body, Op::Mul, {node(*body, Op::Tanh, {half(0)}), node(*body, Op::Sigmoid, {half(1)})}));
  auto r = add_scan(g, {w, h0, xs}, {3, 1, 1, false, false}, body, Location{});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  g.add_output(node(g, Op::Sum, {node(g, Op::Mul, {(*r)[0], (*r)[0]})}));
  return g;
}

TEST(ScanGrad, AnElementwiseValueReadingAComputedXIsSavedSoTheXsDieAfterTheForwardLoop) {
  for (bool computed : {true, false}) {
    Graph g = gated(computed);
    expect_gradients_match(g, testing::random_inputs(g, 6));
    auto grad = gradient_graph(g, 0, {"w", "h0", "x_in"});
    ASSERT_TRUE(grad.ok()) << grad.error().to_string();
    const Node *forward = nullptr, *reverse = nullptr;
    for (const Node& n : grad->nodes()) {
      if (n.op == Op::Scan) (n.bool_attr("reverse") ? reverse : forward) = &n;
    }
    ASSERT_TRUE(forward != nullptr && reverse != nullptr);
    const ValueId xs = forward->operands[2];
    const bool reads_xs = std::find(reverse->operands.begin(), reverse->operands.end(), xs) != reverse->operands.end();
    // Either way the forward loop stacks one [3,2,4] value beside h' and the stacked h:
    // x + h·W where the xs are computed (they die after it), h·W where they are an input.
    ASSERT_EQ(forward->results.size(), 3u);
    EXPECT_EQ(grad->type(forward->results[1]), f64({3, 2, 4}));
    const Node& saved = forward->body->node(forward->body->value(forward->body->outputs()[1]).node);
    EXPECT_EQ(saved.op, computed ? Op::Add : Op::Matmul);
    EXPECT_EQ(reads_xs, !computed) << "the reverse loop reads the xs only where they are an input";
  }
}

}  // namespace scan_grad_test
}  // namespace
}  // namespace weft

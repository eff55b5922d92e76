// The autodiff driver: accumulation, broadcasting undone, zero gradients for
// independent inputs, seeds, and its errors.
#include "autodiff/grad.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

Graph parse(const std::string& text) {
  auto g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  auto typed = default_pipeline().run_until(*g, "infer-types");
  EXPECT_TRUE(typed.ok()) << typed.error().to_string();
  return std::move(g).value();
}

TEST(Grad, AccumulatesAndUndoesBroadcasting) {
  // l = sum(x * b + x), b broadcast over rows: dl/dx = b + 1, dl/db = column sums of x.
  Graph g = parse(R"(graph @f(%x: f64[2,3], %b: f64[3]) -> (f64[]) {
    %p = mul(%x, %b)
    %q = add(%p, %x)
    %t = tanh(%q)
    %u = sub(%q, %t)
    %l = sum(%q)
    return %l
  })");
  auto grad = gradient_graph(g, 0, {"x", "b"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_TRUE(default_pipeline().run(*grad).ok());
  Tensor x = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<double>({3}, {10, 20, 30});
  auto r = reference::run(*grad, {x, b});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].to_doubles(), (std::vector<double>{11, 21, 31, 11, 21, 31}));
  EXPECT_EQ(r->outputs[1].to_doubles(), (std::vector<double>{5, 7, 9}));
}

TEST(Grad, SlicesThatCutATensorIntoPiecesGetOneConcatBack) {
  // An LSTM's gates: four slices side by side, each used differently; and two slices that
  // leave a gap (columns 1..2 and 2..3 of 5), whose gradient is one pad of a concat.
  Graph g = parse(R"(graph @f(%x: f64[2,8], %y: f64[2,5]) -> (f64[]) {
    %i = slice(%x) {start=[0, 0], stop=[2, 2]}
    %f = slice(%x) {start=[0, 2], stop=[2, 4]}
    %c = slice(%x) {start=[0, 4], stop=[2, 6]}
    %o = slice(%x) {start=[0, 6], stop=[2, 8]}
    %a = mul(%i, %f)
    %b = mul(%c, %o)
    %t = tanh(%b)
    %s = add(%a, %t)
    %y1 = slice(%y) {start=[0, 1], stop=[2, 2]}
    %y2 = slice(%y) {start=[0, 2], stop=[2, 3]}
    %yy = mul(%y1, %y2)
    %l1 = sum(%s)
    %l2 = sum(%yy)
    %l = add(%l1, %l2)
    return %l
  })");
  auto grad = gradient_graph(g, 0, {"x", "y"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_TRUE(default_pipeline().run(*grad).ok());
  const std::string text = print_graph(*grad);
  // dx: one concat of the four pieces, no pad and no add of pads; dy: a pad of a concat.
  int pads = 0, concats = 0;
  for (const Node& n : grad->nodes()) {
    pads += n.op == Op::Pad;
    concats += n.op == Op::Concat;
  }
  EXPECT_EQ(pads, 1) << text;
  EXPECT_EQ(concats, 2) << text;
  std::vector<double> xs(16), ys(10);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = 0.1 * static_cast<double>(k) - 0.5;
  for (size_t k = 0; k < ys.size(); ++k) ys[k] = 0.3 * static_cast<double>(k) - 1;
  auto r = reference::run(*grad, {Tensor::from_vector<double>({2, 8}, xs),
                                  Tensor::from_vector<double>({2, 5}, ys)});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const std::vector<double> dx = r->outputs[0].to_doubles(), dy = r->outputs[1].to_doubles();
  for (int row = 0; row < 2; ++row) {
    const double* x = &xs[static_cast<size_t>(row) * 8];
    const double* d = &dx[static_cast<size_t>(row) * 8];
    const double t0 = std::tanh(x[4] * x[6]), t1 = std::tanh(x[5] * x[7]);
    const double d0 = 1 - t0 * t0, d1 = 1 - t1 * t1;
    const double want[8] = {x[2], x[3], x[0], x[1], d0 * x[6], d1 * x[7], d0 * x[4], d1 * x[5]};
    for (int k = 0; k < 8; ++k) EXPECT_DOUBLE_EQ(d[k], want[k]) << "row " << row << " col " << k;
    const double* y = &ys[static_cast<size_t>(row) * 5];
    const double* e = &dy[static_cast<size_t>(row) * 5];
    const double want_y[5] = {0, y[2], y[1], 0, 0};
    for (int k = 0; k < 5; ++k) EXPECT_DOUBLE_EQ(e[k], want_y[k]) << "row " << row << " col " << k;
  }
}

TEST(Grad, IndependentInputGetsZerosAndSeedIsAnInput) {
  Graph g = parse(R"(graph @f(%x: f32[2], %y: f32[2]) -> (f32[2]) {
    %p = mul(%x, %x)
    return %p
  })");
  auto grad = gradient_graph(g, 0, {"x", "y"}, "dp");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_EQ(grad->inputs().size(), 3u);
  EXPECT_EQ(grad->value(grad->inputs()[2].value).name, "dp");
  auto r = reference::run(*grad, {Tensor::from_vector<float>({2}, {3, 4}),
                                  Tensor::from_vector<float>({2}, {0, 0}),
                                  Tensor::from_vector<float>({2}, {1, 10})});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].to_doubles(), (std::vector<double>{6, 80}));
  EXPECT_EQ(r->outputs[1].to_doubles(), (std::vector<double>{0, 0}));
}

/// How many nodes of `g` read `v` (once per operand slot).
int uses(const Graph& g, ValueId v) {
  int n = 0;
  for (const Node& node : g.nodes()) n += static_cast<int>(std::count(node.operands.begin(), node.operands.end(), v));
  return n;
}

TEST(Grad, SoftmaxReadsTheHalfCopyWhereTheForwardKeepsOnlyThat) {
  // Autocast's attention: softmax in f32, its probabilities read only through one cast to
  // bf16 (for a product). The gradient reads that copy widened, so %p keeps its one use
  // and a step stores the probabilities once (issue #30).
  auto graph = [](const std::string& outputs, const std::string& tail) {
    return parse("graph @f(%s: f32[2,4], %v: bf16[4,3]) -> (" + outputs + R"() {
      %p = softmax(%s) {axis=-1}
      %h = cast(%p) {dtype=bf16}
      %y = matmul(%h, %v)
      %w = cast(%y) {dtype=f32}
      %l = sum(%w)
      )" + tail + "\n}");
  };
  Graph g = graph("f32[]", "return %l");
  ASSERT_TRUE(append_gradients(g, g.outputs()[0], {*g.find_value("s")}).ok());
  EXPECT_EQ(uses(g, *g.find_value("p")), 1) << print_graph(g);
  EXPECT_EQ(uses(g, *g.find_value("h")), 3) << print_graph(g);  // the product, its gradient, the widening

  // Read in f32 by the forward too, or returned: the gradient reads %p itself.
  for (Graph h : {graph("f32[]", "%q = sum(%p)\n      %m = add(%l, %q)\n      return %m"),
                  graph("f32[], f32[2,4]", "return %l, %p")}) {
    const int before = uses(h, *h.find_value("p"));
    ASSERT_TRUE(append_gradients(h, h.outputs()[0], {*h.find_value("s")}).ok());
    EXPECT_EQ(uses(h, *h.find_value("p")), before + 2) << print_graph(h);  // sum(g·p), p·(g − Σ)
  }
}

Tensor bf16(double v) { return Tensor::from_doubles(DType::bf16, {1}, {v}); }

/// The gradient of `text`'s output w.r.t. its input %x (one element) at `inputs`, on the
/// reference interpreter; `graph` receives the gradient graph.
double x_gradient(const std::string& text, const std::vector<Tensor>& inputs, Graph& graph) {
  auto grad = gradient_graph(parse(text), 0, {"x"});
  EXPECT_TRUE(grad.ok()) << grad.error().to_string();
  if (!grad.ok()) return NAN;
  graph = *grad;
  auto r = reference::run(graph, inputs);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->outputs[0].get_double(0) : NAN;
}

TEST(Grad, HalfCotangentsAreSummedInF32AndRoundedOnce) {
  // %x has three readers. Their cotangents reach it in reverse order: 1, then 2^-8 twice.
  // Added in bf16, each 1 + 2^-8 rounds back to 1 (a tie, to even); added in f32 the sum
  // is 1 + 2^-7, which bf16 holds: the driver widens, adds, and rounds once.
  Graph grad;
  EXPECT_EQ(x_gradient(R"(graph @f(%x: bf16[1], %a: bf16[1], %b: bf16[1], %c: bf16[1]) -> (bf16[]) {
    %p = mul(%x, %a)
    %q = mul(%x, %b)
    %r = mul(%x, %c)
    %s = add(%p, %q)
    %t = add(%s, %r)
    %l = sum(%t)
    return %l
  })", {bf16(1), bf16(1.0 / 256), bf16(1.0 / 256), bf16(1)}, grad), 1 + 1.0 / 128) << print_graph(grad);
  EXPECT_EQ(grad.type(grad.outputs()[0]).dtype, DType::bf16);
  for (size_t i = 5; i < grad.nodes().size(); ++i) {  // the gradient's nodes, after the forward's 5
    const Node& n = grad.node(static_cast<int>(i));
    if (n.op == Op::Add) {
      EXPECT_EQ(grad.type(n.result()).dtype, DType::f32) << print_graph(grad);
    }
  }

  // An f32 value cast to bf16 for two readers (autocast's activation for two products;
  // rotate-carry-casts' low carry that a ys stacks too): the f32 sum is its gradient,
  // never rounded. 1 + 2^-9 is no bf16 value.
  EXPECT_EQ(x_gradient(R"(graph @f(%x: f32[1], %a: bf16[1], %b: bf16[1]) -> (bf16[]) {
    %y = cast(%x) {dtype=bf16}
    %p = mul(%y, %a)
    %q = mul(%y, %b)
    %s = add(%p, %q)
    %l = sum(%s)
    return %l
  })", {Tensor::from_vector<float>({1}, {1}), bf16(1.0 / 512), bf16(1)}, grad), 1 + 1.0 / 512) << print_graph(grad);

  // A bf16 value read in f32 too (widened for an f32 op): that path's cotangent, f32
  // 1 + 2^-9, is added as it is, not rounded to bf16 first (1, and 1 + 2^-8 a tie to 1):
  // 1 + 3·2^-9 rounds once, to 1 + 2^-7.
  EXPECT_EQ(x_gradient(R"(graph @f(%x: bf16[1], %a: bf16[1], %c: f32[1]) -> (f32[]) {
    %u = cast(%x) {dtype=f32}
    %v = mul(%u, %c)
    %p = mul(%x, %a)
    %l1 = sum(%v)
    %l2 = sum(%p)
    %w = cast(%l2) {dtype=f32}
    %l = add(%l1, %w)
    return %l
  })", {bf16(1), bf16(1.0 / 256), Tensor::from_vector<float>({1}, {1 + 1.0f / 512})}, grad), 1 + 1.0 / 128)
      << print_graph(grad);
}

TEST(Grad, WithRespectToAnIntermediateValue) {
  // l = sum(h * h), h = x * x: dl/dh = 2h. The forward walk used to overwrite the wrt
  // mark of a node's result with "depends on a wrt operand" and return zeros here.
  Graph g = parse(R"(graph @f(%x: f64[2]) -> (f64[]) {
    %h = mul(%x, %x)
    %s = mul(%h, %h)
    %l = sum(%s)
    return %l
  })");
  ValueId h = *g.find_value("h");
  auto grads = append_gradients(g, g.outputs()[0], {h});
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  g.set_outputs(*grads);
  g.set_declared_output_types({});
  ASSERT_TRUE(default_pipeline().run(g).ok());
  auto r = reference::run(g, {Tensor::from_vector<double>({2}, {1, 2})});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].to_doubles(), (std::vector<double>{2, 8}));
}

// all_reduce with a predicate (gradient accumulation's window, issue 32): its gradient is
// the same all_reduce of the cotangent, with the same predicate and reduction; the
// predicate gets none. In one process (the reference interpreter) both are the identity
// whatever the predicate: dl/dx = 2x.
TEST(Grad, APredicatedAllReduceGetsTheSamePredicateOnItsCotangent) {
  Graph g = parse(R"(graph @f(%x: f32[3], %p: bool[]) -> (f32[]) {
    %r = all_reduce(%x, %p) {reduction="sum"}
    %s = mul(%r, %r)
    %l = sum(%s)
    return %l
  })");
  auto grad = gradient_graph(g, 0, {"x"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  std::vector<const Node*> all_reduces;
  for (const Node& n : grad->nodes()) {
    if (n.op == Op::AllReduce) all_reduces.push_back(&n);
  }
  ASSERT_EQ(all_reduces.size(), 2u);  // the forward's and its gradient's
  const Node& back = *all_reduces[1];
  ASSERT_EQ(back.operands.size(), 2u);
  EXPECT_EQ(grad->value(back.operands[1]).name, "p");
  EXPECT_EQ(back.str_attr("reduction"), "sum");
  EXPECT_NE(back.operands[0], all_reduces[0]->results[0]);  // the cotangent, not the forward's value
  ASSERT_TRUE(default_pipeline().run(*grad).ok());
  for (bool apply : {true, false}) {
    Tensor p(Type{DType::boolean, {}});
    p.data<bool>()[0] = apply;
    auto r = reference::run(*grad, {Tensor::from_vector<float>({3}, {1, -2, 3}), p});
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->outputs[0].to_doubles(), (std::vector<double>{2, -4, 6})) << apply;
  }
}

TEST(Grad, Errors) {
  Graph g = parse(R"(graph @f(%x: f32[2], %n: i64[2]) -> (f32[2]) {
    %p = mul(%x, %x)
    return %p
  })");
  EXPECT_EQ(gradient_graph(g, 0, {"x"}).error().to_string(),
            "error: cannot differentiate %p of type f32[2]: the output must be a float scalar, "
            "or a seed (its cotangent) must be given");
  EXPECT_EQ(gradient_graph(g, 0, {"n"}, "s").error().to_string(),
            "test.wir:1:22: error: cannot differentiate w.r.t. %n: it is i64[2], and only "
            "floating-point inputs have gradients");
  EXPECT_EQ(gradient_graph(g, 0, {"z"}, "s").error().to_string(),
            "error: cannot differentiate w.r.t. %z: @f has no input of that name; its inputs are "
            "%x, %n");
  EXPECT_EQ(gradient_graph(g, 1, {"x"}).error().to_string(),
            "error: graph @f has 1 outputs; there is no output 1");
}

}  // namespace
}  // namespace weft

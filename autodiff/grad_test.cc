// The autodiff driver: accumulation, broadcasting undone, zero gradients for
// independent inputs, seeds, and its errors.
#include "autodiff/grad.h"

#include <gtest/gtest.h>

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

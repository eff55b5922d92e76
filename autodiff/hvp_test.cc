// Hessian-vector products: the gradient graph differentiated again. For a loss l(p) over
// params p and a direction v (one tensor per param),
//
//   Hv = d/dp <grad l(p), v>
//
// is built with two append_gradients calls and compared, in f64, with the central
// difference of the gradient along v: (grad l(p + εv) - grad l(p - εv)) / 2ε.
// This exercises the second derivatives of every rule on the way: matmul, tanh,
// cross_entropy (softmax), log_softmax, conv (through conv_backward_input/weight),
// max_pool2d (through max_pool2d_backward and max_pool2d_select), avg_pool2d, gelu,
// layer_norm, mse.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "autodiff/grad.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {
namespace hvp_test {  // this file's names, apart in its package's unity test

struct Net {
  Graph forward;                // Output 0: the loss.
  Graph hvp;                    // Outputs: grad l (one per param), then Hv.
  std::vector<ValueId> params;  // In `forward`.
};

Net build(const std::string& text, const std::vector<std::string>& param_names) {
  auto parsed = parse_graph(text, "hvp.wir");
  EXPECT_TRUE(parsed.ok()) << parsed.error().to_string();
  Net net{std::move(parsed).value(), Graph(), {}};
  auto typed = default_pipeline().run_until(net.forward, "infer-types");
  EXPECT_TRUE(typed.ok()) << typed.error().to_string();
  Graph g = net.forward;
  for (const std::string& name : param_names) net.params.push_back(*g.find_value(name));
  // Gradient, then <gradient, v>, then its gradient.
  auto grads = append_gradients(g, g.outputs()[0], net.params);
  EXPECT_TRUE(grads.ok()) << grads.error().to_string();
  GradBuilder b(g, Location{});
  ValueId dot = kNoValue;
  for (size_t i = 0; i < net.params.size(); ++i) {
    ValueId v = g.add_input("v_" + param_names[i], g.type(net.params[i]));
    ValueId term = b.op(Op::Sum, {b.mul((*grads)[i], v)});
    dot = dot == kNoValue ? term : b.add(dot, term);
  }
  auto hv = append_gradients(g, dot, net.params);
  EXPECT_TRUE(hv.ok()) << hv.error().to_string();
  std::vector<ValueId> outputs = *grads;
  outputs.insert(outputs.end(), hv->begin(), hv->end());
  g.set_outputs(outputs);
  g.set_declared_output_types({});
  auto verified = default_pipeline().run_until(g, "infer-types");
  EXPECT_TRUE(verified.ok()) << verified.error().to_string();
  net.hvp = std::move(g);
  return net;
}

/// Random f64 values in [-1, 1] for every float input; `given` for the others.
std::vector<Tensor> make_inputs(const Graph& g, std::mt19937_64& rng,
                                const std::map<std::string, Tensor>& given) {
  std::vector<Tensor> out;
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    if (given.count(name)) {
      out.push_back(given.at(name));
      continue;
    }
    const Type t = g.type(in.value);
    std::vector<double> v(t.shape.numel());
    for (double& x : v) x = u(rng);
    out.push_back(Tensor::from_doubles(t.dtype, t.shape, v));
  }
  return out;
}

/// Runs the Hv graph and checks Hv against central differences of the gradient.
void check_hvp(const std::string& text, const std::vector<std::string>& params,
               const std::map<std::string, Tensor>& given, double tol = 1e-7) {
  Net net = build(text, params);
  std::mt19937_64 rng(7);
  // Inputs of the Hv graph: the forward inputs, then one v per param.
  std::vector<Tensor> inputs = make_inputs(net.hvp, rng, given);
  const size_t n_forward = net.forward.inputs().size();
  auto at = [&](double eps) {
    // The gradient at p + eps v: shift the param inputs, run the same graph.
    std::vector<Tensor> shifted = inputs;
    for (size_t i = 0; i < params.size(); ++i) {
      const int p = net.forward.input_index(net.params[i]);
      std::vector<double> x = inputs[p].to_doubles();
      const std::vector<double> v = inputs[n_forward + i].to_doubles();
      for (size_t j = 0; j < x.size(); ++j) x[j] += eps * v[j];
      shifted[p] = Tensor::from_doubles(inputs[p].dtype(), inputs[p].shape(), x);
    }
    auto r = reference::run(net.hvp, shifted);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? r->outputs : std::vector<Tensor>{};
  };
  const double eps = 1e-5;
  std::vector<Tensor> here = at(0), plus = at(eps), minus = at(-eps);
  ASSERT_EQ(here.size(), 2 * params.size());
  double largest = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> hv = here[params.size() + i].to_doubles();
    const std::vector<double> gp = plus[i].to_doubles(), gm = minus[i].to_doubles();
    for (size_t j = 0; j < hv.size(); ++j) {
      const double numeric = (gp[j] - gm[j]) / (2 * eps);
      largest = std::max(largest, std::abs(numeric));
      EXPECT_NEAR(hv[j], numeric, tol * (1 + std::abs(numeric)))
          << "(Hv) for " << params[i] << "[" << j << "]";
    }
  }
  EXPECT_GT(largest, 1e-3) << "a vanishing Hessian proves nothing";
}

Tensor labels(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}

TEST(Hvp, MlpTanhCrossEntropy) {
  check_hvp(R"(graph @mlp(%x: f64[6,4], %labels: i64[6], %w1: f64[4,5] {param},
                          %b1: f64[5] {param}, %w2: f64[5,3] {param}, %b2: f64[3] {param}) {
    %h = matmul(%x, %w1)
    %hb = add(%h, %b1)
    %a = tanh(%hb)
    %z = matmul(%a, %w2)
    %logits = add(%z, %b2)
    %loss = cross_entropy(%logits, %labels)
    return %loss
  })",
            {"w1", "b1", "w2", "b2"}, {{"labels", labels({0, 2, 1, 2, 0, 1})}});
}

TEST(Hvp, MlpLogSoftmaxOneHot) {
  // The same loss spelled with log_softmax and one_hot, batch-broadcast weights.
  check_hvp(R"(graph @mlp(%x: f64[2,3,4], %labels: i64[6], %w1: f64[4,5] {param},
                          %w2: f64[1,5,3] {param}) {
    %h = matmul(%x, %w1)
    %a = tanh(%h)
    %z = matmul(%a, %w2)
    %logits = reshape(%z) {shape=[6,3]}
    %lp = log_softmax(%logits) {axis=1}
    %y = one_hot(%labels) {depth=3, dtype=f64}
    %picked = mul(%lp, %y)
    %s = sum(%picked)
    %n = full() {shape=[], value=-6.0, dtype=f64}
    %loss = div(%s, %n)
    return %loss
  })",
            {"w1", "w2"}, {{"labels", labels({1, 0, 2, 2, 1, 0})}});
}

TEST(Hvp, ConvMaxPoolMse) {
  check_hvp(R"(graph @cnn(%x: f64[2,2,6,6], %target: f64[2,4], %k: f64[3,2,3,3] {param},
                          %kb: f64[3,1,1] {param}, %w: f64[27,4] {param}) {
    %c = conv(%x, %k) {padding=[1,1]}
    %cb = add(%c, %kb)
    %t = tanh(%cb)
    %p = max_pool2d(%t) {kernel=[2,2]}
    %f = reshape(%p) {shape=[2,27]}
    %y = matmul(%f, %w)
    %loss = mse(%y, %target)
    return %loss
  })",
            {"k", "kb", "w"}, {});
}

TEST(Hvp, StridedGroupedConvAvgPoolCrossEntropy) {
  check_hvp(R"(graph @cnn(%x: f64[2,4,7,7], %labels: i64[2], %k: f64[4,2,3,3] {param},
                          %w: f64[16,3] {param}) {
    %c = conv(%x, %k) {stride=[2,2], padding=[1,1], dilation=[1,1], groups=2}
    %t = tanh(%c)
    %p = avg_pool2d(%t) {kernel=[3,3], stride=[2,2], padding=[1,1]}
    %q = max_pool2d(%p) {kernel=[1,1]}
    %f = reshape(%q) {shape=[2,16]}
    %y = matmul(%f, %w)
    %loss = cross_entropy(%y, %labels) {reduction="sum"}
    return %loss
  })",
            {"k", "w"}, {{"labels", labels({2, 0})}});
}

TEST(Hvp, LayerNormGeluSoftmax) {
  check_hvp(R"(graph @block(%x: f64[3,6], %target: f64[3,4], %w: f64[6,4] {param},
                            %gamma: f64[4] {param}, %beta: f64[4] {param}) {
    %h = matmul(%x, %w)
    %n = layer_norm(%h, %gamma, %beta)
    %g = gelu(%n)
    %s = softmax(%g) {axis=1}
    %loss = mse(%s, %target) {reduction="sum"}
    return %loss
  })",
            {"w", "gamma", "beta"}, {});
}

}  // namespace hvp_test
}  // namespace
}  // namespace weft

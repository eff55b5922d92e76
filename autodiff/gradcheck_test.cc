// The finite-difference gradient check: one parameterized test over a case table keyed
// by op. Each case builds the graph
//
//   l = sum(w * op(inputs...))          w: a fixed random tensor of op's result type
//
// in f64, differentiates it with gradient_graph, runs the gradient through the reference
// interpreter, and compares d l / d input (every float input) with central differences
// (h = 1e-6) within the case's tolerance (1e-7 unless the case says otherwise):
// |analytic - numeric| <= tol (1 + |numeric|).
// Shapes exercise broadcasting, keepdims and multi-axis reductions, strided slices, and
// strided, padded, dilated and grouped convolution and pooling. Inputs are chosen away
// from kinks (distinct values for max/min/pooling, |x| away from 0 for abs/relu/sign,
// away from integers for floor), except the tie cases, where a central difference sees
// exactly the documented convention (half to each of two tied elements).
//
// A completeness test fails when an op has neither a rule nor a reason, or has a rule but
// no case here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "autodiff/grad.h"
#include "ir/shape_rules.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

enum class Fill { kUniform, kDistinct, kAwayFromZero, kGiven };

struct InputSpec {
  Type type;
  Fill fill = Fill::kUniform;
  double lo = -1, hi = 1;
  std::vector<double> values;  // Fill::kGiven
};

struct Case {
  std::string name;  // The test's name: op name plus a variant.
  Op op;
  std::vector<InputSpec> inputs;
  Attrs attrs;
  double tol = 1e-7;  // Central differences in f64 with h = 1e-6 are good to ~1e-9 here.
  double h = 1e-6;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

InputSpec uniform(std::vector<int64_t> shape, double lo = -1, double hi = 1) {
  return {{DType::f64, Shape(std::move(shape))}, Fill::kUniform, lo, hi, {}};
}
/// Evenly spaced values in [lo, hi] in random order: no ties, gaps far above h.
InputSpec distinct(std::vector<int64_t> shape, double lo = -2, double hi = 2) {
  return {{DType::f64, Shape(std::move(shape))}, Fill::kDistinct, lo, hi, {}};
}
/// |x| in [0.2, 1.5] with a random sign.
InputSpec away(std::vector<int64_t> shape) {
  return {{DType::f64, Shape(std::move(shape))}, Fill::kAwayFromZero, 0.2, 1.5, {}};
}
InputSpec given(DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  return {{dtype, Shape(std::move(shape))}, Fill::kGiven, 0, 0, std::move(values)};
}
InputSpec f64(std::vector<int64_t> shape, std::vector<double> values) {
  return given(DType::f64, std::move(shape), std::move(values));
}
InputSpec i64(std::vector<int64_t> shape, std::vector<double> values) {
  return given(DType::i64, std::move(shape), std::move(values));
}

Attrs conv_attrs(IntList stride, IntList padding, IntList dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}
Attrs with(Attrs a, const char* name, Attribute v) {
  a[name] = std::move(v);
  return a;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  auto unary = [&](Op op, InputSpec in, std::string variant = "", Attrs attrs = {}) {
    std::string name(op_name(op));
    c.push_back({variant.empty() ? name : name + "_" + variant, op, {std::move(in)}, attrs});
  };
  // Elementwise, unary.
  unary(Op::Neg, uniform({2, 3}));
  unary(Op::Abs, away({2, 3}));
  unary(Op::Exp, uniform({2, 3}));
  unary(Op::Log, uniform({2, 3}, 0.5, 3));
  unary(Op::Log1p, uniform({2, 3}, -0.5, 2));
  unary(Op::Sqrt, uniform({2, 3}, 0.5, 3));
  unary(Op::Rsqrt, uniform({2, 3}, 0.5, 3));
  unary(Op::Tanh, uniform({2, 3}, -2, 2));
  unary(Op::Sigmoid, uniform({2, 3}, -3, 3));
  unary(Op::Relu, away({2, 3}));
  unary(Op::Sin, uniform({2, 3}, -3, 3));
  unary(Op::Cos, uniform({2, 3}, -3, 3));
  unary(Op::Erf, uniform({2, 3}, -2, 2));
  unary(Op::Softplus, uniform({2, 3}, -3, 3));
  unary(Op::Sign, away({2, 3}));
  unary(Op::Floor, f64({2, 3}, {-1.5, -0.3, 0.4, 1.7, 2.2, 3.6}));
  unary(Op::Gelu, uniform({2, 3}, -3, 3), "erf");
  unary(Op::Gelu, uniform({2, 3}, -3, 3), "tanh", {{"approximate", std::string("tanh")}});
  unary(Op::Cast, uniform({2, 3}), "f64_to_f64", {{"dtype", DType::f64}});
  // To f32 and back through the loss: f32 rounding needs a large step; the op is linear.
  c.push_back({"cast_f64_to_f32",
               Op::Cast,
               {uniform({2, 3})},
               {{"dtype", DType::f32}},
               /*tol=*/1e-4,
               /*h=*/1e-2});

  // Elementwise, binary: both operands broadcast ([2,1,3] with [4,1] -> [2,4,3]).
  auto binary = [&](Op op, InputSpec a, InputSpec b, std::string variant = "") {
    std::string name(op_name(op));
    c.push_back(
        {variant.empty() ? name : name + "_" + variant, op, {std::move(a), std::move(b)}, {}});
  };
  binary(Op::Add, uniform({2, 1, 3}), uniform({4, 1}), "broadcast");
  binary(Op::Sub, uniform({2, 1, 3}), uniform({4, 1}), "broadcast");
  binary(Op::Mul, uniform({2, 1, 3}), uniform({4, 1}), "broadcast");
  binary(Op::Mul, uniform({2, 3}), uniform({}), "scalar");
  binary(Op::Div, uniform({2, 1, 3}), away({4, 1}), "broadcast");
  binary(Op::Pow, uniform({2, 1, 3}, 0.5, 2), uniform({4, 1}, -1.5, 1.5), "broadcast");
  binary(Op::Maximum, distinct({2, 1, 3}), distinct({4, 1}, -1.9, 1.9), "broadcast");
  binary(Op::Minimum, distinct({2, 1, 3}), distinct({4, 1}, -1.9, 1.9), "broadcast");
  // Ties at positions 0 and 2: half to each side, which is what a central difference sees.
  binary(Op::Maximum, f64({4}, {1, 2, 3, -1}), f64({4}, {1, 5, 3, 0}), "ties");
  binary(Op::Minimum, f64({4}, {1, 2, 3, -1}), f64({4}, {1, 5, 3, 0}), "ties");
  c.push_back({"select_broadcast",
               Op::Select,
               {given(DType::boolean, {2, 3}, {1, 0, 0, 1, 1, 0}), uniform({2, 3}), uniform({3})},
               {}});

  // Reductions.
  auto reduce = [&](Op op, InputSpec x, std::string variant, Attrs attrs) {
    c.push_back({std::string(op_name(op)) + "_" + variant, op, {std::move(x)}, std::move(attrs)});
  };
  reduce(Op::Sum, uniform({2, 3, 4}), "all", {});
  reduce(Op::Sum, uniform({2, 3, 4}), "axes02_keepdims",
         {{"axes", IntList{0, 2}}, {"keepdims", true}});
  reduce(Op::Sum, uniform({2, 3, 4}), "last", {{"axes", IntList{-1}}});
  reduce(Op::Mean, uniform({2, 3, 4}), "all", {});
  reduce(Op::Mean, uniform({2, 3, 4}), "axes1_keepdims",
         {{"axes", IntList{1}}, {"keepdims", true}});
  reduce(Op::Mean, uniform({2, 3, 4}), "axes_m1_0", {{"axes", IntList{-1, 0}}});
  reduce(Op::Max, distinct({2, 3, 4}), "axes02", {{"axes", IntList{0, 2}}});
  reduce(Op::Max, distinct({2, 3, 4}), "all_keepdims", {{"keepdims", true}});
  reduce(Op::Min, distinct({2, 3, 4}), "axes1_keepdims",
         {{"axes", IntList{1}}, {"keepdims", true}});
  reduce(Op::Min, distinct({2, 3, 4}), "all", {});
  // A two-way tie in each row: shared evenly (0.5 each), as a central difference sees.
  reduce(Op::Max, f64({2, 3}, {1, 3, 3, 2, 0, 2}), "ties", {{"axes", IntList{1}}});
  reduce(Op::Min, f64({2, 3}, {1, 3, 1, 2, 0, 0}), "ties", {{"axes", IntList{1}}});

  // Movement.
  reduce(Op::Reshape, uniform({2, 3, 4}), "merge", {{"shape", IntList{4, -1}}});
  reduce(Op::Transpose, uniform({2, 3, 4}), "rotate", {{"perm", IntList{2, 0, 1}}});
  reduce(Op::BroadcastTo, uniform({3, 1}), "lead_and_unit", {{"shape", IntList{2, 3, 4}}});
  reduce(Op::Slice, uniform({4, 5}), "unit_step",
         {{"start", IntList{1, -4}}, {"stop", IntList{3, 5}}});
  reduce(Op::Slice, uniform({5, 7}), "strided",
         {{"start", IntList{0, 1}}, {"stop", IntList{5, 7}}, {"step", IntList{2, 3}}});
  reduce(Op::Slice, uniform({3, 6, 5}), "mixed_clamped",
         {{"start", IntList{-2, 1, 0}}, {"stop", IntList{10, 6, 4}}, {"step", IntList{1, 2, 1}}});
  c.push_back({"concat_axis1",
               Op::Concat,
               {uniform({2, 1, 3}), uniform({2, 3, 3}), uniform({2, 2, 3})},
               {{"axis", int64_t{1}}}});
  c.push_back(
      {"concat_last", Op::Concat, {uniform({2, 2}), uniform({2, 3})}, {{"axis", int64_t{-1}}}});
  reduce(Op::Pad, uniform({2, 3}), "low_high",
         {{"low", IntList{1, 0}}, {"high", IntList{2, 3}}, {"value", 0.5}});
  // Row 2 read twice: its gradient accumulates.
  c.push_back({"gather_repeated",
               Op::Gather,
               {uniform({4, 3}), i64({3}, {2, 0, 2})},
               {{"axis", int64_t{0}}}});
  c.push_back(
      {"gather_axis1", Op::Gather, {uniform({2, 4}), i64({2}, {3, 1})}, {{"axis", int64_t{1}}}});
  c.push_back({"scatter_add_repeated",
               Op::ScatterAdd,
               {uniform({4, 3}), i64({3}, {1, 3, 1}), uniform({3, 3})},
               {{"axis", int64_t{0}}}});
  c.push_back({"scatter_add_axis1",
               Op::ScatterAdd,
               {uniform({2, 3}), i64({2}, {2, 0}), uniform({2, 2})},
               {{"axis", int64_t{1}}}});

  // Collective: in one process (the reference interpreter) all_reduce is the identity,
  // and so is its gradient rule's all_reduce of the cotangent.
  reduce(Op::AllReduce, uniform({2, 3}), "mean", {{"reduction", std::string("mean")}});
  reduce(Op::AllReduce, uniform({3}), "sum", {{"reduction", std::string("sum")}});

  // Contractions.
  binary(Op::Matmul, uniform({2, 3}), uniform({3, 4}), "2d");
  binary(Op::Matmul, uniform({2, 1, 3, 4}), uniform({3, 4, 5}), "batch_broadcast");
  const Attrs plain = conv_attrs({1, 1}, {0, 0}, {1, 1}, 1);
  const Attrs odd = conv_attrs({2, 1}, {1, 2}, {2, 1}, 2);  // Strided, padded, dilated, grouped.
  c.push_back({"conv2d_basic", Op::Conv, {uniform({2, 3, 5, 5}), uniform({4, 3, 3, 3})}, plain});
  c.push_back({"conv2d_stride_pad_dilation_groups",
               Op::Conv,
               {uniform({1, 4, 7, 6}), uniform({6, 2, 3, 2})},
               odd});
  // conv of [1,4,7,6] by [6,2,3,2] with `odd` gives [1,6,3,9].
  c.push_back({"conv_backward_input_basic",
               Op::ConvBackwardInput,
               {uniform({2, 4, 3, 3}), uniform({4, 3, 3, 3})},
               with(plain, "input_shape", IntList{2, 3, 5, 5})});
  c.push_back({"conv_backward_input_stride_pad_dilation_groups",
               Op::ConvBackwardInput,
               {uniform({1, 6, 3, 9}), uniform({6, 2, 3, 2})},
               with(odd, "input_shape", IntList{1, 4, 7, 6})});
  c.push_back({"conv_backward_weight_basic",
               Op::ConvBackwardWeight,
               {uniform({2, 3, 5, 5}), uniform({2, 4, 3, 3})},
               with(plain, "weight_shape", IntList{4, 3, 3, 3})});
  c.push_back({"conv_backward_weight_stride_pad_dilation_groups",
               Op::ConvBackwardWeight,
               {uniform({1, 4, 7, 6}), uniform({1, 6, 3, 9})},
               with(odd, "weight_shape", IntList{6, 2, 3, 2})});
  const Attrs pool2 = {{"kernel", IntList{2, 2}}};
  // Overlapping windows with padding: [1,2,7,6] -> [1,2,4,7].
  const Attrs pool_odd = {
      {"kernel", IntList{3, 2}}, {"stride", IntList{2, 1}}, {"padding", IntList{1, 1}}};
  reduce(Op::MaxPool2d, distinct({2, 2, 4, 6}), "basic", pool2);
  reduce(Op::MaxPool2d, distinct({1, 2, 7, 6}), "stride_pad_overlap", pool_odd);
  reduce(Op::AvgPool2d, uniform({2, 2, 4, 6}), "basic", pool2);
  reduce(Op::AvgPool2d, uniform({1, 2, 7, 6}), "stride_pad_overlap", pool_odd);
  // x has no gradient (piecewise constant): both sides see zeros away from ties.
  c.push_back({"max_pool2d_backward_basic",
               Op::MaxPool2dBackward,
               {distinct({2, 2, 4, 6}), uniform({2, 2, 2, 3})},
               pool2});
  c.push_back({"max_pool2d_backward_stride_pad_overlap",
               Op::MaxPool2dBackward,
               {distinct({1, 2, 7, 6}), uniform({1, 2, 4, 7})},
               pool_odd});
  reduce(Op::AvgPool2dBackward, uniform({2, 2, 2, 3}), "basic",
         with(pool2, "input_shape", IntList{2, 2, 4, 6}));
  reduce(Op::AvgPool2dBackward, uniform({1, 2, 4, 7}), "stride_pad_overlap",
         with(pool_odd, "input_shape", IntList{1, 2, 7, 6}));
  c.push_back({"max_pool2d_select_basic",
               Op::MaxPool2dSelect,
               {distinct({2, 2, 4, 6}), uniform({2, 2, 4, 6})},
               pool2});
  c.push_back({"max_pool2d_select_stride_pad_overlap",
               Op::MaxPool2dSelect,
               {distinct({1, 2, 7, 6}), uniform({1, 2, 7, 6})},
               pool_odd});

  // Composites.
  reduce(Op::Softmax, uniform({3, 4}, -2, 2), "last", {});
  reduce(Op::Softmax, uniform({3, 4, 2}, -2, 2), "axis0", {{"axis", int64_t{0}}});
  reduce(Op::LogSoftmax, uniform({2, 4, 3}, -2, 2), "axis1", {{"axis", int64_t{1}}});
  reduce(Op::LogSoftmax, uniform({3, 5}, -2, 2), "last", {});
  c.push_back({"layer_norm_last",
               Op::LayerNorm,
               {uniform({3, 5}, -2, 2), uniform({5}, 0.5, 1.5), uniform({5})},
               {}});
  c.push_back({"layer_norm_two_axes",
               Op::LayerNorm,
               {uniform({2, 3, 4}, -2, 2), uniform({3, 4}, 0.5, 1.5), uniform({3, 4})},
               {{"axes", IntList{-1, -2}}, {"eps", 1e-3}}});
  for (const char* reduction : {"mean", "sum", "none"}) {
    c.push_back({std::string("cross_entropy_") + reduction,
                 Op::CrossEntropy,
                 {uniform({4, 5}, -2, 2), i64({4}, {0, 3, 4, 3})},
                 {{"reduction", std::string(reduction)}}});
    c.push_back({std::string("mse_") + reduction,
                 Op::Mse,
                 {uniform({3, 4}), uniform({3, 4})},
                 {{"reduction", std::string(reduction)}}});
  }
  // attention: Sq != Sk, odd lengths; causal, a padding mask broadcast over heads and
  // rows (key 0 never masked), both.
  const InputSpec q = uniform({2, 3, 4}), k = uniform({2, 5, 4}), v = uniform({2, 5, 3});
  const InputSpec pad = given(DType::boolean, {2, 1, 5}, {0, 1, 0, 0, 1, 0, 0, 1, 1, 0});
  c.push_back({"attention_plain", Op::Attention, {q, k, v}, {{"scale", 0.5}}});
  c.push_back({"attention_causal", Op::Attention, {q, k, v}, {{"scale", 0.5}, {"causal", true}}});
  c.push_back({"attention_padded", Op::Attention, {q, k, v, pad}, {{"scale", 0.7}}});
  c.push_back({"attention_causal_padded", Op::Attention, {q, k, v, pad},
               {{"scale", 0.7}, {"causal", true}}});
  return c;
}

Tensor make_input(const InputSpec& spec, std::mt19937_64& rng) {
  const int64_t n = spec.type.shape.numel();
  std::vector<double> v;
  std::uniform_real_distribution<double> unit(0, 1);
  switch (spec.fill) {
    case Fill::kGiven:
      v = spec.values;
      break;
    case Fill::kUniform:
      for (int64_t i = 0; i < n; ++i) v.push_back(spec.lo + (spec.hi - spec.lo) * unit(rng));
      break;
    case Fill::kAwayFromZero:
      for (int64_t i = 0; i < n; ++i) {
        double m = spec.lo + (spec.hi - spec.lo) * unit(rng);
        v.push_back(unit(rng) < 0.5 ? -m : m);
      }
      break;
    case Fill::kDistinct:
      for (int64_t i = 0; i < n; ++i) {
        v.push_back(spec.lo + (spec.hi - spec.lo) * static_cast<double>(i) /
                                  static_cast<double>(std::max<int64_t>(n - 1, 1)));
      }
      std::shuffle(v.begin(), v.end(), rng);
      break;
  }
  EXPECT_EQ(static_cast<int64_t>(v.size()), n);
  return Tensor::from_doubles(spec.type.dtype, spec.type.shape, v);
}

/// l = sum(w * op(x0, x1, ...)): inputs x0.. then w.
Graph build(const Case& c) {
  Graph g("gradcheck");
  std::vector<ValueId> xs;
  std::vector<Type> types;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    xs.push_back(g.add_input("x" + std::to_string(i), c.inputs[i].type));
    types.push_back(c.inputs[i].type);
  }
  StatusOr<Type> y_type = infer_node_type(Node{c.op, {}, c.attrs, {}, {}}, types);
  EXPECT_TRUE(y_type.ok()) << y_type.error().to_string();
  ValueId w = g.add_input("w", *y_type);
  GradBuilder b(g, Location{});
  ValueId y = b.op(c.op, xs, c.attrs);
  g.add_output(b.op(Op::Sum, {b.mul(y, w)}));
  return g;
}

double run_loss(const Graph& g, const std::vector<Tensor>& inputs) {
  auto r = reference::run(g, inputs);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->outputs[0].to_doubles()[0] : NAN;
}

class GradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const Case& c = GetParam();
  std::mt19937_64 rng(std::hash<std::string>{}(c.name) % 100000);
  Graph g = build(c);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  std::vector<Tensor> inputs;
  std::vector<std::string> wrt;
  std::vector<int> wrt_index;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(make_input(c.inputs[i], rng));
    if (is_floating(c.inputs[i].type.dtype)) {
      wrt.push_back("x" + std::to_string(i));
      wrt_index.push_back(static_cast<int>(i));
    }
  }
  const Type w_type = g.type(g.inputs().back().value);
  std::vector<double> w(w_type.shape.numel());
  std::uniform_real_distribution<double> wdist(-1, 1);
  for (double& v : w) v = wdist(rng);
  inputs.push_back(Tensor::from_doubles(w_type.dtype, w_type.shape, w));

  auto grad = gradient_graph(g, 0, wrt);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_TRUE(verify(*grad).ok()) << verify(*grad).to_string();
  auto analytic = reference::run(*grad, inputs);
  ASSERT_TRUE(analytic.ok()) << analytic.error().to_string();

  for (size_t k = 0; k < wrt.size(); ++k) {
    const int i = wrt_index[k];
    const std::vector<double> got = analytic->outputs[k].to_doubles();
    const std::vector<double> x = inputs[i].to_doubles();
    ASSERT_EQ(got.size(), x.size());
    double worst = 0;
    for (size_t j = 0; j < x.size(); ++j) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      std::vector<double> xp = x, xm = x;
      xp[j] += c.h;
      xm[j] -= c.h;
      plus[i] = Tensor::from_doubles(inputs[i].dtype(), inputs[i].shape(), xp);
      minus[i] = Tensor::from_doubles(inputs[i].dtype(), inputs[i].shape(), xm);
      const double numeric = (run_loss(g, plus) - run_loss(g, minus)) / (2 * c.h);
      const double err = std::abs(got[j] - numeric) / (1 + std::abs(numeric));
      worst = std::max(worst, err);
      EXPECT_LE(err, c.tol) << c.name << ": d l / d " << wrt[k] << "[" << j << "] is " << got[j]
                            << ", central difference " << numeric;
    }
    std::ostringstream worst_text;
    worst_text << worst;
    RecordProperty("worst_error_" + wrt[k], worst_text.str());
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(GradCheckCompleteness, EveryOpHasARuleOrAReasonAndEveryRuleACase) {
  std::set<Op> checked;
  for (const Case& c : cases()) checked.insert(c.op);
  for (Op op : all_ops()) {
    const GradEntry& e = grad_entry(op);
    EXPECT_TRUE((e.rule != nullptr) != (e.not_differentiable != nullptr))
        << op_name(op) << " needs exactly one of a gradient rule and a not-differentiable reason";
    if (e.rule != nullptr) {
      EXPECT_TRUE(checked.count(op)) << op_name(op) << " has a gradient rule but no gradcheck case";
    }
  }
}

TEST(GradCheckCompleteness, NotDifferentiableOpsSayWhy) {
  auto g = [](Op op) { return std::string(grad_entry(op).not_differentiable); };
  EXPECT_EQ(g(Op::Gt), "boolean result");
  EXPECT_EQ(g(Op::Argmax), "integer result");
  EXPECT_EQ(g(Op::RandomUniform), "random draw: not differentiable w.r.t. its key");
  Graph graph("f");
  ValueId x = graph.add_input("x", Type{DType::f32, Shape({3})});
  GradBuilder b(graph, Location{});
  ValueId n =
      b.op(Op::Cast, {b.op(Op::Argmax, {x}, {{"axis", int64_t{0}}})}, {{"dtype", DType::f32}});
  graph.add_output(b.mul(n, b.op(Op::Sum, {x})));
  auto grad = gradient_graph(graph, 0, {"x"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();  // argmax's integer result needs none
}

TEST(GradCheckCompleteness, CastThroughAnIntegerCarriesNoGradient) {
  // l = sum(cast(cast(x, i64), f64) * x): only the second factor has a gradient.
  Graph g("f");
  ValueId x = g.add_input("x", Type{DType::f64, Shape({3})});
  GradBuilder b(g, Location{});
  ValueId t =
      b.op(Op::Cast, {b.op(Op::Cast, {x}, {{"dtype", DType::i64}})}, {{"dtype", DType::f64}});
  g.add_output(b.op(Op::Sum, {b.mul(t, x)}));
  auto grad = gradient_graph(g, 0, {"x"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  auto r = reference::run(*grad, {Tensor::from_vector<double>({3}, {1.5, -2.7, 3.2})});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].to_doubles(), (std::vector<double>{1, -2, 3}));
}

}  // namespace
}  // namespace weft

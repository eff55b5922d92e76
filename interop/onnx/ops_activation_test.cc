// The activation converters (ops/activation.cc): one-node models run on the reference
// interpreter against values computed here, and the refusals' messages.
#include <gtest/gtest.h>

#include <cmath>

#include "interop/onnx/testing/elementwise_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_activation_test {  // this file's names, apart in its package's unity test

using elementwise_case::f32;
using elementwise_case::of;
using elementwise_case::run_op;
using elementwise_case::error_of;
using elementwise_case::expect_values;

// ---------------------------------------------------------------------------
// Activations

TEST(Activation, WithTheirAttributeDefaults) {
  const std::vector<double> x = {-3, -1, -0.25, 0, 0.5, 2};
  auto each = [&](double (*fn)(double)) {
    std::vector<double> out;
    for (double v : x) out.push_back(fn(v));
    return out;
  };
  expect_values(run_op("LeakyRelu", {f32(x)}), DType::f32,
                each([](double v) { return v < 0 ? 0.01 * v : v; }));
  expect_values(run_op("Elu", {f32(x)}), DType::f32,
                each([](double v) { return v < 0 ? std::exp(v) - 1 : v; }));
  expect_values(run_op("Selu", {f32(x)}), DType::f32, each([](double v) {
                  const double a = 1.6732632423543772, g = 1.0507009873554805;
                  return g * (v > 0 ? v : a * std::exp(v) - a);
                }));
  expect_values(run_op("Celu", {f32(x)}), DType::f32,
                each([](double v) { return std::max(0.0, v) + std::min(0.0, std::exp(v) - 1); }));
  expect_values(run_op("HardSigmoid", {f32(x)}), DType::f32,
                each([](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }));
  expect_values(run_op("ThresholdedRelu", {f32(x)}), DType::f32,
                each([](double v) { return v > 1 ? v : 0; }));
  expect_values(run_op("Shrink", {f32(x)}), DType::f32, each([](double v) {
                  return v < -0.5 ? v : v > 0.5 ? v : 0;
                }));
}

TEST(Activation, WithAttributesSet) {
  const Tensor x = f32({-3, -1, -0.25, 0, 0.5, 2});
  auto alpha = [](double a) { return [a](onnx::NodeProto& n) { set_attr(n, "alpha", a); }; };
  expect_values(run_op("LeakyRelu", {x}, 17, alpha(2.0)), DType::f32, {-6, -2, -0.5, 0, 0.5, 2});
  expect_values(run_op("Elu", {x}, 6, alpha(0.5)), DType::f32,
                {0.5 * std::expm1(-3), 0.5 * std::expm1(-1), 0.5 * std::expm1(-0.25), 0, 0.5, 2});
  expect_values(run_op("Celu", {x}, 17, alpha(2.0)), DType::f32,
                {2 * std::expm1(-1.5), 2 * std::expm1(-0.5), 2 * std::expm1(-0.125), 0, 0.5, 2},
                1e-5);
  expect_values(run_op("Selu", {x}, 6,
                       [](onnx::NodeProto& n) {
                         set_attr(n, "alpha", 2.0);
                         set_attr(n, "gamma", 3.0);
                       }),
                DType::f32,
                {6 * std::expm1(-3), 6 * std::expm1(-1), 6 * std::expm1(-0.25), 0, 1.5, 6}, 1e-5);
  expect_values(run_op("HardSigmoid", {x}, 6,
                       [](onnx::NodeProto& n) {
                         set_attr(n, "alpha", 0.5);
                         set_attr(n, "beta", 0.25);
                       }),
                DType::f32, {0, 0, 0.125, 0.25, 0.5, 1});
  expect_values(run_op("ThresholdedRelu", {x}, 17, alpha(-0.5)), DType::f32,
                {0, 0, -0.25, 0, 0.5, 2});
  expect_values(run_op("Shrink", {x}, 17,
                       [](onnx::NodeProto& n) {
                         set_attr(n, "lambd", 1.0);
                         set_attr(n, "bias", 0.5);
                       }),
                DType::f32, {-2.5, 0, 0, 0, 0, 1.5});
  expect_values(
      run_op("LeakyRelu", {x}, 1,
             [](onnx::NodeProto& n) { set_attr(n, "consumed_inputs", std::vector<int64_t>{0}); }),
      DType::f32, {-0.03, -0.01, -0.0025, 0, 0.5, 2});
}

TEST(Activation, ShrinkOnIntegers) {
  auto attrs = [](double lambd, double bias) {
    return [=](onnx::NodeProto& n) {
      set_attr(n, "lambd", lambd);
      set_attr(n, "bias", bias);
    };
  };
  // |x| > 1.5 means x <= -2 or x >= 2.
  expect_values(run_op("Shrink", {of(DType::i32, {-3, -2, -1, 0, 1, 2, 3})}, 17, attrs(1.5, 1)),
                DType::i32, {-2, -1, 0, 0, 0, 1, 2}, 0);
  EXPECT_EQ(
      error_of("Shrink", {of(DType::i32, {1})}, 17, attrs(1.5, 0.5)),
      "node '#0' (Shrink, opset 17): a fractional bias (0.500000) on i32 input is not supported");
}

TEST(Activation, PReluSlopeBroadcastsToX) {
  const Tensor x = f32({1, 2, 2}, {-1, -2, -3, 4});
  // Opset 9: NumPy broadcasting of slope [2] to x's last axis.
  expect_values(run_op("PRelu", {x, f32({2}, {0.5, 0.25})}, 9), DType::f32, {-0.5, -0.5, -1.5, 4});
  // Opset 6: a 1-D slope holds one value per channel (axis 1).
  expect_values(run_op("PRelu", {x, f32({2}, {0.5, 0.25})}, 6), DType::f32, {-0.5, -1, -0.75, 4});
  expect_values(run_op("PRelu", {of(DType::i32, {-4, 4}), of(DType::i32, {3})}, 16), DType::i32,
                {-12, 4}, 0);
  EXPECT_EQ(error_of("PRelu", {f32({-1, 1}), f32({2, 2}, {1, 1, 1, 1})}, 9),
            "node '#0' (PRelu, opset 9): the slope [2,2] does not broadcast to X's shape [2]");
}

TEST(Activation, SoftmaxFamilyReadsXAsAMatrixBeforeOpset13) {
  const Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 1, 1, 5, 0});
  auto axis = [](int a) { return [a](onnx::NodeProto& n) { set_attr(n, "axis", a); }; };
  // Opset 11, axis 1: each batch's four values form one row.
  std::vector<double> want;
  for (int b = 0; b < 2; ++b) {
    double z = 0;
    for (int k = 0; k < 4; ++k) z += std::exp(x.get_double(4 * b + k));
    for (int k = 0; k < 4; ++k) want.push_back(std::exp(x.get_double(4 * b + k)) / z);
  }
  expect_values(run_op("Softmax", {x}, 11, axis(1)), DType::f32, want);
  std::vector<double> log_want;
  for (double w : want) log_want.push_back(std::log(w));
  expect_values(run_op("LogSoftmax", {x}, 11), DType::f32, log_want);
  // Opset 13, axis 1: along that axis only.
  want.clear();
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 2; ++i) {
      const double a = x.get_double(4 * b + i), c = x.get_double(4 * b + 2 + i);
      want.push_back(std::exp(a) / (std::exp(a) + std::exp(c)));
    }
    for (int i = 0; i < 2; ++i) {
      const double a = x.get_double(4 * b + i), c = x.get_double(4 * b + 2 + i);
      want.push_back(std::exp(c) / (std::exp(a) + std::exp(c)));
    }
  }
  // (want is laid out [b][k][i]; the order of x is [b][axis][i], the same.)
  expect_values(run_op("Softmax", {x}, 13, axis(1)), DType::f32, want);
  // Hardmax: 1 at the first maximum.
  expect_values(run_op("Hardmax", {x}, 13, axis(1)), DType::f32, {0, 0, 1, 1, 0, 1, 1, 0});
  expect_values(run_op("Hardmax", {x}, 13), DType::f32, {0, 1, 0, 1, 1, 0, 1, 0});
  expect_values(run_op("Hardmax", {x}, 11, axis(1)), DType::f32, {0, 0, 0, 1, 0, 0, 1, 0});
  EXPECT_EQ(error_of("Softmax", {x}, 13, axis(3)),
            "node '#0' (Softmax, opset 13): axis 3 is out of range for x [2,2,2]");
}

}  // namespace ops_activation_test
}  // namespace
}  // namespace weft::onnx_io

// The elementwise converters (ops/elementwise.cc): one-node models run on the reference
// interpreter against values computed here, and the refusals' messages. The activations:
// ops_activation_test; ONNX's node tests of both: ops_elementwise_node_cases_test.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <numbers>

#include "interop/onnx/testing/elementwise_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_elementwise_test {  // this file's names, apart in its package's unity test

using elementwise_case::kInf;
using elementwise_case::kNaN;
using elementwise_case::f32;
using elementwise_case::of;
using elementwise_case::run_op;
using elementwise_case::error_of;
using elementwise_case::expect_values;

// ---------------------------------------------------------------------------
// Unary ops

struct UnaryCase {
  const char* op;
  double (*fn)(double);
  bool positive_only;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double relu(double x) { return x > 0 ? x : 0; }
double softplus(double x) { return std::log1p(std::exp(x)); }
double neg(double x) { return -x; }
double reciprocal(double x) { return 1 / x; }
double softsign(double x) { return x / (1 + std::fabs(x)); }
double hard_swish(double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }
double sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

class Unary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(Unary, MatchesTheMathOnF32AndF64) {
  const UnaryCase& c = GetParam();
  std::vector<double> x = {-2.5, -0.7, -0.25, 0.0, 0.3, 0.5, 1.5, 3.25};
  if (c.positive_only) x = {0.125, 0.3, 0.5, 1.0, 1.5, 3.25, 10.0, 100.0};
  if (std::string(c.op) == "Atanh") x = {-0.9, -0.5, -1e-6, 0.0, 1e-6, 0.25, 0.5, 0.99};
  if (std::string(c.op) == "Acosh") x = {1.0, 1.0000001, 1.001, 1.5, 2.0, 10.0, 1e5, 1e30};
  std::vector<double> want;
  for (double v : x) want.push_back(c.fn(static_cast<float>(v)));
  expect_values(run_op(c.op, {f32(x)}), DType::f32, want, 2e-6);
  want.clear();
  for (double v : x) want.push_back(c.fn(v));
  expect_values(run_op(c.op, {of(DType::f64, x)}), DType::f64, want, 1e-14);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, Unary,
    ::testing::Values(UnaryCase{"Abs", [](double x) { return std::fabs(x); }, false},
                      UnaryCase{"Neg", neg, false},
                      UnaryCase{"Exp", [](double x) { return std::exp(x); }, false},
                      UnaryCase{"Log", [](double x) { return std::log(x); }, true},
                      UnaryCase{"Sqrt", [](double x) { return std::sqrt(x); }, true},
                      UnaryCase{"Reciprocal", reciprocal, true},
                      UnaryCase{"Tanh", [](double x) { return std::tanh(x); }, false},
                      UnaryCase{"Sigmoid", sigmoid, false}, UnaryCase{"Relu", relu, false},
                      UnaryCase{"Sin", [](double x) { return std::sin(x); }, false},
                      UnaryCase{"Cos", [](double x) { return std::cos(x); }, false},
                      UnaryCase{"Tan", [](double x) { return std::tan(x); }, false},
                      UnaryCase{"Cosh", [](double x) { return std::cosh(x); }, false},
                      UnaryCase{"Atanh", [](double x) { return std::atanh(x); }, false},
                      UnaryCase{"Sinh", [](double x) { return std::sinh(x); }, false},
                      UnaryCase{"Asinh", [](double x) { return std::asinh(x); }, false},
                      UnaryCase{"Acosh", [](double x) { return std::acosh(x); }, false},
                      UnaryCase{"Erf", [](double x) { return std::erf(x); }, false},
                      UnaryCase{"Sign", sign, false},
                      UnaryCase{"Floor", [](double x) { return std::floor(x); }, false},
                      UnaryCase{"Ceil", [](double x) { return std::ceil(x); }, false},
                      UnaryCase{"Softplus", softplus, false},
                      UnaryCase{"Softsign", softsign, false},
                      UnaryCase{"HardSwish", hard_swish, false}),
    [](const auto& info) { return std::string(info.param.op); });

TEST(Elementwise, OpsetOneAcceptsConsumedInputs) {
  expect_values(
      run_op("Neg", {f32({1, -2})}, 1,
             [](onnx::NodeProto& n) { set_attr(n, "consumed_inputs", std::vector<int64_t>{0}); }),
      DType::f32, {-1, 2});
  EXPECT_EQ(
      error_of("Neg", {f32({1})}, 6,
               [](onnx::NodeProto& n) { set_attr(n, "consumed_inputs", std::vector<int64_t>{0}); }),
      "node '#0' (Neg, opset 6): attribute 'consumed_inputs' is not supported");
}

TEST(Elementwise, CoshDoesNotOverflowBeforeItsResult) {
  // exp(89) overflows f32; cosh(89) = 2.2e38 does not.
  expect_values(run_op("Cosh", {f32({89, -89})}), DType::f32, {std::cosh(89.0), std::cosh(89.0)},
                1e-6);
}

TEST(Elementwise, HyperbolicFunctionsKeepTheirPrecisionAtTheEnds) {
  // Near 0 (where exp(x) - exp(-x) and log(x + sqrt(x² + 1)) cancel), near 1 for acosh,
  // and where x² or exp(x) overflow before the result does.
  const std::vector<double> x = {-1e-10, 3e-8, 0.4999, 0.5, 2, 89, 1e20, -1e30};
  for (DType dt : {DType::f32, DType::f64}) {
    std::vector<double> sinh, asinh;
    for (double v : x) {
      const double r = dt == DType::f32 ? static_cast<float>(v) : v;
      sinh.push_back(std::sinh(r));
      asinh.push_back(std::asinh(r));
    }
    const double tol = dt == DType::f32 ? 4e-7 : 1e-15;
    expect_values(run_op("Sinh", {of(dt, {-1e-10, 3e-8, 0.4999, 0.5, 2, 89})}), dt,
                  std::vector<double>(sinh.begin(), sinh.begin() + 6), tol, /*relative=*/true);
    expect_values(run_op("Asinh", {of(dt, x)}), dt, asinh, tol, /*relative=*/true);
    const double near1 = dt == DType::f32 ? 1 + std::ldexp(1.0, -23) : 1 + std::ldexp(1.0, -52);
    expect_values(run_op("Acosh", {of(dt, {near1, 1e20, 0.5})}), dt,
                  {std::acosh(near1), std::acosh(1e20), kNaN}, tol, /*relative=*/true);
  }
}

TEST(Elementwise, RoundHalvesToEven) {
  const std::vector<double> x = {-2.5,      -1.5,       -0.5,      -0.49999997, 0.5,  1.5, 2.5,
                                 2.4999998, 0.49999997, 8388607.5, 1e10,        kInf, kNaN};
  const std::vector<double> want = {-2, -2, 0, 0, 0, 2, 2, 2, 0, 8388608, 1e10, kInf, kNaN};
  expect_values(run_op("Round", {f32(x)}), DType::f32, want, 0);
  expect_values(run_op("Round", {of(DType::f64, {-3.5, 4.5, 4.500000001, -0.2})}), DType::f64,
                {-4, 4, 5, 0}, 0);
  expect_values(run_op("Round", {of(DType::f16, {0.5, 1.5, 2.5, 1000.5})}), DType::f16,
                {0, 2, 2, 1000}, 0);
}

TEST(Elementwise, UnsignedAbsAndSign) {
  expect_values(run_op("Abs", {of(DType::u8, {0, 3, 255})}), DType::u8, {0, 3, 255}, 0);
  expect_values(run_op("Sign", {of(DType::u8, {0, 3, 255})}), DType::u8, {0, 1, 1}, 0);
  expect_values(run_op("Sign", {of(DType::i32, {-7, 0, 9})}), DType::i32, {-1, 0, 1}, 0);
}

TEST(Elementwise, IsNaNAndIsInf) {
  const Tensor x = f32({1, kNaN, kInf, -kInf, -2});
  expect_values(run_op("IsNaN", {x}), DType::boolean, {0, 1, 0, 0, 0}, 0);
  expect_values(run_op("IsInf", {x}), DType::boolean, {0, 0, 1, 1, 0}, 0);
  expect_values(
      run_op("IsInf", {x}, 17, [](onnx::NodeProto& n) { set_attr(n, "detect_negative", 0); }),
      DType::boolean, {0, 0, 1, 0, 0}, 0);
  expect_values(
      run_op("IsInf", {x}, 17, [](onnx::NodeProto& n) { set_attr(n, "detect_positive", 0); }),
      DType::boolean, {0, 0, 0, 1, 0}, 0);
  expect_values(run_op("IsInf", {x}, 17,
                       [](onnx::NodeProto& n) {
                         set_attr(n, "detect_positive", 0);
                         set_attr(n, "detect_negative", 0);
                       }),
                DType::boolean, {0, 0, 0, 0, 0}, 0);
}

// ---------------------------------------------------------------------------
// Binary and variadic ops

TEST(Elementwise, ArithmeticBroadcastsLikeNumPy) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3}, {10, 20, 40});
  expect_values(run_op("Add", {a, b}), DType::f32, {11, 22, 43, 14, 25, 46});
  expect_values(run_op("Sub", {a, b}), DType::f32, {-9, -18, -37, -6, -15, -34});
  expect_values(run_op("Mul", {a, b}), DType::f32, {10, 40, 120, 40, 100, 240});
  expect_values(run_op("Div", {a, b}), DType::f32, {0.1, 0.1, 0.075, 0.4, 0.25, 0.15});
  expect_values(run_op("Div", {of(DType::i32, {7, -7}), of(DType::i32, {2, 2})}), DType::i32,
                {3, -3}, 0);
}

TEST(Elementwise, LegacyBroadcastAlignsTheRightOperandAtAxis) {
  // Opset 6: B [3] broadcast over A [2,3,2] from axis 1.
  const Tensor a = f32({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}), b = f32({1, 2, 3});
  auto legacy = [](int axis) {
    return [axis](onnx::NodeProto& n) {
      set_attr(n, "broadcast", 1);
      if (axis >= 0) set_attr(n, "axis", axis);
    };
  };
  expect_values(run_op("Add", {a, b}, 6, legacy(1)), DType::f32,
                {1, 1, 2, 2, 3, 3, 2, 2, 3, 3, 4, 4});
  // Without axis, B lines up with A's trailing dims; a one-element B is a scalar.
  expect_values(run_op("Mul", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {10, 100})}, 6, legacy(-1)),
                DType::f32, {10, 200, 30, 400});
  expect_values(run_op("Sub", {f32({2}, {1, 2}), f32({1, 1}, {5})}, 1, legacy(-1)), DType::f32,
                {-4, -3});
  expect_values(run_op("Pow", {f32({2}, {2, 3}), f32({1}, {2})}, 6, legacy(-1)), DType::f32,
                {4, 9});
  // B's dims of size 1 repeat, as PyTorch's exports expect.
  expect_values(run_op("Add", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {10, 20})}, 6, legacy(-1)),
                DType::f32, {11, 12, 23, 24});
  EXPECT_EQ(error_of("Add", {a, b}, 6, legacy(0)),
            "node '#0' (Add, opset 6): B [3] does not match the dims of A [2,3,2] from axis 0");
  EXPECT_EQ(error_of("Add", {a, b}, 6),
            "node '#0' (Add, opset 6): without broadcast=1 the operands must have one shape, not "
            "[2,3,2] and [3]");
  EXPECT_EQ(error_of("Add", {a, b}, 7, legacy(1)),
            "node '#0' (Add, opset 7): attribute 'broadcast' is not supported");
}

TEST(Elementwise, PowWithAnExponentOfAnotherDtype) {
  expect_values(run_op("Pow", {f32({2, -3, 0.5}), f32({3, 2, -1})}), DType::f32, {8, 9, 2});
  expect_values(run_op("Pow", {f32({2, -3}), of(DType::i64, {3, 3})}), DType::f32, {8, -27});
  expect_values(run_op("Pow", {of(DType::i32, {2, 3}), f32({5, 0.5})}), DType::i32, {32, 1}, 0);
  expect_values(run_op("Pow", {of(DType::i32, {2, -3}), of(DType::i64, {10, 3})}), DType::i32,
                {1024, -27}, 0);
}

TEST(Elementwise, ComparisonsAndLogic) {
  const Tensor a = f32({1, 2, 3}), b = f32({2, 2, 2});
  expect_values(run_op("Equal", {a, b}), DType::boolean, {0, 1, 0}, 0);
  expect_values(run_op("Less", {a, b}), DType::boolean, {1, 0, 0}, 0);
  expect_values(run_op("Greater", {a, b}), DType::boolean, {0, 0, 1}, 0);
  expect_values(run_op("LessOrEqual", {a, b}), DType::boolean, {1, 1, 0}, 0);
  expect_values(run_op("GreaterOrEqual", {a, b}), DType::boolean, {0, 1, 1}, 0);
  const Tensor p = of(DType::boolean, {0, 0, 1, 1}), q = of(DType::boolean, {0, 1, 0, 1});
  expect_values(run_op("And", {p, q}), DType::boolean, {0, 0, 0, 1}, 0);
  expect_values(run_op("Or", {p, q}), DType::boolean, {0, 1, 1, 1}, 0);
  expect_values(run_op("Xor", {p, q}), DType::boolean, {0, 1, 1, 0}, 0);
  expect_values(run_op("Not", {p}), DType::boolean, {1, 1, 0, 0}, 0);
}

TEST(Elementwise, IntegerModTakesTheDivisorsSignUnlessFmod) {
  const Tensor a = of(DType::i32, {7, -7, 7, -7, 6, 0}), b = of(DType::i32, {3, 3, -3, -3, 3, -2});
  expect_values(run_op("Mod", {a, b}), DType::i32, {1, 2, -2, -1, 0, 0}, 0);
  expect_values(run_op("Mod", {a, b}, 17, [](onnx::NodeProto& n) { set_attr(n, "fmod", 1); }),
                DType::i32, {1, -1, 1, -1, 0, 0}, 0);
  expect_values(run_op("Mod", {of(DType::u8, {7, 200}), of(DType::u8, {3, 7})}), DType::u8, {1, 4},
                0);
}

TEST(Elementwise, FloatingModIsRefused) {
  EXPECT_EQ(
      error_of("Mod", {f32({1}), f32({2})}, 17, [](onnx::NodeProto& n) { set_attr(n, "fmod", 1); }),
      "node '#0' (Mod, opset 17): Mod of f32 operands (weft has no remainder op, and "
      "a - trunc(a / b) * b is not exact) is not supported");
  EXPECT_EQ(error_of("Mod", {f32({1}), f32({2})}),
            "node '#0' (Mod, opset 17): Mod of floating operands requires fmod=1");
}

TEST(Elementwise, BitShiftOnBytes) {
  auto direction = [](const char* d) {
    return [d](onnx::NodeProto& n) { set_attr(n, "direction", d); };
  };
  const Tensor x = of(DType::u8, {1, 3, 255, 200, 7, 255}), y = of(DType::u8, {0, 2, 1, 7, 8, 200});
  expect_values(run_op("BitShift", {x, y}, 11, direction("LEFT")), DType::u8, {1, 12, 254, 0, 0, 0},
                0);
  expect_values(run_op("BitShift", {x, y}, 11, direction("RIGHT")), DType::u8, {1, 0, 127, 1, 0, 0},
                0);
  EXPECT_EQ(error_of("BitShift", {of(DType::i32, {1}), of(DType::i32, {1})}, 11, direction("LEFT")),
            "node '#0' (BitShift, opset 11): BitShift takes unsigned integers, not i32");
  EXPECT_EQ(error_of("BitShift", {x, y}, 11, direction("UP")),
            "node '#0' (BitShift, opset 11): direction must be LEFT or RIGHT, not 'UP'");
}

TEST(Elementwise, VariadicOpsFoldTheirInputs) {
  const Tensor a = f32({2, 2}, {1, 5, -1, 8}), b = f32({2}, {2, 3}), c = f32({1}, {4});
  expect_values(run_op("Max", {a, b, c}), DType::f32, {4, 5, 4, 8});
  expect_values(run_op("Min", {a, b, c}), DType::f32, {1, 3, -1, 3});
  expect_values(run_op("Sum", {a, b, c}), DType::f32, {7, 12, 5, 15});
  expect_values(run_op("Mean", {a, b, c}), DType::f32, {7 / 3., 4, 5 / 3., 5});
  expect_values(run_op("Max", {a}), DType::f32, {1, 5, -1, 8});
  expect_values(run_op("Max", {of(DType::i64, {1, 9}), of(DType::i64, {4, 2})}), DType::i64, {4, 9},
                0);
}

TEST(Elementwise, WhereSelects) {
  expect_values(run_op("Where", {of(DType::boolean, {1, 0, 1}), f32({1, 2, 3}), f32({-1})}),
                DType::f32, {1, -1, 3});
}

TEST(Elementwise, ClipBoundsAreAttributesBeforeOpset11AndInputsAfter) {
  const Tensor x = f32({-kInf, -3, 0.5, 3, kInf, kNaN});
  auto bounds = [](onnx::NodeProto& n) {
    set_attr(n, "min", -1.0);
    set_attr(n, "max", 2.0);
  };
  expect_values(run_op("Clip", {x}, 6, bounds), DType::f32, {-1, -1, 0.5, 2, 2, kNaN});
  // Opset 6's defaults are float's extremes.
  expect_values(run_op("Clip", {x}, 6), DType::f32, {-FLT_MAX, -3, 0.5, 3, FLT_MAX, kNaN});
  expect_values(run_op("Clip", {x, f32(Shape{}, {-1}), f32(Shape{}, {2})}, 11), DType::f32,
                {-1, -1, 0.5, 2, 2, kNaN});
  expect_values(run_op("Clip", {x, f32(Shape{}, {2})}, 11, {}, {"x", "", "hi"}), DType::f32,
                {-kInf, -3, 0.5, 2, 2, kNaN});
  expect_values(run_op("Clip", {x}, 13), DType::f32, {-kInf, -3, 0.5, 3, kInf, kNaN});
  expect_values(
      run_op("Clip", {of(DType::i64, {-5, 5, 50}), of(DType::i64, {0}), of(DType::i64, {10})}, 12),
      DType::i64, {0, 5, 10}, 0);
  EXPECT_EQ(error_of("Clip", {x, f32({-1, 0})}, 11),
            "node '#0' (Clip, opset 11): min must be a scalar, not [2]");
}

TEST(Elementwise, ClipBoundsAndQuantizationScalesAreNeverTrained) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {3});
  b.initializer("six", f32(Shape{}, {6}));
  b.initializer("zero", f32(Shape{}, {0}));
  b.initializer("scale", f32({3}, {0.5, 1, 2}));
  b.node("Clip", {"x", "zero", "six"}, {"relu6"});
  set_attr(b.node("QuantizeLinear", {"relu6", "scale"}, {"q"}), "axis", 0);
  b.output("q", DType::u8);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->params.size(), 1u);
  EXPECT_EQ(g->params[0].name, "scale");
  EXPECT_EQ(g->params[0].kind, InputKind::state);
  expect_values(import_and_run(b.file(), {f32({-1, 3, 9})}).value()[0], DType::u8, {0, 3, 3}, 0);
}

TEST(Elementwise, ShapeArithmeticThroughTheseOpsIsFolded) {
  // ceil(shape(x) / 2) as int64, computed at import time: one `full` is left.
  OnnxBuilder b(13);
  b.input("x", DType::f32, {4, 3});
  b.node("Shape", {"x"}, {"s"});
  set_attr(b.node("Cast", {"s"}, {"sf"}), "to", static_cast<int>(onnx::TensorProto::FLOAT));
  b.initializer("two", Tensor::from_vector<int64_t>(Shape{}, {2}));
  set_attr(b.node("Cast", {"two"}, {"twof"}), "to", static_cast<int>(onnx::TensorProto::FLOAT));
  b.node("Div", {"sf", "twof"}, {"halves"});
  b.node("Ceil", {"halves"}, {"up"});
  set_attr(b.node("Cast", {"up"}, {"y"}), "to", static_cast<int>(onnx::TensorProto::INT64));
  b.output("y", DType::i64);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->graph.nodes().size(), 1u);
  EXPECT_EQ(g->graph.nodes()[0].op, Op::Full);
  expect_values(import_and_run(b.file(), {f32({4, 3}, std::vector<double>(12, 0))}).value()[0],
                DType::i64, {2, 2}, 0);
}

TEST(Elementwise, CastAndCastLike) {
  const Tensor x = f32({-2.7, 0, 0.1, 65519, 3.5});
  auto to = [](int t) { return [t](onnx::NodeProto& n) { set_attr(n, "to", t); }; };
  expect_values(run_op("Cast", {x}, 13, to(onnx::TensorProto::INT32)), DType::i32,
                {-2, 0, 0, 65519, 3}, 0);
  expect_values(run_op("Cast", {x}, 13, to(onnx::TensorProto::BOOL)), DType::boolean,
                {1, 0, 1, 1, 1}, 0);
  expect_values(run_op("Cast", {x}, 13, to(onnx::TensorProto::FLOAT16)), DType::f16,
                {-2.69921875, 0, 0.0999755859375, 65504, 3.5}, 0);
  // Opset 1 names the type.
  expect_values(run_op("Cast", {x}, 1, [](onnx::NodeProto& n) { set_attr(n, "to", "DOUBLE"); }),
                DType::f64, {-2.7f, 0, 0.1f, 65519, 3.5}, 0);
  expect_values(run_op("CastLike", {x, of(DType::i64, {0})}, 15), DType::i64, {-2, 0, 0, 65519, 3},
                0);
  EXPECT_EQ(error_of("Cast", {x}, 13, to(onnx::TensorProto::STRING)),
            "node '#0' (Cast, opset 13): casting to STRING tensors: weft has no such dtype (it has "
            "f32, f64, f16, bf16, i32, i64, u8, bool)");
}

TEST(Elementwise, QuantizeLinearRoundsHalvesToEvenAndSaturates) {
  const Tensor x = f32({0, 2, 3, 5, -300, 1000, 251});
  expect_values(
      run_op("QuantizeLinear", {x, f32(Shape{}, {2}), Tensor::scalar(DType::u8, 128)}, 10),
      DType::u8, {128, 129, 130, 130, 0, 255, 254}, 0);
  expect_values(run_op("QuantizeLinear", {x, f32(Shape{}, {2})}, 13, {}, {"x", "scale"}), DType::u8,
                {0, 1, 2, 2, 0, 255, 126}, 0);
  // Per axis: one scale and zero point per index of axis 1.
  const Tensor m = f32({2, 2}, {4, 4, 8, 8});
  expect_values(run_op("QuantizeLinear", {m, f32({2, 4}), of(DType::u8, {1, 2})}, 13), DType::u8,
                {3, 3, 5, 4}, 0);
  expect_values(run_op("DequantizeLinear",
                       {Tensor::from_doubles(DType::u8, {2, 2}, {3, 3, 5, 4}), f32({2, 4}),
                        of(DType::u8, {1, 2})},
                       13),
                DType::f32, {4, 4, 8, 8}, 0);
  expect_values(
      run_op("DequantizeLinear",
             {of(DType::u8, {0, 255}), f32(Shape{}, {0.5}), Tensor::scalar(DType::u8, 128)}, 10),
      DType::f32, {-64, 63.5}, 0);
  expect_values(run_op("DequantizeLinear", {of(DType::i32, {-7, 9}), f32(Shape{}, {0.5})}, 10, {},
                       {"x", "s"}),
                DType::f32, {-3.5, 4.5}, 0);
  EXPECT_EQ(error_of("QuantizeLinear", {m, f32({3}, {1, 2, 3})}, 13),
            "node '#0' (QuantizeLinear, opset 13): the scale and zero point must be scalars or 1-D "
            "along axis 1 of x [2,2], not [3]");
}

TEST(Elementwise, DynamicQuantizeLinearHasThreeOutputs) {
  OnnxBuilder b(11);
  b.input("x", DType::f32, {4});
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero_point"});
  b.output("y", DType::u8).output("scale", DType::f32).output("zero_point", DType::u8);
  StatusOr<std::vector<Tensor>> out = import_and_run(b.file(), {f32({-1, 0, 2, 4})});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  // Range [-1, 4] over 255 levels; zero at round(1 / scale) = 51.
  const double scale = 5.0f / 255.0f;
  expect_values((*out)[1], DType::f32, {scale}, 1e-7);
  expect_values((*out)[2], DType::u8, {51}, 0);
  expect_values((*out)[0], DType::u8, {0, 51, 153, 255}, 0);
}

}  // namespace ops_elementwise_test
}  // namespace
}  // namespace weft::onnx_io

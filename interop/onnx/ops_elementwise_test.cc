// The elementwise and activation converters (ops/elementwise.cc, ops/activation.cc):
// one-node models run on the reference interpreter against values computed here, the
// refusals' messages, and every case of ONNX's node tests for these ops.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numbers>

#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io {
namespace {
namespace ops_elementwise_test {  // this file's names, apart in its package's unity test

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f32(Shape s, std::vector<double> v) {
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}
Tensor f32(const std::vector<double>& v) { return f32(Shape({static_cast<int64_t>(v.size())}), v); }
Tensor of(DType dt, std::vector<double> v) {
  return Tensor::from_doubles(dt, Shape({static_cast<int64_t>(v.size())}), v);
}

using SetAttrs = std::function<void(onnx::NodeProto&)>;

// Runs a model of one `op` node on `inputs`, given as data inputs named by `names`
// ("" for an absent optional input; default x0, x1...), and returns its first output.
StatusOr<Tensor> run_op(const std::string& op, std::vector<Tensor> inputs, int opset = 17,
                        const SetAttrs& attrs = {}, std::vector<std::string> names = {}) {
  OnnxBuilder b(opset);
  if (names.empty()) {
    for (size_t k = 0; k < inputs.size(); ++k) names.push_back("x" + std::to_string(k));
  }
  size_t k = 0;
  for (const std::string& name : names) {
    if (name.empty()) continue;
    b.input(name, inputs[k].dtype(), inputs[k].shape().dims);
    ++k;
  }
  onnx::NodeProto& n = b.node(op, names, {"y"});
  if (attrs) attrs(n);
  b.output("y");  // its type is what the tests check
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> out, import_and_run(b.file(), std::move(inputs)));
  return std::move(out[0]);
}

// The error of importing the same one-node model.
std::string error_of(const std::string& op, std::vector<Tensor> inputs, int opset = 17,
                     const SetAttrs& attrs = {}) {
  StatusOr<Tensor> y = run_op(op, std::move(inputs), opset, attrs);
  return y.ok() ? "(no error)" : y.error().message;
}

// `got` has dtype `dt` and `want`'s values, each within `tol` relative, or absolute below
// 1 unless `relative` (NaN matches NaN).
void expect_values(const StatusOr<Tensor>& got, DType dt, const std::vector<double>& want,
                   double tol = 1e-6, bool relative = false) {
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->dtype(), dt) << got->type().to_string();
  ASSERT_EQ(got->numel(), static_cast<int64_t>(want.size())) << got->type().to_string();
  for (int64_t i = 0; i < got->numel(); ++i) {
    const double g = got->get_double(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g;
    } else if (std::isinf(w)) {
      EXPECT_EQ(g, w) << "element " << i;
    } else {
      EXPECT_NEAR(g, w, tol * (relative ? std::fabs(w) : std::max(1.0, std::fabs(w))))
          << "element " << i;
    }
  }
}

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

// ---------------------------------------------------------------------------
// ONNX's node tests (onnx/backend/test/data/node): each case imported and run on the
// reference interpreter, its outputs compared as ONNX's runner does (rtol 1e-3,
// atol 1e-7; integers and bools exactly).

const char kTestData[] = "/usr/include/onnx/backend/test/data";
const std::string kNodeTests = std::string(kTestData) + "/node";

// The ops of these families, by the prefix of their node tests' names (test_PREFIX...).
const std::map<std::string, std::string>& test_prefixes() {
  static const std::map<std::string, std::string> kPrefixes = {
      {"abs", "Abs"},
      {"acos", "Acos"},
      {"acosh", "Acosh"},
      {"add", "Add"},
      {"and", "And"},
      {"asin", "Asin"},
      {"asinh", "Asinh"},
      {"atan", "Atan"},
      {"atanh", "Atanh"},
      {"bitshift", "BitShift"},
      {"cast", "Cast"},
      {"castlike", "CastLike"},
      {"ceil", "Ceil"},
      {"celu", "Celu"},
      {"clip", "Clip"},
      {"cos", "Cos"},
      {"cosh", "Cosh"},
      {"dequantizelinear", "DequantizeLinear"},
      {"div", "Div"},
      {"dynamicquantizelinear", "DynamicQuantizeLinear"},
      {"hardmax", "Hardmax"},
      {"logsoftmax", "LogSoftmax"},
      {"quantizelinear", "QuantizeLinear"},
      {"softmax", "Softmax"},
      {"elu", "Elu"},
      {"equal", "Equal"},
      {"erf", "Erf"},
      {"exp", "Exp"},
      {"floor", "Floor"},
      {"greater", "Greater"},
      {"greater_equal", "GreaterOrEqual"},
      {"hardsigmoid", "HardSigmoid"},
      {"hardswish", "HardSwish"},
      {"isinf", "IsInf"},
      {"isnan", "IsNaN"},
      {"leakyrelu", "LeakyRelu"},
      {"less", "Less"},
      {"less_equal", "LessOrEqual"},
      {"log", "Log"},
      {"max", "Max"},
      {"mean", "Mean"},
      {"min", "Min"},
      {"mod", "Mod"},
      {"mul", "Mul"},
      {"neg", "Neg"},
      {"not", "Not"},
      {"or", "Or"},
      {"pow", "Pow"},
      {"prelu", "PRelu"},
      {"reciprocal", "Reciprocal"},
      {"relu", "Relu"},
      {"round", "Round"},
      {"selu", "Selu"},
      {"shrink", "Shrink"},
      {"sigmoid", "Sigmoid"},
      {"sign", "Sign"},
      {"sin", "Sin"},
      {"sinh", "Sinh"},
      {"softplus", "Softplus"},
      {"softsign", "Softsign"},
      {"sqrt", "Sqrt"},
      {"sub", "Sub"},
      {"sum", "Sum"},
      {"tan", "Tan"},
      {"tanh", "Tanh"},
      {"thresholdedrelu", "ThresholdedRelu"},
      {"where", "Where"},
      {"xor", "Xor"}};
  return kPrefixes;
}

// The op a node test exercises, from its name: test_greater_equal_bcast -> GreaterOrEqual.
// The longest matching prefix wins (castlike over cast).
std::string op_of_test(const std::string& test) {
  std::string best_prefix, best;
  for (const auto& [prefix, op] : test_prefixes()) {
    const std::string p = "test_" + prefix;
    if (test.rfind(p, 0) != 0 || p.size() <= best_prefix.size()) continue;
    const char next = test.size() > p.size() ? test[p.size()] : '_';
    if (next == '_' || std::isdigit(static_cast<unsigned char>(next))) {
      best_prefix = p;
      best = op;
    }
  }
  return best;
}

bool close(const Tensor& got, const Tensor& want, std::string& why) {
  if (got.type() != want.type()) {
    why = "type " + got.type().to_string() + ", expected " + want.type().to_string();
    return false;
  }
  const bool exact = !is_floating(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    const bool ok = exact ? g == w : (g == w || std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w));
    if (!ok) {
      why = "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " +
            std::to_string(w);
      return false;
    }
  }
  return true;
}

// A test data tensor. ONNX stores its BFLOAT16 test data with the element type UINT16
// (the same bits); `elem_type` is the type the model declares for it.
StatusOr<Tensor> read_test_tensor(const std::filesystem::path& pb, int elem_type) {
  std::ifstream in(pb, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) return Error{pb.string() + ": not a TensorProto"};
  if (t.data_type() == onnx::TensorProto::UINT16 && elem_type == onnx::TensorProto::BFLOAT16) {
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  }
  return tensor_from_proto(t, "");
}

// Runs every test_data_set of the node test in `dir`; "" when all pass, else why not.
std::string run_node_test(const std::filesystem::path& dir) {
  StatusOr<OnnxFile> file = read_onnx_model((dir / "model.onnx").string());
  if (!file.ok()) return file.error().message;
  int sets = 0;
  for (int s = 0;; ++s) {
    const std::filesystem::path data = dir / ("test_data_set_" + std::to_string(s));
    if (!std::filesystem::exists(data)) break;
    ++sets;
    std::vector<Tensor> inputs, outputs;
    const onnx::GraphProto& g = file->model.graph();
    for (auto [prefix, into] : {std::pair{"input_", &inputs}, std::pair{"output_", &outputs}}) {
      const auto& declared = into == &inputs ? g.input() : g.output();
      for (int k = 0;; ++k) {
        const std::filesystem::path pb = data / (prefix + std::to_string(k) + ".pb");
        if (!std::filesystem::exists(pb)) break;
        const int elem_type =
            k < declared.size() ? declared[k].type().tensor_type().elem_type() : 0;
        StatusOr<Tensor> t = read_test_tensor(pb, elem_type);
        if (!t.ok()) return t.error().message;
        into->push_back(std::move(*t));
      }
    }
    StatusOr<std::vector<Tensor>> got = import_and_run(*file, std::move(inputs));
    if (!got.ok()) return got.error().message;
    if (got->size() != outputs.size()) return "wrong output count";
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::string why;
      if (!close((*got)[k], outputs[k], why)) return "output " + std::to_string(k) + ": " + why;
    }
  }
  return sets == 0 ? "no test data" : "";
}

// The node tests these converters cannot pass, each with (part of) the refusal it gets:
// element types weft lacks (the reader's refusal), ops with no exact form in weft's ops,
// and ONNX 1.12's FLOAT to BFLOAT16 data, which truncates where Cast rounds to nearest
// even (as ONNX's spec and onnxruntime do).
std::string no_dtype(const std::string& onnx_type) {
  return onnx_type +
         " tensors: weft has no such dtype (it has f32, f64, f16, bf16, i32, i64, u8, bool)";
}
constexpr char kNoConverter[] = "the op type is not supported";
constexpr char kTruncatedBf16[] = "output 0: element 1 is 0.480469, expected 0.478516";

const std::map<std::string, std::string>& expected_refusals() {
  static const std::map<std::string, std::string> kRefusals = {
      {"test_acos", kNoConverter},
      {"test_acos_example", kNoConverter},
      {"test_asin", kNoConverter},
      {"test_asin_example", kNoConverter},
      {"test_atan", kNoConverter},
      {"test_atan_example", kNoConverter},
      {"test_bitshift_left_uint16", no_dtype("UINT16")},
      {"test_bitshift_left_uint32", no_dtype("UINT32")},
      {"test_bitshift_left_uint64", no_dtype("UINT64")},
      {"test_bitshift_right_uint16", no_dtype("UINT16")},
      {"test_bitshift_right_uint32", no_dtype("UINT32")},
      {"test_bitshift_right_uint64", no_dtype("UINT64")},
      {"test_cast_FLOAT_to_BFLOAT16", kTruncatedBf16},
      {"test_cast_FLOAT_to_STRING", no_dtype("STRING")},
      {"test_cast_STRING_to_FLOAT", no_dtype("STRING")},
      {"test_castlike_FLOAT_to_BFLOAT16", kTruncatedBf16},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded", kTruncatedBf16},
      {"test_castlike_FLOAT_to_STRING", no_dtype("STRING")},
      {"test_castlike_FLOAT_to_STRING_expanded", no_dtype("STRING")},
      {"test_castlike_STRING_to_FLOAT", no_dtype("STRING")},
      {"test_castlike_STRING_to_FLOAT_expanded", no_dtype("STRING")},
      {"test_clip_default_int8_inbounds", no_dtype("INT8")},
      {"test_clip_default_int8_max", no_dtype("INT8")},
      {"test_clip_default_int8_min", no_dtype("INT8")},
      {"test_max_int16", no_dtype("INT16")},
      {"test_max_int8", no_dtype("INT8")},
      {"test_max_uint16", no_dtype("UINT16")},
      {"test_max_uint32", no_dtype("UINT32")},
      {"test_max_uint64", no_dtype("UINT64")},
      {"test_min_int16", no_dtype("INT16")},
      {"test_min_int8", no_dtype("INT8")},
      {"test_min_uint16", no_dtype("UINT16")},
      {"test_min_uint32", no_dtype("UINT32")},
      {"test_min_uint64", no_dtype("UINT64")},
      {"test_mod_mixed_sign_float16", "Mod of f16 operands"},
      {"test_mod_mixed_sign_float32", "Mod of f32 operands"},
      {"test_mod_mixed_sign_float64", "Mod of f64 operands"},
      {"test_mod_mixed_sign_int16", no_dtype("INT16")},
      {"test_mod_mixed_sign_int8", no_dtype("INT8")},
      {"test_mod_uint16", no_dtype("UINT16")},
      {"test_mod_uint32", no_dtype("UINT32")},
      {"test_mod_uint64", no_dtype("UINT64")},
      {"test_pow_types_float32_uint32", no_dtype("UINT32")},
      {"test_pow_types_float32_uint64", no_dtype("UINT64")},
  };
  return kRefusals;
}

// The op type of an import refused for lack of a converter outside these families.
std::string other_family_op(const std::string& why) {
  const size_t end = why.find(", opset ");
  const size_t begin = why.rfind('(', end);
  if (why.find("the op type is not supported") == std::string::npos || begin == std::string::npos)
    return "";
  const std::string op = why.substr(begin + 1, end - begin - 1);
  for (const auto& [prefix, mine] : test_prefixes()) {
    if (mine == op) return "";
  }
  return op;
}

TEST(OnnxNodeTests, EveryCaseOfTheseOpsPassesOrIsRefusedAsExpected) {
  if (!std::filesystem::exists(kNodeTests)) GTEST_SKIP() << kNodeTests << " is not installed";
  std::map<std::string, std::pair<int, int>> counts;  // op -> (passed, cases)
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeTests))
    dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const std::filesystem::path& dir : dirs) {
    const std::string test = dir.filename().string();
    const std::string op = op_of_test(test);
    if (op.empty()) continue;
    const std::string why = run_node_test(dir);
    if (const std::string other = other_family_op(why); !other.empty()) {
      // An expanded test (the op's ONNX function body) using ops of other families.
      std::printf("%s needs a converter of %s\n", test.c_str(), other.c_str());
      continue;
    }
    auto& [passed, cases] = counts[op];
    ++cases;
    passed += why.empty();
    auto refusal = expected_refusals().find(test);
    if (refusal == expected_refusals().end()) {
      EXPECT_EQ(why, "") << test;
    } else {
      EXPECT_NE(why.find(refusal->second), std::string::npos) << test << ": " << why;
    }
  }
  int passed = 0, cases = 0;
  for (const auto& [op, c] : counts) {
    std::printf("%-16s %2d / %2d\n", op.c_str(), c.first, c.second);
    passed += c.first;
    cases += c.second;
  }
  std::printf("%-16s %2d / %2d\n", "all", passed, cases);
}

}  // namespace ops_elementwise_test
}  // namespace
}  // namespace weft::onnx_io

namespace weft::onnx_io {
namespace {
namespace ops_elementwise_test {  // this file's names, apart in its package's unity test

// PyTorch's exports of the time (opset 6: legacy broadcasting, per-channel PRelu, Softmax
// over matrix rows) of these ops.
TEST(OnnxNodeTests, PyTorchModelsOfTheseOpsPass) {
  if (!std::filesystem::exists(kTestData)) GTEST_SKIP() << kTestData << " is not installed";
  for (const char* test : {"pytorch-operator/test_operator_add_broadcast",
                           "pytorch-operator/test_operator_add_size1_broadcast",
                           "pytorch-operator/test_operator_add_size1_right_broadcast",
                           "pytorch-operator/test_operator_add_size1_singleton_broadcast",
                           "pytorch-operator/test_operator_addconstant",
                           "pytorch-operator/test_operator_basic",
                           "pytorch-operator/test_operator_clip",
                           "pytorch-operator/test_operator_exp",
                           "pytorch-operator/test_operator_max",
                           "pytorch-operator/test_operator_min",
                           "pytorch-operator/test_operator_pow",
                           "pytorch-operator/test_operator_selu",
                           "pytorch-operator/test_operator_sqrt",
                           "pytorch-converted/test_ELU",
                           "pytorch-converted/test_LeakyReLU",
                           "pytorch-converted/test_LeakyReLU_with_negval",
                           "pytorch-converted/test_PReLU_1d",
                           "pytorch-converted/test_PReLU_1d_multiparam",
                           "pytorch-converted/test_PReLU_2d",
                           "pytorch-converted/test_PReLU_2d_multiparam",
                           "pytorch-converted/test_PReLU_3d",
                           "pytorch-converted/test_PReLU_3d_multiparam",
                           "pytorch-converted/test_ReLU",
                           "pytorch-converted/test_SELU",
                           "pytorch-converted/test_Sigmoid",
                           "pytorch-converted/test_Softplus",
                           "pytorch-converted/test_Softsign",
                           "pytorch-converted/test_Tanh",
                           "pytorch-converted/test_Softmax",
                           "pytorch-converted/test_LogSoftmax",
                           "pytorch-converted/test_Softmin",
                           "pytorch-converted/test_log_softmax_dim3",
                           "pytorch-converted/test_log_softmax_lastdim",
                           "pytorch-converted/test_softmax_functional_dim3",
                           "pytorch-converted/test_softmax_lastdim"}) {
    EXPECT_EQ(run_node_test(std::filesystem::path(kTestData) / test), "") << test;
  }
}

}  // namespace ops_elementwise_test
}  // namespace
}  // namespace weft::onnx_io

// Half-precision gradients whose rules use constants f16/bf16 cannot hold (GELU's
// 1/√(2π) is 0.3984375 in bf16, 0.13% low; erf's 2/√π; mean's 1/N; layer norm's eps;
// mse's 2/N), as the compiled targets run them: after fuse-elementwise and
// round-at-stores, whose kernels compute in f32, round only at their stores and read
// such constants made in f32 (passes/round_at_stores.h). Each case differentiates one op
// in a half dtype, runs the fused gradient graph on the reference interpreter, and
// compares it with the f64 gradient at the same inputs (the half values, widened): within
// half a unit in the last place of the half dtype, plus 1e-5 of the largest gradient for
// f32's own error. A constant left in the half dtype fails that tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "autodiff/grad.h"
#include "ir/shape_rules.h"
#include "passes/fuse_elementwise.h"
#include "passes/round_at_stores.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {
namespace half_grad_test {  // this file's names, apart in its package's unity test

struct Case {
  std::string name;
  Op op;
  std::vector<Type> inputs;  // in f32; each float one becomes the case's dtype
  Attrs attrs;
  std::vector<std::string> wrt;
  double lo = -3, hi = 3;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Type f32(std::vector<int64_t> shape) { return {DType::f32, Shape(std::move(shape))}; }

std::vector<Case> cases() {
  const Type x = f32({16, 24});
  return {
      {"gelu", Op::Gelu, {x}, {}, {"x0"}},
      {"gelu_tanh", Op::Gelu, {x}, {{"approximate", std::string("tanh")}}, {"x0"}},
      {"erf", Op::Erf, {x}, {}, {"x0"}, -2, 2},
      {"mean", Op::Mean, {x}, {{"axes", IntList{1}}}, {"x0"}},
      // Values small enough that eps (1e-5) counts beside the variance. dx only: dγ's
      // products are rounded where they are stored, before the driver sums them over the
      // rows (a column reduction: another kernel).
      {"layer_norm", Op::LayerNorm, {x, f32({24}), f32({24})}, {}, {"x0"}, -5e-3, 5e-3},
      {"mse", Op::Mse, {x, x}, {}, {"x0", "x1"}},
  };
}

/// The case's op on inputs of `dtype` (float ones), and the gradient graph w.r.t. the
/// case's inputs, with the cotangent as an input `seed` appended last.
Graph gradient(const Case& c, DType dtype) {
  Graph g("f");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Type t = c.inputs[i];
    if (t.dtype == DType::f32) t.dtype = dtype;
    xs.push_back(g.add_input("x" + std::to_string(i), t));
  }
  StatusOr<ValueId> y = add_typed_node(g, c.op, xs, c.attrs, Location{});
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.add_output(*y);
  StatusOr<Graph> grad = gradient_graph(g, 0, c.wrt, "seed");
  EXPECT_TRUE(grad.ok()) << grad.status().to_string();
  return std::move(*grad);
}

/// Random values for `g`'s inputs: in [lo, hi] rounded to their dtype where they are
/// float, class indices where they are integers.
std::vector<Tensor> inputs(const Graph& g, double lo, double hi) {
  std::mt19937 rng(7);
  std::vector<Tensor> out;
  for (const Input& in : g.inputs()) {
    const Type t = g.type(in.value);
    Tensor x(t);
    if (t.dtype == DType::i64) {
      for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, static_cast<double>(rng() % 10));
    } else {
      std::uniform_real_distribution<double> u(lo, hi);
      Tensor wide(Type{DType::f64, t.shape});
      for (int64_t i = 0; i < x.numel(); ++i) wide.set_double(i, u(rng));
      x = to_dtype(wide, t.dtype);
    }
    out.push_back(std::move(x));
  }
  return out;
}

/// `ts` with the f16/bf16 tensors widened (exactly) to f64.
std::vector<Tensor> widened(std::vector<Tensor> ts) {
  for (Tensor& t : ts) {
    if (is_half(t.dtype())) t = to_dtype(t, DType::f64);
  }
  return ts;
}

/// Half a unit in the last place of `v` in `dtype` (8 significant bits for bf16, 11 for
/// f16, whose subnormals are spaced 2^-24).
double half_ulp(double v, DType dtype) {
  int e = 0;
  std::frexp(v, &e);
  const int bits = dtype == DType::bf16 ? 8 : 11;
  return 0.5 * std::ldexp(1.0, std::max(e - bits, dtype == DType::f16 ? -24 : -149));
}

class HalfGrad : public ::testing::TestWithParam<std::tuple<Case, DType>> {
 protected:
  /// Runs the half gradient graph `grad` and expects each gradient within tolerance of
  /// the f64 one.
  void expect_close(const Graph& grad, const std::vector<Tensor>& in) {
    const auto& [c, dtype] = GetParam();
    StatusOr<reference::RunResult> got = reference::run(grad, in);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const Graph exact = gradient(c, DType::f64);
    StatusOr<reference::RunResult> want = reference::run(exact, widened(in));
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_EQ(got->outputs.size(), want->outputs.size());
    for (size_t o = 0; o < want->outputs.size(); ++o) {
      const Tensor& w = want->outputs[o];
      const Tensor& h = got->outputs[o];
      ASSERT_EQ(h.dtype(), dtype);
      double largest = 0;
      for (int64_t i = 0; i < w.numel(); ++i) largest = std::max(largest, std::abs(w.get_double(i)));
      int off = 0;
      double worst = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        const double err = std::abs(h.get_double(i) - w.get_double(i));
        const double tol = half_ulp(w.get_double(i), dtype) + 1e-5 * largest;
        worst = std::max(worst, err / tol);
        if (err > tol && off++ < 3) {
          ADD_FAILURE() << c.wrt[o] << "[" << i << "] is " << h.get_double(i) << ", the f64 gradient "
                        << w.get_double(i) << " (tolerance " << tol << ")";
        }
      }
      EXPECT_EQ(off, 0) << c.wrt[o] << ": elements off";
      std::printf("%s %s d%s: worst error / tolerance %.3f\n", c.name.c_str(),
                  std::string(dtype_name(dtype)).c_str(), c.wrt[o].c_str(), worst);
    }
  }
};

TEST_P(HalfGrad, RoundsTheF32GradientOnceInFusedKernels) {
  const auto& [c, dtype] = GetParam();
  Graph grad = gradient(c, dtype);
  const std::vector<Tensor> in = inputs(grad, c.lo, c.hi);
  // Half dtypes fuse, as codegen's predicate on the CPU says (passes/
  // fuse_elementwise_half_test.cc), and lone half reductions become kernels.
  FuseOptions fuse{.fusible = [](const Graph& g, const Node& n) {
                     return n.info().category == OpCategory::Elementwise ||
                            g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
                   },
                   .lone_half_reductions = true};
  ASSERT_TRUE(FuseElementwisePass(fuse).run(grad).ok());
  ASSERT_TRUE(RoundAtStoresPass().run(grad).ok());
  expect_close(grad, in);
}

INSTANTIATE_TEST_SUITE_P(Rules, HalfGrad,
                         ::testing::Combine(::testing::ValuesIn(cases()),
                                            ::testing::Values(DType::bf16, DType::f16)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

}  // namespace half_grad_test
}  // namespace
}  // namespace weft

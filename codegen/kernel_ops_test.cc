// Every op × dtype the kernel generator supports, compared with the reference
// interpreter on random inputs (several shapes: rows that are not a multiple of the
// vector width, scalars, broadcasting). The largest error per op, absolute below 1 and
// relative above, is printed; README.md quotes them.

#include <cstdio>
#include <limits>
#include <map>

#include "codegen/kernel_test_util.h"

namespace weft::codegen {
namespace {
namespace kernel_ops_test {  // this file's names, apart in its package's unity test

using testing::expect_matches_reference;
using testing::expect_random_matches;
using testing::op_body;

const std::vector<Shape> kShapes = {{37}, {4, 19}, {3, 2, 40}, {}, {64}};
const std::vector<std::vector<Shape>> kBroadcasts = {
    {{37}, {37}}, {{4, 19}, {19}}, {{4, 1}, {1, 5}}, {{3, 5, 33}, {5, 1}}, {{}, {4, 19}},
    {{2, 3, 4, 5}, {1, 3, 1, 1}}};

void report(const std::string& what, double err) {
  std::printf("  max |jit - ref| / max(1, |ref|)  %-18s %.3g\n", what.c_str(), err);
}

struct UnaryCase {
  Op op;
  double lo, hi;
  double f32_tol;  // all_close tolerance for f32 (f64 is 1e-12 everywhere).
  Attrs attrs = {};
};

TEST(KernelOps, FloatUnaryMatchesReference) {
  const double kArith = 1e-6, kApprox = 3e-7;
  const std::vector<UnaryCase> cases = {
      {Op::Neg, -3, 3, kArith},       {Op::Abs, -3, 3, kArith},
      {Op::Exp, -10, 10, kApprox},    {Op::Log, 1e-3, 50, kApprox},
      {Op::Log1p, -0.9, 50, kApprox}, {Op::Sqrt, 0, 50, kArith},
      {Op::Rsqrt, 1e-3, 50, kArith},  {Op::Tanh, -6, 6, kApprox},
      {Op::Sigmoid, -10, 10, kApprox}, {Op::Relu, -3, 3, kArith},
      {Op::Sin, -6, 6, kApprox},      {Op::Cos, -6, 6, kApprox},
      {Op::Erf, -4, 4, kApprox},      {Op::Sign, -3, 3, kArith},
      {Op::Softplus, -30, 30, kApprox},
      {Op::Floor, -3, 3, kArith},
      {Op::Gelu, -6, 6, kApprox, {{"approximate", std::string("none")}}},
      {Op::Gelu, -6, 6, kApprox, {{"approximate", std::string("tanh")}}},
  };
  for (const UnaryCase& c : cases) {
    for (DType d : {DType::f32, DType::f64}) {
      double worst = 0;
      for (const Shape& s : kShapes) {
        SCOPED_TRACE(std::string(op_name(c.op)) + " " + (Type{d, s}).to_string());
        worst = std::max(worst, expect_random_matches(op_body(c.op, {{d, s}}, c.attrs),
                                                      d == DType::f32 ? c.f32_tol : 1e-12,
                                                      c.lo, c.hi));
      }
      std::string name(op_name(c.op));
      if (c.op == Op::Gelu) name += "(" + std::get<std::string>(c.attrs.at("approximate")) + ")";
      report(name + " " + std::string(dtype_name(d)), worst);
    }
  }
}

TEST(KernelOps, FloatBinaryMatchesReference) {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Maximum, Op::Minimum}) {
    for (DType d : {DType::f32, DType::f64}) {
      double worst = 0;
      for (const auto& shapes : kBroadcasts) {
        Graph body = op_body(op, {{d, shapes[0]}, {d, shapes[1]}});
        SCOPED_TRACE(kernel_key(body));
        worst = std::max(worst, expect_random_matches(body, d == DType::f32 ? 1e-6 : 1e-12,
                                                      op == Op::Pow ? 0.1 : -3, 3));
      }
      report(std::string(op_name(op)) + " " + std::string(dtype_name(d)), worst);
    }
  }
}

TEST(KernelOps, IntegerOpsMatchReferenceExactly) {
  for (DType d : {DType::i32, DType::i64, DType::u8}) {
    for (Op op : {Op::Neg, Op::Abs, Op::Relu, Op::Sign, Op::Floor}) {
      // The shape rules take u8 only for relu (neg, abs, sign, floor: signed dtypes).
      if (d == DType::u8 && op != Op::Relu) continue;
      SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(d)));
      expect_random_matches(op_body(op, {{d, {4, 19}}}), 0, -100, 255);
    }
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Maximum, Op::Minimum}) {
      for (const auto& shapes : kBroadcasts) {
        Graph body = op_body(op, {{d, shapes[0]}, {d, shapes[1]}});
        SCOPED_TRACE(kernel_key(body));
        // Large operands: add, sub and mul must wrap as the reference does.
        expect_random_matches(body, 0, -3e9, 3e9);
      }
    }
  }
  // The minimum of a signed type: neg and abs wrap to itself.
  for (DType d : {DType::i32, DType::i64}) {
    Tensor x({d, {3}});
    x.set_double(0, d == DType::i32 ? -2147483648.0 : -9223372036854775808.0);
    x.set_double(1, -5);
    for (Op op : {Op::Neg, Op::Abs}) expect_matches_reference(op_body(op, {x.type()}), {x}, 0);
  }
}

// Inputs drawn from a few values so that equality is frequent.
std::vector<Tensor> coarse_inputs(const Graph& body, std::mt19937_64& rng) {
  std::vector<Tensor> inputs;
  std::uniform_int_distribution<int> u(0, 4);
  for (const Input& in : body.inputs()) {
    Tensor t(body.type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, t.dtype() == DType::boolean ? u(rng) % 2 : u(rng));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

TEST(KernelOps, ComparisonsMatchReference) {
  std::mt19937_64 rng(7);
  for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge}) {
    for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8, DType::boolean}) {
      for (const auto& shapes : kBroadcasts) {
        Graph body = op_body(op, {{d, shapes[0]}, {d, shapes[1]}}, {}, DType::boolean);
        SCOPED_TRACE(kernel_key(body));
        expect_matches_reference(body, coarse_inputs(body, rng), 0);
      }
    }
  }
}

TEST(KernelOps, LogicAndSelectMatchReference) {
  std::mt19937_64 rng(8);
  const DType b = DType::boolean;
  for (Op op : {Op::And, Op::Or}) {
    Graph body = op_body(op, {{b, {4, 1}}, {b, {1, 37}}});
    expect_matches_reference(body, coarse_inputs(body, rng), 0);
  }
  Graph not_body = op_body(Op::Not, {{b, {3, 33}}});
  expect_matches_reference(not_body, coarse_inputs(not_body, rng), 0);
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8, DType::boolean}) {
    for (const auto& shapes : std::vector<std::vector<Shape>>{
             {{4, 19}, {4, 19}, {4, 19}}, {{4, 1}, {1, 5}, {}}, {{}, {37}, {37}}}) {
      Graph body = op_body(Op::Select, {{b, shapes[0]}, {d, shapes[1]}, {d, shapes[2]}});
      SCOPED_TRACE(kernel_key(body));
      expect_matches_reference(body, coarse_inputs(body, rng), 0);
    }
  }
}

TEST(KernelOps, CastsBetweenEveryDTypePair) {
  const std::vector<DType> dtypes = {DType::f32, DType::f64, DType::i32,
                                     DType::i64, DType::u8,  DType::boolean};
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {NAN, inf, -inf, 1e10, -1e10, 2147483648.0,
                                        -2147483649.0, 255.5, 256, -0.5, 0, -0.0, 3e9,
                                        9.3e18, -9.3e18, 1.5, -1.5, 127.9};
  std::mt19937_64 rng(9);
  for (DType from : dtypes) {
    for (DType to : dtypes) {
      Graph body = op_body(Op::Cast, {{from, {3, 37}}}, {{"dtype", to}}, to);
      SCOPED_TRACE(kernel_key(body));
      Tensor x = testing::random_tensor({from, {3, 37}}, rng, -1e4, 1e4);
      for (size_t i = 0; i < specials.size(); ++i) x.set_double(static_cast<int64_t>(i), specials[i]);
      expect_matches_reference(body, {x}, 0);
    }
  }
}

TEST(KernelOps, Log1pKeepsDigitsForTinyArguments) {
  // log(1 + x) would be off by up to 1e-4 relative (f64) on these; all_close's absolute
  // term would not notice, so the check is relative.
  const std::vector<double> x = {1e-12, -3e-10, 1e-7, 2e-5, -1e-3, 1e-300, 0.5, 30};
  for (DType d : {DType::f32, DType::f64}) {
    const Shape s{static_cast<int64_t>(x.size())};
    std::vector<Tensor> in = {Tensor::from_doubles(d, s, x)};
    std::vector<Tensor> got = testing::run_kernel(op_body(Op::Log1p, {{d, s}}), in);
    ASSERT_EQ(got.size(), 1u);
    for (int64_t i = 0; i < got[0].numel(); ++i) {
      const double want = d == DType::f32 ? std::log1p(static_cast<float>(x[i])) : std::log1p(x[i]);
      EXPECT_LE(std::abs(got[0].get_double(i) - want), (d == DType::f32 ? 3e-7 : 1e-15) * std::abs(want))
          << dtype_name(d) << " log1p(" << x[i] << ")";
    }
  }
}

TEST(KernelOps, NanAndInfinityHandling) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType d : {DType::f32, DType::f64}) {
    const std::vector<double> a = {NAN, 1, NAN, inf, -inf, 0, -0.0, 2, -3, inf, NAN, 5, -inf, 1, 0, 7, NAN};
    const std::vector<double> b = {1, NAN, NAN, -inf, inf, -0.0, 0, inf, -inf, inf, 0, NAN, 3, -2, 0, -7, -inf};
    const Shape s{static_cast<int64_t>(a.size())};
    Tensor ta = Tensor::from_doubles(d, s, a), tb = Tensor::from_doubles(d, s, b);
    for (Op op : {Op::Maximum, Op::Minimum}) {
      expect_matches_reference(op_body(op, {{d, s}, {d, s}}), {ta, tb}, 0);
    }
    for (Op op : {Op::Sign, Op::Relu, Op::Abs, Op::Floor, Op::Neg, Op::Tanh, Op::Exp}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(d)));
      expect_matches_reference(op_body(op, {{d, s}}), {ta}, 1e-6);
    }
  }
}

}  // namespace kernel_ops_test
}  // namespace
}  // namespace weft::codegen

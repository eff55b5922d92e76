// Reduction bodies (an elementwise chain feeding sum, mean, max or min) compared with the
// reference interpreter: trailing axes (one row per output element), leading axes with
// trailing ones kept (column blocks), mixed axes ([N,C,H,W] over 0,2,3), keepdims,
// negative axes, NaN for max/min, f32 and f64; plus row layouts and the emitted text.

#include <cmath>
#include <cstdio>

#include "codegen/kernel_test_util.h"

namespace weft::codegen {
namespace {
namespace kernel_reduction_test {  // this file's names, apart in its package's unity test

using testing::expect_matches_reference;
using testing::random_tensor;

/// reduce(mul(a, b)) with b of shape `b_shape` (broadcast into a's), over `axes`.
Graph mul_reduce_body(Op op, DType d, const Shape& a_shape, const Shape& b_shape,
                      std::optional<std::vector<int64_t>> axes, bool keepdims) {
  Graph g("k");
  auto a = g.add_input("a", {d, a_shape});
  auto b = g.add_input("b", {d, b_shape});
  auto m = g.add_node(Op::Mul, {a, b}, {}, {}, Type{d, a_shape});
  Attrs attrs;
  std::vector<bool> mask(a_shape.rank(), !axes.has_value());
  if (axes) {
    attrs["axes"] = IntList(*axes);
    for (int64_t x : *axes) mask[*normalize_axis(x, a_shape.rank())] = true;
  }
  if (keepdims) attrs["keepdims"] = true;
  std::vector<int64_t> out;
  for (int i = 0; i < a_shape.rank(); ++i) {
    if (!mask[i]) out.push_back(a_shape[i]);
    else if (keepdims) out.push_back(1);
  }
  g.add_output(g.add_node(op, {m}, attrs, {}, Type{d, Shape(out)}));
  return g;
}

struct Case {
  Shape a, b;
  std::optional<std::vector<int64_t>> axes;
  bool keepdims = false;
};

const std::vector<Case> kCases = {
    {{512, 1024}, {512, 1024}, std::vector<int64_t>{-1}},
    {{7, 37}, {37}, std::vector<int64_t>{1}},                 // Odd row, broadcast b.
    {{3, 5, 33}, {5, 1}, std::vector<int64_t>{-1}, true},     // keepdims, splat along row.
    {{4, 6, 10}, {4, 6, 10}, std::vector<int64_t>{1, 2}},     // Two trailing axes.
    {{37}, {37}, std::nullopt},                               // Everything, rank 1.
    {{3, 4, 5}, {}, std::nullopt, true},                      // Everything, keepdims.
    {{128, 256}, {256}, std::vector<int64_t>{0}},             // Column sums.
    {{9, 21}, {9, 21}, std::vector<int64_t>{0}, true},        // Blocks and leftover columns.
    {{5, 7}, {5, 1}, std::vector<int64_t>{-2}},               // Fewer columns than lanes.
    {{4, 6, 7, 5}, {1, 6, 1, 1}, std::vector<int64_t>{0, 2, 3}},  // Batch-norm statistics.
    {{3, 20, 3, 3}, {3, 20, 3, 3}, std::vector<int64_t>{0, 2, 3}, true},
    {{6, 4, 8}, {6, 1, 8}, std::vector<int64_t>{0, 2}},       // b breaks the merge of 0 and 2.
    {{2, 3, 4, 5}, {2, 3, 4, 5}, std::vector<int64_t>{1, 3}},  // Interleaved axes.
    {{8, 40}, {40}, std::vector<int64_t>{0, 1}},
    {{6, 1, 9}, {9}, std::vector<int64_t>{1}},                // Only a size-1 axis.
    {{0, 4}, {4}, std::vector<int64_t>{0}},                   // Empty: sums are 0.
};

TEST(KernelReduction, MatchesReference) {
  for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min}) {
    for (DType d : {DType::f32, DType::f64}) {
      double worst = 0;
      for (const Case& c : kCases) {
        if ((op == Op::Max || op == Op::Min) && c.a.numel() == 0) continue;
        Graph body = mul_reduce_body(op, d, c.a, c.b, c.axes, c.keepdims);
        SCOPED_TRACE(kernel_key(body));
        const double tol = d == DType::f32 ? 1e-6 : 1e-12;
        worst = std::max(worst, testing::expect_random_matches(body, tol));
      }
      std::printf("  max |jit - ref| / max(1, |ref|)  %s %s %.3g\n", op_name(op).data(),
                  dtype_name(d).data(), worst);
    }
  }
}

TEST(KernelReduction, MaxAndMinPropagateNaN) {
  std::mt19937_64 rng(7);
  for (Op op : {Op::Max, Op::Min}) {
    for (DType d : {DType::f32, DType::f64}) {
      for (const Case& c : {Case{{6, 45}, {6, 45}, std::vector<int64_t>{-1}},
                            Case{{10, 37}, {10, 37}, std::vector<int64_t>{0}},
                            Case{{3, 4, 5, 6}, {3, 4, 5, 6}, std::vector<int64_t>{0, 2, 3}}}) {
        Graph body = mul_reduce_body(op, d, c.a, c.b, c.axes, c.keepdims);
        SCOPED_TRACE(kernel_key(body));
        std::vector<Tensor> in = {random_tensor(body.type(body.inputs()[0].value), rng, -3, 3),
                                  random_tensor(body.type(body.inputs()[1].value), rng, -3, 3)};
        // NaN in the vector part, in the scalar tail, first and last elements, and ±inf.
        for (int64_t i : {int64_t{0}, int64_t{17}, in[0].numel() - 1, in[0].numel() / 2 + 3}) {
          in[0].set_double(i, NAN);
        }
        in[1].set_double(5, INFINITY);
        in[1].set_double(9, -INFINITY);
        expect_matches_reference(body, std::move(in), 0);
      }
    }
  }
}

TEST(KernelReduction, SumsAccumulateInF64) {
  // 1 + 4096 copies of 2^-24: f32 accumulation would drop every small term.
  Graph body = mul_reduce_body(Op::Sum, DType::f32, {2, 4097}, {}, std::vector<int64_t>{-1}, false);
  std::vector<Tensor> in = {Tensor(body.type(body.inputs()[0].value)),
                            Tensor(body.type(body.inputs()[1].value))};
  for (int64_t i = 0; i < in[0].numel(); ++i) in[0].set_double(i, std::ldexp(1.0, -24));
  in[0].set_double(0, 1.0);
  in[1].set_double(0, 1.0);
  expect_matches_reference(body, std::move(in), 0);
}

TEST(KernelReduction, RowLayouts) {
  auto layout = [](const Case& c) {
    return row_layout(mul_reduce_body(Op::Sum, DType::f32, c.a, c.b, c.axes, c.keepdims));
  };
  auto expect = [](RowLayout l, int64_t rows, int64_t length) {
    EXPECT_EQ(l.rows, rows);
    EXPECT_EQ(l.row_length, length);
  };
  expect(layout({{512, 1024}, {512, 1024}, std::vector<int64_t>{-1}}), 512, 1024);
  expect(layout({{4, 6, 10}, {4, 6, 10}, std::vector<int64_t>{1, 2}}), 4, 60);
  expect(layout({{37}, {37}, std::nullopt}), 1, 37);
  // Columns: 256 / 16 blocks of 16 lanes, each reading 128 · 16 elements.
  expect(layout({{128, 256}, {256}, std::vector<int64_t>{0}}), 16, 2048);
  expect(layout({{9, 21}, {9, 21}, std::vector<int64_t>{0}}), 1 + 5, 144);
  // [N,C,H,W] over 0,2,3: one row per channel.
  expect(layout({{4, 6, 7, 5}, {1, 6, 1, 1}, std::vector<int64_t>{0, 2, 3}}), 6, 140);
}

TEST(KernelReduction, EmitsF64AccumulationAndHorizontalReduce) {
  Graph body = mul_reduce_body(Op::Sum, DType::f32, {64, 100}, {64, 100}, std::vector<int64_t>{-1}, false);
  StatusOr<std::string> text = KernelCompiler::global().emit_mlir(body);
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_NE(text->find("llvm.load"), std::string::npos);
  EXPECT_NE(text->find("vector<16xf32>"), std::string::npos);
  EXPECT_NE(text->find("arith.extf"), std::string::npos);
  EXPECT_NE(text->find("arith.addf %a"), std::string::npos);
  EXPECT_NE(text->find("vector.reduction <add>"), std::string::npos);
  EXPECT_NE(text->find("iter_args"), std::string::npos);
}

TEST(KernelReduction, SupportsFloatSumMeanMaxMinOnly) {
  Graph g("g");
  auto x = g.add_input("x", {DType::f32, {4, 8}});
  auto i = g.add_input("i", {DType::i32, {4, 8}});
  Attrs axes{{"axes", IntList{-1}}};
  g.add_node(Op::Sum, {x}, axes, {}, Type{DType::f32, {4}});
  g.add_node(Op::Max, {x}, axes, {}, Type{DType::f32, {4}});
  g.add_node(Op::Sum, {i}, axes, {}, Type{DType::i32, {4}});
  g.add_node(Op::Argmax, {x}, {{"axis", int64_t{1}}}, {}, Type{DType::i64, {4}});
  EXPECT_TRUE(KernelCompiler::supports(g, g.node(0)));
  EXPECT_TRUE(KernelCompiler::supports(g, g.node(1)));
  EXPECT_FALSE(KernelCompiler::supports(g, g.node(2)));
  EXPECT_FALSE(KernelCompiler::supports(g, g.node(3)));
}

}  // namespace kernel_reduction_test
}  // namespace
}  // namespace weft::codegen

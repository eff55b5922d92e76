// The CUDA executor's host-side plans, tested without a GPU: each matmul's cuBLAS calls
// run on a host emulation of cuBLAS's column-major GEMM (with its argument checks) and
// are compared with the reference interpreter, for every transpose combination, 1-D
// operands and each way batch dimensions broadcast. A wrong leading dimension, operand
// order or stride fails here rather than on the GPU.
#include "runtime/cuda/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"
#include "runtime/cuda/test_util.h"

namespace weft::cuda {
namespace {

using test_util::random_tensor;

// cuBLAS's gemm (column-major, alpha 1, beta 0) on the host, with the argument rules
// cuBLAS checks and every read and write checked against its buffer.
template <typename T>
void emulate_cublas(const MatmulPlan& plan, const T* a, int64_t a_size, const T* b,
                    int64_t b_size, T* c, int64_t c_size) {
  if (plan.zero_fill) {
    std::fill(c, c + c_size, T(0));
    return;
  }
  for (const CublasGemm& g : plan.calls) {
    ASSERT_GE(g.m, 0);
    ASSERT_GE(g.count, 1);
    ASSERT_GE(g.ld_first, std::max<int64_t>(1, g.trans_first ? g.k : g.m));
    ASSERT_GE(g.ld_second, std::max<int64_t>(1, g.trans_second ? g.n : g.k));
    ASSERT_GE(g.ldc, std::max<int64_t>(1, g.m));
    for (int64_t e = 0; e < g.count; ++e) {
      const int64_t f0 = g.first_offset + e * g.stride_first;
      const int64_t s0 = g.second_offset + e * g.stride_second;
      const int64_t c0 = g.c_offset + e * g.stride_c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < g.k; ++l) {
            const int64_t fi = f0 + (g.trans_first ? l + i * g.ld_first : i + l * g.ld_first);
            const int64_t si = s0 + (g.trans_second ? j + l * g.ld_second : l + j * g.ld_second);
            ASSERT_TRUE(fi >= 0 && fi < b_size) << "first (B) read out of bounds";
            ASSERT_TRUE(si >= 0 && si < a_size) << "second (A) read out of bounds";
            sum += static_cast<double>(b[fi]) * static_cast<double>(a[si]);
          }
          const int64_t ci = c0 + i + j * g.ldc;
          ASSERT_TRUE(ci >= 0 && ci < c_size) << "C write out of bounds";
          c[ci] = static_cast<T>(sum);
        }
      }
    }
  }
}

struct Case {
  const char* name;
  DType dtype;
  Shape a, b, c;
  bool trans_a = false, trans_b = false;
  size_t calls;   // cuBLAS calls planned
  int64_t count;  // batch count of the first call
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Node matmul_node(bool ta, bool tb) {
  Node n;
  n.op = Op::Matmul;
  if (ta) n.attrs["transpose_a"] = Attribute(true);
  if (tb) n.attrs["transpose_b"] = Attribute(true);
  return n;
}

class PlanMatmulTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanMatmulTest, EmulatedCublasMatchesReference) {
  const Case& p = GetParam();
  const Type ta{p.dtype, p.a}, tb{p.dtype, p.b}, tc{p.dtype, p.c};
  const Node node = matmul_node(p.trans_a, p.trans_b);
  MatmulPlan plan;
  StatusOr<bool> planned = plan_matmul(node, ta, tb, plan);
  ASSERT_TRUE(planned.ok()) << planned.error().to_string();
  ASSERT_TRUE(*planned);
  EXPECT_EQ(plan.calls.size(), p.calls) << plan.describe(p.dtype);
  if (!plan.calls.empty()) {
    EXPECT_EQ(plan.calls[0].count, p.count) << plan.describe(p.dtype);
  }

  const Tensor a = random_tensor(ta, 1), b = random_tensor(tb, 2);
  Tensor c(tc);
  for (int64_t i = 0; i < c.numel(); ++i) c.set_double(i, std::nan(""));  // unwritten shows
  if (p.dtype == DType::f32) {
    emulate_cublas(plan, a.data<float>(), a.numel(), b.data<float>(), b.numel(), c.data<float>(),
                   c.numel());
  } else {
    emulate_cublas(plan, a.data<double>(), a.numel(), b.data<double>(), b.numel(),
                   c.data<double>(), c.numel());
  }

  Graph g("matmul");
  const ValueId va = g.add_input("a", ta), vb = g.add_input("b", tb);
  g.add_output(g.add_node(Op::Matmul, {va, vb}, node.attrs, {}, tc));
  StatusOr<reference::RunResult> want = reference::run(g, {a, b});
  ASSERT_TRUE(want.ok()) << want.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(c, want->outputs[0], 1e-5, &why)) << why;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PlanMatmulTest,
    ::testing::Values(
        Case{"plain", DType::f32, {64, 48}, {48, 32}, {64, 32}, false, false, 1, 1},
        Case{"trans_a", DType::f32, {48, 64}, {48, 32}, {64, 32}, true, false, 1, 1},
        Case{"trans_b", DType::f32, {64, 48}, {32, 48}, {64, 32}, false, true, 1, 1},
        Case{"trans_ab", DType::f32, {48, 64}, {32, 48}, {64, 32}, true, true, 1, 1},
        Case{"vector_a", DType::f32, {48}, {48, 32}, {32}, false, false, 1, 1},
        Case{"vector_b", DType::f32, {64, 48}, {48}, {64}, false, false, 1, 1},
        Case{"vector_b_trans_a", DType::f64, {48, 64}, {48}, {64}, true, false, 1, 1},
        Case{"batched", DType::f32, {4, 16, 24}, {4, 24, 8}, {4, 16, 8}, false, false, 1, 4},
        Case{"batched_trans_ab", DType::f32, {4, 24, 16}, {4, 8, 24}, {4, 16, 8}, true, true, 1, 4},
        // B shared: the batch folds into the rows of one GEMM.
        Case{"folded", DType::f32, {2, 3, 16, 24}, {24, 8}, {2, 3, 16, 8}, false, false, 1, 1},
        Case{"folded_trans_b", DType::f32, {5, 16, 24}, {8, 24}, {5, 16, 8}, false, true, 1, 1},
        // B shared but A transposed: a strided batch reading B with stride 0.
        Case{"shared_b_trans_a", DType::f32, {5, 24, 16}, {24, 8}, {5, 16, 8}, true, false, 1, 5},
        // A shared: stride 0 on cuBLAS's second matrix.
        Case{"shared_a", DType::f64, {16, 24}, {4, 24, 8}, {4, 16, 8}, false, false, 1, 4},
        Case{"size1_batch", DType::f32, {1, 16, 24}, {3, 24, 8}, {3, 16, 8}, false, false, 1, 3},
        // [2,1] x [3] batches: entries (0,0) (0,1) (0,2) (1,0) ... no constant stride.
        Case{"broadcast_outer", DType::f32, {2, 1, 8, 12}, {3, 12, 5}, {2, 3, 8, 5}, false, false,
             6, 1},
        Case{"broadcast_outer_trans", DType::f64, {2, 1, 12, 8}, {3, 5, 12}, {2, 3, 8, 5}, true,
             true, 6, 1},
        Case{"empty_k", DType::f32, {3, 0}, {0, 4}, {3, 4}, false, false, 0, 0},
        Case{"empty_m", DType::f32, {0, 5}, {5, 4}, {0, 4}, false, false, 0, 0}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(PlanMatmul, EmptyContractionFillsZeros) {
  MatmulPlan plan;
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f32, {3, 0}}, {DType::f32, {0, 4}},
                           plan));
  EXPECT_TRUE(plan.zero_fill);
  EXPECT_EQ(plan.describe(DType::f32), "sgemm 3x4x0 (k = 0: zeros)");
}

TEST(PlanMatmul, Describe) {
  MatmulPlan plan;
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f32, {64, 48}},
                           {DType::f32, {48, 32}}, plan));
  EXPECT_EQ(plan.describe(DType::f32), "sgemm 64x32x48");
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f64, {4, 16, 24}},
                           {DType::f64, {4, 24, 8}}, plan));
  EXPECT_EQ(plan.describe(DType::f64), "dgemm_strided_batched 16x8x24 batch 4");
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f32, {2, 1, 8, 12}},
                           {DType::f32, {3, 12, 5}}, plan));
  EXPECT_EQ(plan.describe(DType::f32), "sgemm 8x5x12 batch 6 in 6 calls");
}

// f16 and bf16 ([Mixed precision]): planned as f32 operands of the same shapes (the
// same calls), on tensor cores with f32 accumulation. The emulation multiplies the
// widened values and rounds C once to the dtype, as cublasGemmEx with CUBLAS_COMPUTE_32F
// does; the reference rounds its f32 product once too, so they agree within one unit in
// the last place (the sums' orders differ).
TEST(PlanMatmul, HalvesArePlannedLikeF32OnTensorCores) {
  struct HalfCase {
    Shape a, b, c;
    bool trans_a, trans_b;
  };
  const std::vector<HalfCase> cases = {{{64, 48}, {48, 32}, {64, 32}, false, false},
                                       {{48, 64}, {32, 48}, {64, 32}, true, true},
                                       {{4, 16, 24}, {4, 24, 8}, {4, 16, 8}, false, false},
                                       {{2, 3, 16, 24}, {24, 8}, {2, 3, 16, 8}, false, false},
                                       {{2, 1, 8, 12}, {3, 12, 5}, {2, 3, 8, 5}, false, false}};
  for (DType d : {DType::bf16, DType::f16}) {
    for (const HalfCase& h : cases) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + h.a.to_string() + " x " + h.b.to_string());
      const Node node = matmul_node(h.trans_a, h.trans_b);
      MatmulPlan plan, f32_plan;
      ASSERT_TRUE(*plan_matmul(node, {d, h.a}, {d, h.b}, plan));
      ASSERT_TRUE(*plan_matmul(node, {DType::f32, h.a}, {DType::f32, h.b}, f32_plan));
      EXPECT_EQ(plan.math, ContractionMath::tensor_f32);
      EXPECT_EQ(f32_plan.math, ContractionMath::pedantic);
      ASSERT_EQ(plan.calls.size(), f32_plan.calls.size());
      const Tensor a = random_tensor({d, h.a}, 1), b = random_tensor({d, h.b}, 2);
      Tensor a32({DType::f32, h.a}), b32({DType::f32, h.b}), c32({DType::f32, h.c}), c({d, h.c});
      for (int64_t i = 0; i < a.numel(); ++i) a32.set_double(i, a.get_double(i));
      for (int64_t i = 0; i < b.numel(); ++i) b32.set_double(i, b.get_double(i));
      emulate_cublas(plan, a32.data<float>(), a32.numel(), b32.data<float>(), b32.numel(),
                     c32.data<float>(), c32.numel());
      for (int64_t i = 0; i < c.numel(); ++i) c.set_double(i, c32.get_double(i));
      Graph g("matmul");
      const ValueId va = g.add_input("a", Type{d, h.a}), vb = g.add_input("b", Type{d, h.b});
      g.add_output(g.add_node(Op::Matmul, {va, vb}, node.attrs, {}, Type{d, h.c}));
      StatusOr<reference::RunResult> want = reference::run(g, {a, b});
      ASSERT_TRUE(want.ok()) << want.error().to_string();
      const int mantissa = d == DType::f16 ? 10 : 7;
      for (int64_t i = 0; i < c.numel(); ++i) {
        const double x = c.get_double(i), y = want->outputs[0].get_double(i);
        const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::abs(y), 1e-3)) - mantissa);
        ASSERT_LE(std::abs(x - y), ulp) << "element " << i;
      }
    }
  }
  MatmulPlan plan;
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::bf16, {64, 48}},
                           {DType::bf16, {48, 32}}, plan));
  EXPECT_EQ(plan.describe(DType::bf16), "bf16gemm 64x32x48 (tensor cores, f32 accumulation)");
  EXPECT_EQ(plan.flops(), 2.0 * 64 * 32 * 48);
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f16, {4, 16, 24}},
                           {DType::f16, {4, 24, 8}}, plan));
  EXPECT_EQ(plan.describe(DType::f16),
            "hgemm_strided_batched 16x8x24 batch 4 (tensor cores, f32 accumulation)");
  // Two dtypes, or a half beside f32: not one GEMM.
  EXPECT_FALSE(*plan_matmul(matmul_node(false, false), {DType::bf16, {4, 4}},
                            {DType::f16, {4, 4}}, plan));
  EXPECT_FALSE(*plan_matmul(matmul_node(false, false), {DType::bf16, {4, 4}},
                            {DType::f32, {4, 4}}, plan));
  // Errors name the operands' own types.
  StatusOr<bool> r = plan_matmul(matmul_node(false, false), {DType::bf16, {4, 5}},
                                 {DType::bf16, {4, 3}}, plan);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "matmul: contracted dimensions differ: bf16[4,5] and bf16[4,3]");
}

// TF32 is an opt-in for f32 only (ExecutorOptions::tf32); f64 and the halves keep theirs.
TEST(PlanMatmul, Tf32IsForF32Only) {
  EXPECT_EQ(contraction_math(DType::f32, /*tf32=*/false), ContractionMath::pedantic);
  EXPECT_EQ(contraction_math(DType::f32, /*tf32=*/true), ContractionMath::tf32);
  EXPECT_EQ(contraction_math(DType::f64, /*tf32=*/true), ContractionMath::pedantic);
  EXPECT_EQ(contraction_math(DType::bf16, /*tf32=*/true), ContractionMath::tensor_f32);
  EXPECT_EQ(contraction_math(DType::f16, /*tf32=*/false), ContractionMath::tensor_f32);
  MatmulPlan plan;
  ASSERT_TRUE(*plan_matmul(matmul_node(false, false), {DType::f32, {64, 48}},
                           {DType::f32, {48, 32}}, plan));
  plan.math = contraction_math(DType::f32, /*tf32=*/true);
  EXPECT_EQ(plan.describe(DType::f32), "sgemm 64x32x48 (tf32 tensor cores)");
}

TEST(PlanMatmul, WhatCublasDoesNotRunIsNotPlanned) {
  MatmulPlan plan;
  EXPECT_FALSE(*plan_matmul(matmul_node(false, false), {DType::i32, {4, 4}}, {DType::i32, {4, 4}},
                            plan));
  EXPECT_FALSE(*plan_matmul(matmul_node(false, false), {DType::f32, {4, 4}}, {DType::f64, {4, 4}},
                            plan));
  EXPECT_FALSE(*plan_matmul(matmul_node(true, false), {DType::f32, {4}}, {DType::f32, {4, 4}},
                            plan));
  EXPECT_FALSE(*plan_matmul(matmul_node(false, false), {DType::f32, {}}, {DType::f32, {4}}, plan));
}

TEST(PlanMatmul, ShapesThatDoNotMultiplyAreErrors) {
  MatmulPlan plan;
  StatusOr<bool> r = plan_matmul(matmul_node(false, false), {DType::f32, {4, 5}},
                                 {DType::f32, {4, 3}}, plan);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "matmul: contracted dimensions differ: f32[4,5] and f32[4,3]");
  r = plan_matmul(matmul_node(false, false), {DType::f32, {2, 4, 5}}, {DType::f32, {3, 5, 3}},
                  plan);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "matmul: batch dimensions of f32[2,4,5] and f32[3,5,3] do not broadcast");
}

}  // namespace
}  // namespace weft::cuda

// The reduction and linalg converters (ops/reduce.cc, ops/linalg.cc): small models per
// op and opset variant compared with numbers worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/node_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_reduce_linalg_test {  // this file's names, apart in its package's unity test

// ---- Reductions -----------------------------------------------------------------------

TEST(ReduceOps, AxesAsAttributeOrInput) {
  const Tensor x = iota_f32({2, 3});
  Case s11(11);
  auto& n = s11.data("x", x).node("ReduceSum", {"x"});
  set_attr(n, "axes", std::vector<int64_t>{1});
  set_attr(n, "keepdims", 0);
  EXPECT_EQ(s11.y(), f32({2}, {6, 15}));
  Case s13(13);
  s13.data("x", x).init("axes", i64({1}, {-2})).node("ReduceSum", {"x", "axes"});
  EXPECT_EQ(s13.y(), f32({1, 3}, {5, 7, 9}));
  Case all(13);
  all.data("x", x).node("ReduceSum", {"x"});
  EXPECT_EQ(all.y(), f32({1, 1}, {21}));
  Case noop(13);
  set_attr(noop.data("x", x).node("ReduceSum", {"x"}), "noop_with_empty_axes", 1);
  EXPECT_EQ(noop.y(), x);
  Case mean(13);
  set_attr(mean.data("x", x).node("ReduceMean", {"x"}), "axes", std::vector<int64_t>{0});
  EXPECT_EQ(mean.y(), f32({1, 3}, {2.5, 3.5, 4.5}));
  Case imean(13);
  imean.data("x", i64({2}, {1, 2})).node("ReduceMean", {"x"});
  EXPECT_EQ(imean.error(),
            "node 'n' (ReduceMean, opset 13): i64 input (only floating dtypes) is not supported");
}

TEST(ReduceOps, ComposedReductions) {
  const Tensor x = f32({2, 5}, {1, 2, 3, 4, 5, -1, 1, 1, 1, 2});
  Case prod(13);
  auto& p = prod.data("x", x).node("ReduceProd", {"x"});
  set_attr(p, "axes", std::vector<int64_t>{1});
  set_attr(p, "keepdims", 0);
  EXPECT_EQ(prod.y(), f32({2}, {120, -2}));
  Case l1(13);
  set_attr(l1.data("x", x).node("ReduceL1", {"x"}), "keepdims", 0);
  EXPECT_EQ(l1.y(), f32({}, {21}));
  Case l2(13);
  l2.data("x", f32({2}, {3, -4})).node("ReduceL2", {"x"});
  EXPECT_EQ(l2.y(), f32({1}, {5}));
  Case ss(13);
  ss.data("x", f32({2}, {3, -4})).node("ReduceSumSquare", {"x"});
  EXPECT_EQ(ss.y(), f32({1}, {25}));
  Case ls(13);
  ls.data("x", f32({2}, {1, 0})).node("ReduceLogSum", {"x"});
  EXPECT_EQ(ls.y(), f32({1}, {0}));
  Case lse(13);  // stays finite where exp overflows; all -inf gives -inf
  lse.data("x", f32({2, 2}, {1000, 1000, -INFINITY, -INFINITY}));
  set_attr(lse.node("ReduceLogSumExp", {"x"}), "axes", std::vector<int64_t>{1});
  EXPECT_EQ(lse.y(), f32({2, 1}, {1000 + std::log(2.0f), -INFINITY}));
}

TEST(ReduceOps, ArgMaxArgMin) {
  Case last(13);
  set_attr(last.data("x", f32({4}, {1, 3, 3, 2})).node("ArgMax", {"x"}), "select_last_index", 1);
  EXPECT_EQ(last.y(), i64({1}, {2}));
  Case first(13);
  set_attr(first.data("x", f32({4}, {1, 3, 3, 2})).node("ArgMax", {"x"}), "keepdims", 0);
  EXPECT_EQ(first.y(), i64({}, {1}));
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  Case amin(13);  // the extremes of int32: -x - 1 is exact
  amin.data("x", i32({2, 3}, {kMin, 5, kMin, 7, std::numeric_limits<int32_t>::max(), 7}));
  auto& n = amin.node("ArgMin", {"x"});
  set_attr(n, "axis", -1);
  set_attr(n, "select_last_index", 1);
  EXPECT_EQ(amin.y(), i64({2, 1}, {2, 2}));
  Case bytes(13);
  bytes.data("x", Tensor::from_vector<uint8_t>(Shape{3}, {7, 0, 255})).node("ArgMin", {"x"});
  EXPECT_EQ(bytes.y(), i64({1}, {1}));
}

// ---- Matrix products ------------------------------------------------------------------

TEST(LinalgOps, MatMulPromotesVectorsAndBroadcastsBatches) {
  Case vec(13);  // [3] @ [3, 2] -> [2]
  vec.data("a", f32({3}, {1, 2, 3})).data("b", iota_f32({3, 2})).node("MatMul", {"a", "b"});
  EXPECT_EQ(vec.y(), f32({2}, {22, 28}));
  Case col(13);  // [2, 2, 3] @ [3] -> [2, 2]
  col.data("a", iota_f32({2, 2, 3})).data("b", f32({3}, {1, 0, -1})).node("MatMul", {"a", "b"});
  EXPECT_EQ(col.y(), f32({2, 2}, {-2, -2, -2, -2}));
  Case dot(13);  // [3] @ [3] -> []
  dot.data("a", f32({3}, {1, 2, 3})).data("b", f32({3}, {4, 5, 6})).node("MatMul", {"a", "b"});
  EXPECT_EQ(dot.y(), f32({}, {32}));
  Case scalar(13);
  scalar.data("a", f32({}, {1})).data("b", f32({1}, {2})).node("MatMul", {"a", "b"});
  EXPECT_EQ(scalar.error(), "node 'n' (MatMul, opset 13): A and B must have rank >= 1");
  Case batch(13);  // [2, 1, 2] @ [2, 1] -> [2, 1, 1]
  batch.data("a", iota_f32({2, 1, 2})).data("b", f32({2, 1}, {1, -1})).node("MatMul", {"a", "b"});
  EXPECT_EQ(batch.y(), f32({2, 1, 1}, {-1, -1}));
  Case ints(13);
  ints.data("a", i32({1, 2}, {2, 3})).data("b", i32({2, 1}, {4, 5})).node("MatMul", {"a", "b"});
  EXPECT_EQ(ints.y(), i32({1, 1}, {23}));
}

TEST(LinalgOps, GemmBroadcastsC) {
  Case vec(13);
  vec.data("a", f32({2, 2}, {1, 2, 3, 4}))
      .data("b", f32({2, 2}, {1, 0, 0, 1}))
      .data("c", f32({2}, {10, 20}));
  set_attr(vec.node("Gemm", {"a", "b", "c"}), "beta", 2.0);
  EXPECT_EQ(vec.y(), f32({2, 2}, {21, 42, 23, 44}));
  Case no_c(13);
  no_c.data("a", f32({1, 2}, {1, 2})).data("b", f32({1, 2}, {3, 4}));
  set_attr(no_c.node("Gemm", {"a", "b"}), "transB", 1);
  EXPECT_EQ(no_c.y(), f32({1, 1}, {11}));
  Case bad(13);
  bad.data("a", f32({1, 2}, {1, 2}))
      .data("b", f32({2, 2}, {1, 0, 0, 1}))
      .data("c", f32({2, 2}, {1, 1, 1, 1}));
  bad.node("Gemm", {"a", "b", "c"});
  EXPECT_EQ(bad.error(), "node 'n' (Gemm, opset 13): C [2,2] does not broadcast to A'·B' [1,2]");
  Case c_required(9);
  c_required.data("a", f32({1, 2}, {1, 2})).data("b", f32({2, 1}, {3, 4})).node("Gemm", {"a", "b"});
  EXPECT_EQ(c_required.error(), "node 'n' (Gemm, opset 9): C is required before opset 11");
  Case legacy(6);  // before opset 7, C broadcasts only with broadcast=1
  legacy.data("a", f32({1, 2}, {1, 2}))
      .data("b", f32({2, 2}, {1, 0, 0, 1}))
      .data("c", f32({2}, {10, 20}));
  auto& g6 = legacy.node("Gemm", {"a", "b", "c"});
  EXPECT_EQ(legacy.error(),
            "node 'n' (Gemm, opset 6): C [2] must be A'·B' [1,2] without broadcast=1");
  set_attr(g6, "broadcast", 1);
  EXPECT_EQ(legacy.y(), f32({1, 2}, {11, 22}));
}

TEST(LinalgOps, EinsumAsMatmul) {
  Case bmm(12);
  bmm.data("a", iota_f32({1, 2, 3})).data("b", iota_f32({3, 1}));
  set_attr(bmm.node("Einsum", {"a", "b"}), "equation", "bij, jk -> bki");
  EXPECT_EQ(bmm.y(), f32({1, 1, 2}, {14, 32}));
  Case inner(12);
  inner.data("a", f32({3}, {1, 2, 3})).data("b", f32({3}, {4, 5, 6}));
  set_attr(inner.node("Einsum", {"a", "b"}), "equation", "i,i");
  EXPECT_EQ(inner.y(), f32({}, {32}));
  Case one(12);
  set_attr(one.data("a", iota_f32({2, 3})).node("Einsum", {"a"}), "equation", "ij->j");
  EXPECT_EQ(one.y(), f32({3}, {5, 7, 9}));
  Case batched(12);  // the ellipsis: the same leading dims in both operands
  batched.data("a", iota_f32({2, 1, 2})).data("b", f32({2, 2, 1}, {1, 1, 1, -1}));
  set_attr(batched.node("Einsum", {"a", "b"}), "equation", "...ij,...jk");
  EXPECT_EQ(batched.y(), f32({2, 1, 1}, {3, -1}));
  Case diag(12);
  set_attr(diag.data("a", iota_f32({2, 2, 2})).node("Einsum", {"a"}), "equation", "...ii->...i");
  EXPECT_EQ(diag.y(), f32({2, 2}, {1, 4, 5, 8}));
  Case lonely(12);  // k is summed over B alone before the product
  lonely.data("a", iota_f32({2, 3})).data("b", iota_f32({2, 3}));
  set_attr(lonely.node("Einsum", {"a", "b"}), "equation", "ij,kj->i");
  EXPECT_EQ(lonely.y(), f32({2}, {46, 109}));
  Case trace(12);  // implicit output: a repeated letter is summed
  set_attr(trace.data("a", iota_f32({3, 3})).node("Einsum", {"a"}), "equation", "ii");
  EXPECT_EQ(trace.y(), f32({}, {15}));
  Case diag_product(12);  // "ij,jj->i": B's diagonal, then a matrix-vector product
  diag_product.data("a", iota_f32({2, 2})).data("b", f32({2, 2}, {10, 99, 99, 1}));
  set_attr(diag_product.node("Einsum", {"a", "b"}), "equation", "ij,jj->i");
  EXPECT_EQ(diag_product.y(), f32({2}, {12, 34}));
}

}  // namespace ops_reduce_linalg_test
}  // namespace
}  // namespace weft::onnx_io

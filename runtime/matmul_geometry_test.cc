// The matmul geometry both backends plan from (matmul_geometry.h): transposes, 1-D
// promotion, the broadcast batch and its entries, what the GEMM libraries do not run,
// and the two errors.
#include "runtime/matmul_geometry.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

Node matmul(bool ta = false, bool tb = false) {
  Node n;
  n.op = Op::Matmul;
  n.attrs["transpose_a"] = Attribute(ta);
  n.attrs["transpose_b"] = Attribute(tb);
  return n;
}

TEST(MatmulGeometry, BatchBroadcastAndEntries) {
  auto g = matmul_geometry(matmul(), Type{DType::f32, {3, 16, 24}}, Type{DType::f32, {24, 8}});
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->m, 16);
  EXPECT_EQ((*g)->k, 24);
  EXPECT_EQ((*g)->n, 8);
  EXPECT_EQ((*g)->batch, Shape({3}));
  EXPECT_EQ((*g)->a_entries, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ((*g)->b_entries, (std::vector<int64_t>{0, 0, 0}));
  g = matmul_geometry(matmul(), Type{DType::f64, {2, 1, 4, 5}}, Type{DType::f64, {3, 5, 6}});
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->batch, Shape({2, 3}));
  EXPECT_EQ((*g)->a_entries, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ((*g)->b_entries, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

TEST(MatmulGeometry, TransposesAndVectors) {
  auto g = matmul_geometry(matmul(true, true), Type{DType::f32, {24, 16}}, Type{DType::f32, {8, 24}});
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_TRUE((*g)->trans_a && (*g)->trans_b);
  EXPECT_EQ((*g)->m, 16);
  EXPECT_EQ((*g)->k, 24);
  EXPECT_EQ((*g)->n, 8);
  g = matmul_geometry(matmul(), Type{DType::f32, {7}}, Type{DType::f32, {7}});  // a dot product
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->m, 1);
  EXPECT_EQ((*g)->n, 1);
  EXPECT_EQ((*g)->k, 7);
}

TEST(MatmulGeometry, WhatTheLibrariesDoNotRunAndErrors) {
  EXPECT_FALSE(matmul_geometry(matmul(), Type{DType::i32, {2, 2}}, Type{DType::i32, {2, 2}})->has_value());
  EXPECT_FALSE(matmul_geometry(matmul(true), Type{DType::f32, {4}}, Type{DType::f32, {4, 2}})->has_value());
  EXPECT_FALSE(matmul_geometry(matmul(), Type{DType::f32, {}}, Type{DType::f32, {4}})->has_value());
  auto g = matmul_geometry(matmul(), Type{DType::f32, {2, 3}}, Type{DType::f32, {4, 5}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "contracted dimensions differ: f32[2,3] and f32[4,5]");
  g = matmul_geometry(matmul(), Type{DType::f32, {2, 3, 4}}, Type{DType::f32, {5, 4, 6}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "batch dimensions of f32[2,3,4] and f32[5,4,6] do not broadcast");
}

}  // namespace
}  // namespace weft

// The pooling kernels checked without a GPU: pool.cu computes each result element with
// pool_kernels.h's functions, and here those same functions run over host buffers (the
// window planned by plan_pooling) and are compared bit for bit with the reference
// interpreter — every op, f32, f64, f16 and bf16 (widened, computed in f32, rounded), on geometries with strides, padding, overlapping
// windows, floor-mode leftovers, windows of padding only, ties and NaNs.
#include "runtime/cuda/pool_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/test_util.h"
#include "runtime/tensor.h"

namespace weft::cuda {
namespace {
namespace pool_kernels_test {  // this file's names, apart in its package's unity test

using test_util::random_tensor;
using test_util::reference_node;
using test_util::tied_tensor;

struct Geometry {
  const char* name;
  Shape x;
  IntList kernel;
  IntList stride;  ///< Empty: the attribute is left out (stride = kernel).
  IntList padding;
};

void PrintTo(const Geometry& g, std::ostream* os) { *os << g.name; }

const Geometry kGeometries[] = {
    {"k2_s2", Shape{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}},
    {"k3_s2_p1_odd", Shape{1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1}},
    {"k3_s1_p1_overlapping", Shape{2, 1, 6, 5}, {3, 3}, {1, 1}, {1, 1}},
    {"k2x3_s3x1_p1x0_leftover", Shape{1, 2, 8, 7}, {2, 3}, {3, 1}, {1, 0}},
    {"k2_s2_p2_padding_only_windows", Shape{1, 2, 3, 3}, {2, 2}, {2, 2}, {2, 2}},
    {"k3_default_stride", Shape{1, 2, 9, 10}, {3, 3}, {}, {0, 0}},
    {"k1_s1", Shape{1, 1, 4, 3}, {1, 1}, {1, 1}, {0, 0}},
};

Node pool_node(Op op, const Geometry& g) {
  Node n;
  n.op = op;
  n.attrs["kernel"] = g.kernel;
  if (!g.stride.empty()) n.attrs["stride"] = g.stride;
  n.attrs["padding"] = g.padding;
  if (op == Op::AvgPool2dBackward) n.attrs["input_shape"] = g.x.dims;
  return n;
}

// Runs pool_element over every result element, as pool.cu's kernel does.
template <typename T>
Tensor run_elements(PoolOp op, const PoolWindow& w, const Tensor& a, const Tensor* b,
                    const Type& result) {
  Tensor out(result);
  EXPECT_EQ(pool_result_count(w, op), out.numel());
  const T* pb = b ? b->data<T>() : nullptr;
  for (int64_t e = 0; e < out.numel(); ++e) {
    out.data<T>()[e] = pool_element<T>(op, w, a.data<T>(), pb, e);
  }
  return out;
}

// Bit for bit (NaN equal to NaN).
void expect_identical(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.type(), want.type());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g << ", want NaN";
    } else {
      EXPECT_EQ(g, w) << "element " << i;
    }
  }
}

// The pooled shape by the shape rule (floor mode), computed here independently.
Shape pooled_shape(const Geometry& g) {
  const IntList stride = g.stride.empty() ? g.kernel : g.stride;
  std::vector<int64_t> d = g.x.dims;
  for (int a = 0; a < 2; ++a) {
    d[2 + a] = (d[2 + a] + 2 * g.padding[a] - g.kernel[a]) / stride[a] + 1;
  }
  return Shape(d);
}

template <typename T>
void check_op(Op op, const Geometry& geo, DType dtype, bool nans) {
  const Type xt{dtype, geo.x}, yt{dtype, pooled_shape(geo)};
  const Tensor x = tied_tensor(xt, 1, nans);
  std::vector<Tensor> args;
  Type result = yt;
  switch (op) {
    case Op::MaxPool2d: case Op::AvgPool2d: args = {x}; break;
    case Op::MaxPool2dBackward: args = {x, random_tensor(yt, 2)}; result = xt; break;
    case Op::AvgPool2dBackward: args = {random_tensor(yt, 3)}; result = xt; break;
    default: args = {x, random_tensor(xt, 4)}; break;  // max_pool2d_select
  }
  std::vector<Type> types;
  for (const Tensor& t : args) types.push_back(t.type());
  const Node node = pool_node(op, geo);
  StatusOr<PoolWindow> w = plan_pooling(node, types, result);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->planes, geo.x[0] * geo.x[1]);
  EXPECT_EQ(w->oh, yt.shape[2]);
  EXPECT_EQ(w->ow, yt.shape[3]);
  EXPECT_EQ(pool_op(op), pool_op(node.op));
  const Tensor got = run_elements<T>(pool_op(op), *w, args[0], args.size() > 1 ? &args[1] : nullptr,
                                     result);
  const Tensor want = reference_node(node, args, result);
  expect_identical(got, want);
  if (op == Op::MaxPool2dBackward && pool_windows_disjoint(*w)) {
    // pool.cu's scatter form for disjoint windows: a zeroed result, then each window.
    Tensor scattered(result);
    for (int64_t e = 0; e < w->planes * w->oh * w->ow; ++e) {
      max_pool_backward_scatter<T>(*w, args[0].data<T>(), args[1].data<T>(), e,
                                   scattered.data<T>());
    }
    SCOPED_TRACE("scatter form");
    expect_identical(scattered, want);
  }
}

// f16/bf16 (pool.h, launch_pool_half): the operands widened to f32, the f32 per-element
// functions, the result rounded once to the dtype — bit for bit the reference's (which
// runs its f32 kernel on the widened operands and rounds). The workspace holds exactly
// the widened operands and the f32 result.
void check_half_op(Op op, const Geometry& geo, DType dtype, bool nans) {
  const Type xt{dtype, geo.x}, yt{dtype, pooled_shape(geo)};
  std::vector<Tensor> args;
  Type result = yt;
  switch (op) {
    case Op::MaxPool2d: case Op::AvgPool2d: args = {tied_tensor(xt, 1, nans)}; break;
    case Op::MaxPool2dBackward: args = {tied_tensor(xt, 1, nans), random_tensor(yt, 2)}; result = xt; break;
    case Op::AvgPool2dBackward: args = {random_tensor(yt, 3)}; result = xt; break;
    default: args = {tied_tensor(xt, 1, nans), random_tensor(xt, 4)}; break;
  }
  std::vector<Type> types;
  std::vector<Tensor> wide;
  for (const Tensor& t : args) {
    types.push_back(t.type());
    Tensor f(Type{DType::f32, t.type().shape});
    for (int64_t i = 0; i < t.numel(); ++i) f.set_double(i, t.get_double(i));
    wide.push_back(std::move(f));
  }
  const Node node = pool_node(op, geo);
  StatusOr<PoolWindow> w = plan_pooling(node, types, result);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  const PoolOperandCounts n = pool_operand_counts(*w, pool_op(op));
  EXPECT_EQ(n.a, args[0].numel());
  EXPECT_EQ(n.b, args.size() > 1 ? args[1].numel() : 0);
  EXPECT_EQ(pool_half_workspace_bytes(*w, pool_op(op)),
            static_cast<size_t>(n.a + n.b + result.numel()) * sizeof(float));
  const Tensor f32 = run_elements<float>(pool_op(op), *w, wide[0],
                                         wide.size() > 1 ? &wide[1] : nullptr,
                                         Type{DType::f32, result.shape});
  Tensor got(result);
  for (int64_t i = 0; i < got.numel(); ++i) got.set_double(i, f32.get_double(i));
  expect_identical(got, reference_node(node, args, result));
}

class PoolKernelsTest : public ::testing::TestWithParam<Geometry> {};

TEST_P(PoolKernelsTest, EveryOpMatchesTheReferenceBitForBit) {
  const Geometry& geo = GetParam();
  for (Op op : {Op::MaxPool2d, Op::AvgPool2d, Op::MaxPool2dBackward, Op::AvgPool2dBackward,
                Op::MaxPool2dSelect}) {
    for (bool nans : {false, true}) {
      SCOPED_TRACE(std::string(op_name(op)) + (nans ? " with NaNs" : ""));
      check_op<float>(op, geo, DType::f32, nans);
      check_op<double>(op, geo, DType::f64, nans);
      for (DType half : {DType::bf16, DType::f16}) {
        SCOPED_TRACE(std::string(dtype_name(half)));
        check_half_op(op, geo, half, nans);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, PoolKernelsTest, ::testing::ValuesIn(kGeometries),
                         [](const auto& info) { return std::string(info.param.name); });

// A window of padding only: max_pool2d gives -inf, max_pool2d_select 0, and no gradient
// is routed from it.
TEST(PoolKernels, PaddingOnlyWindows) {
  PoolWindow w;
  w.planes = 1, w.h = 1, w.w = 1, w.kh = 1, w.kw = 1, w.sh = 1, w.sw = 1, w.ph = 1, w.pw = 1;
  w.oh = 3, w.ow = 3;
  const float x[1] = {5}, g[1] = {7};
  EXPECT_EQ(max_pool_element(w, x, 0), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(max_pool_element(w, x, 4), 5.0f);
  EXPECT_EQ(max_pool_select_element(w, x, g, 0), 0.0f);
  EXPECT_EQ(max_pool_select_element(w, x, g, 4), 7.0f);
  const float gy[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(max_pool_backward_element(w, x, gy, 0), 5.0f);
}

// Ties go to the first maximum in row-major window order; a NaN is the maximum and the
// first NaN wins.
TEST(PoolKernels, FirstMaximumAndNaN) {
  PoolWindow w;
  w.planes = 1, w.h = 2, w.w = 2, w.kh = 2, w.kw = 2, w.sh = 2, w.sw = 2, w.oh = 1, w.ow = 1;
  const float ties[4] = {1, 3, 3, 2};
  EXPECT_EQ(pool_window_argmax(w, ties, 0, 0), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float with_nan[4] = {1, nan, 3, nan};
  EXPECT_EQ(pool_window_argmax(w, with_nan, 0, 0), 1);
  const float gy[1] = {2};
  EXPECT_EQ(max_pool_backward_element(w, with_nan, gy, 1), 2.0f);
  EXPECT_EQ(max_pool_backward_element(w, with_nan, gy, 3), 0.0f);
}

TEST(PoolKernels, PlanRefusesWhatTheKernelsDoNotRun) {
  Geometry geo{"k2", Shape{1, 1, 4, 4}, {2, 2}, {2, 2}, {0, 0}};
  const Node node = pool_node(Op::MaxPool2d, geo);
  StatusOr<PoolWindow> i32 =
      plan_pooling(node, {Type{DType::i32, geo.x}}, Type{DType::i32, Shape{1, 1, 2, 2}});
  ASSERT_FALSE(i32.ok());
  EXPECT_EQ(i32.error().message,
            "max_pool2d: the pooling kernels run float dtypes (f32, f64, f16, bf16) only, not "
            "i32[1,1,4,4] -> "
            "i32[1,1,2,2]");
  StatusOr<PoolWindow> wrong =
      plan_pooling(node, {Type{DType::f32, geo.x}}, Type{DType::f32, Shape{1, 1, 3, 3}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message,
            "max_pool2d: types do not match pooling [1,1,4,4]: f32[1,1,4,4] -> f32[1,1,3,3]");
}

}  // namespace pool_kernels_test
}  // namespace
}  // namespace weft::cuda

// The pooling kernels (pool_device.inc) run on the host without a GPU, each CUDA thread a
// fiber (cuda_emulation.h), in the sequence pool.cu's launches enqueue them —
// launch_pool (the scatter form of max_pool2d_backward for disjoint windows, into a
// zeroed result) and launch_pool_half (widen, the f32 kernel, narrow) — on the launch's
// grid and on one block (the grid-stride loops go round), compared bit for bit with the
// reference interpreter: every op, f32, f64, bf16 and f16, with ties and NaNs.
// pool_kernels_test checks the per-element functions alone; this checks the kernels
// around them as written, not nvcc's code (executor_test runs them on a GPU).
#include "runtime/cuda/cuda_emulation.h"  // first: CUDA's built-ins for the kernels' source
#include "runtime/cuda/pool_device.inc"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/test_util.h"
#include "runtime/tensor.h"

namespace weft::cuda {
namespace {

using emulation::run_grid;
using test_util::random_tensor;
using test_util::reference_node;
using test_util::tied_tensor;

constexpr unsigned kThreads = 256;  // pool.cu's blocks

struct Geometry {
  const char* name;
  Shape x;
  IntList kernel, stride, padding;
};

void PrintTo(const Geometry& g, std::ostream* os) { *os << g.name; }

const Geometry kGeometries[] = {
    {"k2_s2", Shape{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}},                     // disjoint: scatter form
    {"k3_s1_p1_overlapping", Shape{2, 1, 6, 5}, {3, 3}, {1, 1}, {1, 1}},      // gather form
    {"k2x3_s3x1_p1x0_leftover", Shape{1, 2, 8, 7}, {2, 3}, {3, 1}, {1, 0}},
    {"k2_s2_p2_padding_only_windows", Shape{1, 2, 3, 3}, {2, 2}, {2, 2}, {2, 2}},
};

Shape pooled_shape(const Geometry& g) {
  std::vector<int64_t> d = g.x.dims;
  for (int a = 0; a < 2; ++a) d[2 + a] = (d[2 + a] + 2 * g.padding[a] - g.kernel[a]) / g.stride[a] + 1;
  return Shape(d);
}

unsigned launch_blocks(int64_t count, bool one_block) {
  return one_block ? 1u : static_cast<unsigned>(std::max<int64_t>((count + kThreads - 1) / kThreads, 1));
}

/// launch_pool's kernels for T (float or double) on host buffers.
template <typename T>
void run_pool(PoolOp op, const PoolWindow& w, const T* a, const T* b, T* out, bool one_block) {
  const int64_t count = pool_result_count(w, op);
  if (op == kMaxPoolBackward && pool_windows_disjoint(w)) {
    std::fill(out, out + count, T(0));  // cudaMemsetAsync
    const int64_t windows = w.planes * w.oh * w.ow;
    run_grid(launch_blocks(windows, one_block), kThreads,
             [&] { max_pool_backward_scatter_kernel<T>(w, a, b, out, windows); });
    return;
  }
  run_grid(launch_blocks(count, one_block), kThreads, [&] { pool_kernel<T>(op, w, a, b, out, count); });
}

/// launch_pool_half's kernels: the operands (f16/bf16 bits) widened into the workspace,
/// the f32 kernels, the result narrowed.
void run_pool_half(PoolOp op, bool bf16, const PoolWindow& w, const uint16_t* a, const uint16_t* b,
                   uint16_t* out, bool one_block) {
  const PoolOperandCounts n = pool_operand_counts(w, op);
  const int64_t count = pool_result_count(w, op);
  std::vector<float> workspace(pool_half_workspace_bytes(w, op) / sizeof(float), -99.0f);
  float* a32 = workspace.data();
  float* b32 = a32 + n.a;
  float* out32 = b32 + n.b;
  run_grid(launch_blocks(n.a, one_block), kThreads, [&] { widen_kernel(a, a32, n.a, bf16); });
  if (b != nullptr) run_grid(launch_blocks(n.b, one_block), kThreads, [&] { widen_kernel(b, b32, n.b, bf16); });
  run_pool<float>(op, w, a32, b != nullptr ? b32 : nullptr, out32, one_block);
  run_grid(launch_blocks(count, one_block), kThreads, [&] { narrow_kernel(out32, out, count, bf16); });
}

void expect_identical(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.type(), want.type());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    const bool same = std::isnan(w) ? std::isnan(g) : g == w;
    if (!same) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": " << g << ", want " << w;
    }
  }
}

/// The op's operands (PoolOp's table): x with ties, and gy or g.
std::vector<Tensor> operands(Op op, const Type& xt, const Type& yt, bool nans) {
  const Tensor x = tied_tensor(xt, 1, nans);
  if (op == Op::MaxPool2dBackward) return {x, random_tensor(yt, 2)};
  if (op == Op::AvgPool2dBackward) return {random_tensor(yt, 3)};
  if (op == Op::MaxPool2dSelect) return {x, random_tensor(xt, 4)};
  return {x};
}

void check(Op op, const Geometry& geo, DType dtype, bool nans, bool one_block) {
  const Type xt{dtype, geo.x}, yt{dtype, pooled_shape(geo)};
  const bool backward = op == Op::MaxPool2dBackward || op == Op::AvgPool2dBackward;
  const std::vector<Tensor> args = operands(op, xt, yt, nans);
  const Type result = backward ? xt : yt;
  Node node;
  node.op = op;
  node.attrs["kernel"] = geo.kernel;
  node.attrs["stride"] = geo.stride;
  node.attrs["padding"] = geo.padding;
  if (op == Op::AvgPool2dBackward) node.attrs["input_shape"] = geo.x.dims;
  std::vector<Type> types;
  for (const Tensor& t : args) types.push_back(t.type());
  StatusOr<PoolWindow> w = plan_pooling(node, types, result);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  Tensor got(result);
  const bool two = args.size() > 1;
  switch (dtype) {
    case DType::f32:
      run_pool<float>(pool_op(op), *w, args[0].data<float>(), two ? args[1].data<float>() : nullptr,
                      got.data<float>(), one_block);
      break;
    case DType::f64:
      run_pool<double>(pool_op(op), *w, args[0].data<double>(), two ? args[1].data<double>() : nullptr,
                       got.data<double>(), one_block);
      break;
    default:
      run_pool_half(pool_op(op), dtype == DType::bf16, *w, static_cast<const uint16_t*>(args[0].raw_data()),
                    two ? static_cast<const uint16_t*>(args[1].raw_data()) : nullptr,
                    static_cast<uint16_t*>(got.raw_data()), one_block);
      break;
  }
  expect_identical(got, reference_node(node, args, result));
}

class PoolEmulationTest : public ::testing::TestWithParam<Geometry> {};

TEST_P(PoolEmulationTest, EveryOpMatchesTheReferenceBitForBit) {
  for (Op op : {Op::MaxPool2d, Op::AvgPool2d, Op::MaxPool2dBackward, Op::AvgPool2dBackward,
                Op::MaxPool2dSelect}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      for (bool nans : {false, true}) {
        for (bool one_block : {false, true}) {
          SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(dtype)) + (nans ? " with NaNs" : "") +
                       (one_block ? " on one block" : ""));
          check(op, GetParam(), dtype, nans, one_block);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, PoolEmulationTest, ::testing::ValuesIn(kGeometries),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace weft::cuda

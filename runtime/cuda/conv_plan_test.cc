// cuDNN plans checked on the host: each convolution op's ConvPlan runs on a host
// emulation of the cuDNN call it names (cudnnConvolutionForward, BackwardData,
// BackwardFilter: NCHW cross-correlation with groups, with the argument checks cuDNN
// makes and every read and write bounds-checked), reading and writing the buffers the
// plan assigns to x, w and y, and is compared with the reference interpreter on
// geometries with strides, padding, dilation, groups (depthwise too), floor-mode
// leftovers and an empty batch. A wrong role, dimension order or output rule fails here
// rather than on the GPU. Also: the algorithm choice and the plan's errors.
#include "runtime/cuda/conv_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda/library.h"
#include "runtime/cuda/test_util.h"
#include "runtime/tensor.h"

namespace weft::cuda {
namespace {

using test_util::random_tensor;
using test_util::reference_node;

// A plan's tensor as 5-D: a rank-4 one has depth 1.
struct Dims5 {
  int64_t d[5];
  int64_t operator[](int i) const { return d[i]; }
};
Dims5 dims5(const int* d, int rank) {
  if (rank == 5) return {{d[0], d[1], d[2], d[3], d[4]}};
  return {{d[0], d[1], 1, d[2], d[3]}};
}

int64_t count(const Dims5& d) { return d[0] * d[1] * d[2] * d[3] * d[4]; }

// NCDHW (or OIDHW) element index.
int64_t at(const Dims5& d, int64_t a, int64_t b, int64_t c, int64_t e, int64_t f) {
  return (((a * d[1] + b) * d[2] + c) * d[3] + e) * d[4] + f;
}

// cuDNN's call on the host. `x`, `w`, `y` are the buffers in their roles (one of them
// written), each with its element count.
struct Buffer {
  double* data;
  int64_t size;
};

void emulate_cudnn(const ConvPlan& p, Buffer x, Buffer w, Buffer y) {
  ASSERT_TRUE(p.rank == 4 || p.rank == 5) << "cuDNN's convolutions take 4-D or 5-D tensors";
  const Dims5 xd = dims5(p.x, p.rank), wd = dims5(p.w, p.rank), yd = dims5(p.y, p.rank);
  // Spatial parameters over (D, H, W); a rank-4 plan has D's at their neutral values.
  const int skip = 5 - p.rank;
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  for (int a = 0; a < p.rank - 2; ++a) {
    stride[a + skip] = p.stride[a], pad[a + skip] = p.pad[a], dilation[a + skip] = p.dilation[a];
  }
  // cuDNN's argument checks (CUDNN_STATUS_BAD_PARAM otherwise).
  ASSERT_EQ(count(xd), x.size) << "x descriptor does not describe its buffer";
  ASSERT_EQ(count(wd), w.size) << "w descriptor does not describe its buffer";
  ASSERT_EQ(count(yd), y.size) << "y descriptor does not describe its buffer";
  ASSERT_GE(p.groups, 1);
  ASSERT_EQ(xd[1], wd[1] * p.groups) << "input channels != filter channels x groups";
  ASSERT_EQ(wd[0] % p.groups, 0);
  ASSERT_EQ(yd[0], xd[0]);
  ASSERT_EQ(yd[1], wd[0]);
  for (int a = 0; a < 3; ++a) {
    ASSERT_GE(stride[a], 1);
    ASSERT_GE(dilation[a], 1);
    ASSERT_GE(pad[a], 0);
    // cudnnGetConvolutionNdForwardOutputDim.
    ASSERT_EQ(yd[2 + a],
              1 + (xd[2 + a] + 2 * pad[a] - ((wd[2 + a] - 1) * dilation[a] + 1)) / stride[a]);
  }
  if (p.zero_fill) {
    Buffer out = p.call == ConvCall::forward         ? y
                 : p.call == ConvCall::backward_data ? x
                                                     : w;
    for (int64_t i = 0; i < out.size; ++i) out.data[i] = 0;
    return;
  }
  for (const int* d : {p.x, p.w, p.y}) {
    for (int i = 0; i < p.rank; ++i) ASSERT_GE(d[i], 1) << "cuDNN refuses zero dimensions";
  }
  Buffer out = p.call == ConvCall::forward         ? y
               : p.call == ConvCall::backward_data ? x
                                                   : w;
  for (int64_t i = 0; i < out.size; ++i) out.data[i] = 0;
  const int64_t kg = wd[0] / p.groups, cg = wd[1];
  for (int64_t n = 0; n < yd[0]; ++n) {
    for (int64_t k = 0; k < yd[1]; ++k) {
      const int64_t grp = k / kg;
      for (int64_t oz = 0; oz < yd[2]; ++oz) {
        for (int64_t oy = 0; oy < yd[3]; ++oy) {
          for (int64_t ox = 0; ox < yd[4]; ++ox) {
            const int64_t yi = at(yd, n, k, oz, oy, ox);
            for (int64_t c = 0; c < cg; ++c) {
              for (int64_t q = 0; q < wd[2]; ++q) {
                const int64_t iz = oz * stride[0] - pad[0] + q * dilation[0];
                if (iz < 0 || iz >= xd[2]) continue;
                for (int64_t r = 0; r < wd[3]; ++r) {
                  const int64_t iy = oy * stride[1] - pad[1] + r * dilation[1];
                  if (iy < 0 || iy >= xd[3]) continue;
                  for (int64_t s = 0; s < wd[4]; ++s) {
                    const int64_t ix = ox * stride[2] - pad[2] + s * dilation[2];
                    if (ix < 0 || ix >= xd[4]) continue;
                    const int64_t xi = at(xd, n, grp * cg + c, iz, iy, ix);
                    const int64_t wi = at(wd, k, c, q, r, s);
                    ASSERT_TRUE(xi >= 0 && xi < x.size && wi >= 0 && wi < w.size &&
                                yi < y.size);
                    switch (p.call) {
                      case ConvCall::forward: y.data[yi] += x.data[xi] * w.data[wi]; break;
                      case ConvCall::backward_data: x.data[xi] += y.data[yi] * w.data[wi]; break;
                      case ConvCall::backward_filter:
                        w.data[wi] += y.data[yi] * x.data[xi];
                        break;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

struct Geometry {
  const char* name;
  Shape x, w;
  IntList stride, padding, dilation;
  int64_t groups;
};

void PrintTo(const Geometry& g, std::ostream* os) { *os << g.name; }

const Geometry kGeometries[] = {
    {"plain", Shape{2, 3, 8, 8}, Shape{4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
    {"strided_padded", Shape{2, 3, 9, 7}, Shape{5, 3, 3, 2}, {2, 1}, {1, 2}, {1, 1}, 1},
    {"dilated", Shape{1, 2, 10, 9}, Shape{3, 2, 3, 3}, {1, 1}, {2, 1}, {2, 3}, 1},
    {"grouped", Shape{2, 6, 7, 7}, Shape{9, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 3},
    {"depthwise", Shape{1, 4, 6, 6}, Shape{8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4},
    {"pointwise_strided", Shape{2, 3, 7, 7}, Shape{2, 3, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
    {"floor_leftover", Shape{1, 1, 8, 8}, Shape{1, 1, 3, 3}, {3, 3}, {0, 0}, {1, 1}, 1},
    {"all_at_once", Shape{2, 4, 11, 10}, Shape{6, 2, 3, 2}, {2, 3}, {2, 1}, {2, 1}, 2},
    {"empty_batch", Shape{0, 3, 5, 5}, Shape{2, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    // Over three spatial dims (5-D, the Nd descriptors) and over one (4-D of height 1).
    {"volume", Shape{2, 3, 5, 6, 7}, Shape{4, 3, 3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1},
    {"volume_grouped", Shape{1, 4, 6, 5, 5}, Shape{6, 2, 2, 3, 3}, {2, 1, 2}, {0, 1, 1},
     {2, 1, 1}, 2},
    {"sequence", Shape{3, 4, 20}, Shape{6, 2, 3}, {2}, {1}, {2}, 2},
};

Shape conv_output(const Geometry& g) {
  std::vector<int64_t> d = {g.x[0], g.w[0]};
  for (size_t a = 0; a < g.stride.size(); ++a) {
    d.push_back((g.x[2 + a] + 2 * g.padding[a] - g.dilation[a] * (g.w[2 + a] - 1) - 1) /
                    g.stride[a] + 1);
  }
  return Shape(d);
}

Node conv_node(Op op, const Geometry& g) {
  Node n;
  n.op = op;
  n.attrs["stride"] = g.stride;
  n.attrs["padding"] = g.padding;
  n.attrs["dilation"] = g.dilation;
  n.attrs["groups"] = g.groups;
  if (op == Op::ConvBackwardInput) n.attrs["input_shape"] = g.x.dims;
  if (op == Op::ConvBackwardWeight) n.attrs["weight_shape"] = g.w.dims;
  return n;
}

void check_op(Op op, const Geometry& g, DType dtype) {
  const Type xt{dtype, g.x}, wt{dtype, g.w}, yt{dtype, conv_output(g)};
  std::vector<Tensor> args;
  Type result = yt;
  ConvCall call = ConvCall::forward;
  switch (op) {
    case Op::Conv: args = {random_tensor(xt, 1), random_tensor(wt, 2)}; break;
    case Op::ConvBackwardInput:
      args = {random_tensor(yt, 3), random_tensor(wt, 4)};
      result = xt;
      call = ConvCall::backward_data;
      break;
    default:
      args = {random_tensor(xt, 5), random_tensor(yt, 6)};
      result = wt;
      call = ConvCall::backward_filter;
      break;
  }
  const Node node = conv_node(op, g);
  StatusOr<ConvPlan> plan = plan_convolution(node, {args[0].type(), args[1].type()}, result);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->call, call);
  EXPECT_EQ(plan->dtype, dtype);
  const bool half = is_half(dtype);
  EXPECT_EQ(plan->math, half ? ContractionMath::tensor_f32 : ContractionMath::pedantic);
  EXPECT_EQ(plan->zero_fill, xt.numel() == 0 || wt.numel() == 0 || yt.numel() == 0);
  // The buffers: operands as doubles, the result zeroed; each handed to the role the
  // plan gives it.
  std::vector<double> a0 = args[0].to_doubles(), a1 = args[1].to_doubles();
  std::vector<double> out(static_cast<size_t>(result.numel()), -1.0);
  const auto buffer = [&](ConvBuffer b) {
    std::vector<double>& v = b == ConvBuffer::operand0 ? a0 : b == ConvBuffer::operand1 ? a1 : out;
    return Buffer{v.data(), static_cast<int64_t>(v.size())};
  };
  emulate_cudnn(*plan, buffer(plan->x_at), buffer(plan->w_at), buffer(plan->y_at));
  if (::testing::Test::HasFatalFailure()) return;
  const Tensor want = reference_node(node, args, result);
  ASSERT_EQ(want.numel(), static_cast<int64_t>(out.size()));
  // f16/bf16: the emulation's exact sums of the half operands against the reference's
  // f32 sums rounded once to the dtype (half a unit in the last place, and a little).
  const double tol = dtype == DType::f32    ? 2e-5
                     : dtype == DType::f64  ? 1e-12
                     : dtype == DType::bf16 ? 1e-2
                                            : 2e-3;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_double(i);
    EXPECT_NEAR(out[i], w, tol * (1 + std::abs(w))) << "element " << i;
  }
}

class ConvPlanTest : public ::testing::TestWithParam<Geometry> {};

TEST_P(ConvPlanTest, EachOpsCudnnCallMatchesTheReference) {
  for (Op op : {Op::Conv, Op::ConvBackwardInput, Op::ConvBackwardWeight}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + std::string(dtype_name(dtype)));
      check_op(op, GetParam(), dtype);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvPlanTest, ::testing::ValuesIn(kGeometries),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConvPlan, RolesAndDescription) {
  const Geometry g = kGeometries[3];  // grouped
  const Type xt{DType::f32, g.x}, wt{DType::f32, g.w}, yt{DType::f32, conv_output(g)};
  StatusOr<ConvPlan> fwd = plan_convolution(conv_node(Op::Conv, g), {xt, wt}, yt);
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(fwd->describe(),
            "forward f32 x[2,6,7,7] w[9,2,3,3] y[2,9,4,4] stride 2x2 pad 1x1 dilation 1x1 "
            "groups 3");
  StatusOr<ConvPlan> data = plan_convolution(conv_node(Op::ConvBackwardInput, g), {yt, wt}, xt);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->y_at, ConvBuffer::operand0);
  EXPECT_EQ(data->w_at, ConvBuffer::operand1);
  EXPECT_EQ(data->x_at, ConvBuffer::result);
  StatusOr<ConvPlan> filter =
      plan_convolution(conv_node(Op::ConvBackwardWeight, g), {xt, yt}, wt);
  ASSERT_TRUE(filter.ok());
  EXPECT_EQ(filter->x_at, ConvBuffer::operand0);
  EXPECT_EQ(filter->y_at, ConvBuffer::operand1);
  EXPECT_EQ(filter->w_at, ConvBuffer::result);
  EXPECT_EQ(filter->describe(),
            "backward_filter f32 x[2,6,7,7] w[9,2,3,3] y[2,9,4,4] stride 2x2 pad 1x1 "
            "dilation 1x1 groups 3");
  // Three spatial dims: a 5-D plan; one: a 4-D plan of height 1.
  const Geometry v = kGeometries[9];  // volume
  StatusOr<ConvPlan> volume = plan_convolution(
      conv_node(Op::Conv, v), {Type{DType::f32, v.x}, Type{DType::f32, v.w}},
      Type{DType::f32, conv_output(v)});
  ASSERT_TRUE(volume.ok()) << volume.status().to_string();
  EXPECT_EQ(volume->rank, 5);
  EXPECT_EQ(volume->describe(),
            "forward f32 x[2,3,5,6,7] w[4,3,3,2,3] y[2,4,5,3,5] stride 1x2x1 pad 1x0x1 "
            "dilation 1x1x2 groups 1");
  const Geometry q = kGeometries[11];  // sequence
  StatusOr<ConvPlan> sequence = plan_convolution(
      conv_node(Op::ConvBackwardWeight, q), {Type{DType::f32, q.x}, Type{DType::f32, conv_output(q)}},
      Type{DType::f32, q.w});
  ASSERT_TRUE(sequence.ok()) << sequence.status().to_string();
  EXPECT_EQ(sequence->rank, 4);
  EXPECT_EQ(sequence->describe(),
            "backward_filter f32 x[3,4,1,20] w[6,2,1,3] y[3,6,1,9] stride 1x2 pad 0x1 "
            "dilation 1x2 groups 2");
}

TEST(ConvPlan, RefusesWhatCudnnDoesNotRun) {
  const Geometry g = kGeometries[0];
  const Node node = conv_node(Op::Conv, g);
  StatusOr<ConvPlan> ints = plan_convolution(
      node, {Type{DType::i32, g.x}, Type{DType::i32, g.w}}, Type{DType::i32, conv_output(g)});
  ASSERT_FALSE(ints.ok());
  EXPECT_EQ(ints.error().message,
            "conv: cuDNN runs f32, f64, f16 and bf16 convolutions of one dtype, not i32[2,3,8,8], "
            "i32[4,3,3,3] -> i32[2,4,6,6]");
  StatusOr<ConvPlan> mixed = plan_convolution(
      node, {Type{DType::bf16, g.x}, Type{DType::f32, g.w}}, Type{DType::bf16, conv_output(g)});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().message,
            "conv: cuDNN runs f32, f64, f16 and bf16 convolutions of one dtype, not "
            "bf16[2,3,8,8], f32[4,3,3,3] -> bf16[2,4,6,6]");
  // 2^31 elements of input: beyond the legacy API's int.
  const Type big{DType::f32, Shape{2, 1, 32768, 32768}};
  StatusOr<ConvPlan> huge = plan_convolution(
      conv_node(Op::Conv, Geometry{"big", big.shape, Shape{1, 1, 1, 1}, {1, 1}, {0, 0},
                                     {1, 1}, 1}),
      {big, Type{DType::f32, Shape{1, 1, 1, 1}}}, big);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().message,
            "conv: [2,1,32768,32768] is beyond cuDNN's int: f32[2,1,32768,32768], "
            "f32[1,1,1,1] -> f32[2,1,32768,32768]");
  StatusOr<ConvPlan> mismatch = plan_convolution(
      node, {Type{DType::f32, g.x}, Type{DType::f32, g.w}}, Type{DType::f32, Shape{2, 4, 5, 5}});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().message,
            "conv: output gradient or result [2,4,5,5] does not match the convolution of "
            "[2,3,8,8] by [4,3,3,3]");
}

// library.h's decision: f32, f64, f16 and bf16 convolutions go to cuDNN and poolings to
// pool.cu; what the plans refuse stays on the host.
TEST(ConvPlan, LibraryKindSendsConvolutionsAndPoolingsToTheDevice) {
  const Geometry g = kGeometries[7];  // all_at_once
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Type xt{dtype, g.x}, wt{dtype, g.w}, yt{dtype, conv_output(g)};
    EXPECT_EQ(library_kind(conv_node(Op::Conv, g), {xt, wt}, yt), LibraryKind::convolution);
    EXPECT_EQ(library_kind(conv_node(Op::ConvBackwardInput, g), {yt, wt}, xt),
              LibraryKind::convolution);
    EXPECT_EQ(library_kind(conv_node(Op::ConvBackwardWeight, g), {xt, yt}, wt),
              LibraryKind::convolution);
  }
  const Type i{DType::i32, g.x}, iw{DType::i32, g.w}, iy{DType::i32, conv_output(g)};
  EXPECT_EQ(library_kind(conv_node(Op::Conv, g), {i, iw}, iy), LibraryKind::host);
  const Type xt{DType::f32, Shape{1, 2, 6, 6}}, yt{DType::f32, Shape{1, 2, 3, 3}};
  Node pool;
  pool.op = Op::MaxPool2d;
  pool.attrs["kernel"] = IntList{2, 2};
  EXPECT_EQ(library_kind(pool, {xt}, yt), LibraryKind::pooling);
  pool.op = Op::MaxPool2dBackward;
  EXPECT_EQ(library_kind(pool, {xt, yt}, xt), LibraryKind::pooling);
  pool.op = Op::MaxPool2dSelect;
  EXPECT_EQ(library_kind(pool, {xt, xt}, yt), LibraryKind::pooling);
  pool.op = Op::AvgPool2dBackward;
  pool.attrs["input_shape"] = xt.shape.dims;
  EXPECT_EQ(library_kind(pool, {yt}, xt), LibraryKind::pooling);
  pool.op = Op::MaxPool2d;
  const Type ix{DType::i64, xt.shape}, iy2{DType::i64, yt.shape};
  EXPECT_EQ(library_kind(pool, {ix}, iy2), LibraryKind::host);  // integer max pooling
}

ConvAlgorithm algo(int id, bool deterministic, bool approximate, size_t workspace,
                   bool tensor_ops = false, bool supported = true) {
  return {.algo = id, .supported = supported, .deterministic = deterministic,
          .tensor_ops = tensor_ops, .approximate = approximate, .workspace = workspace};
}

TEST(ConvAlgorithmChoice, PrefersDeterministicExactWithinTheLimit) {
  // cuDNN's order: fastest expected first.
  const std::vector<ConvAlgorithm> offered = {
      algo(7, true, true, 10),                       // Winograd
      algo(0, false, false, 10),                     // nondeterministic
      algo(3, true, false, 10, /*tensor_ops=*/true),  // TF32
      algo(5, true, false, 1000),                    // over the limit
      algo(4, true, false, 10, false, /*supported=*/false),
      algo(1, true, false, 100),
  };
  EXPECT_EQ(choose_conv_algorithm(offered, /*limit=*/500), 5);
  // Without it: exact but nondeterministic beats deterministic approximate.
  std::vector<ConvAlgorithm> fewer(offered.begin(), offered.end() - 1);
  EXPECT_EQ(choose_conv_algorithm(fewer, /*limit=*/500), 1);
  // Only over the limit: taken all the same.
  EXPECT_EQ(choose_conv_algorithm({algo(5, true, false, 1000), algo(2, true, true, 2000)},
                                  /*limit=*/500),
            0);
  // Tensor ops or unsupported only: none.
  EXPECT_EQ(choose_conv_algorithm({algo(3, true, false, 0, true), algo(4, true, false, 0, false,
                                                                       false)}),
            -1);
  EXPECT_EQ(choose_conv_algorithm({}), -1);
}

TEST(ConvAlgorithmChoice, FastestTakesTheFirstWithinTheLimit) {
  const std::vector<ConvAlgorithm> offered = {
      algo(3, true, false, 10, /*tensor_ops=*/true),  // TF32: never
      algo(5, true, false, 1000),                    // over the limit
      algo(7, false, true, 10),                      // nondeterministic Winograd
      algo(1, true, false, 100),
  };
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::fastest), 2);
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::exact), 3);
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::deterministic), 3);
  // Deterministic Winograd is taken over a slower exact one by `deterministic` only.
  const std::vector<ConvAlgorithm> winograd = {algo(0, false, false, 10), algo(7, true, true, 10),
                                               algo(1, true, false, 10)};
  EXPECT_EQ(choose_conv_algorithm(winograd, 500, ConvPolicy::deterministic), 1);
  EXPECT_EQ(choose_conv_algorithm(winograd, 500, ConvPolicy::exact), 2);
  EXPECT_EQ(choose_conv_algorithm(winograd, 500, ConvPolicy::fastest), 0);
  // Nothing within the limit: the fastest over it.
  EXPECT_EQ(choose_conv_algorithm({algo(5, false, false, 1000), algo(2, true, true, 2000)}, 500,
                                  ConvPolicy::fastest),
            0);
  EXPECT_EQ(choose_conv_algorithm({algo(3, true, false, 0, true)}, 500, ConvPolicy::fastest), -1);
}

// f16/bf16 plans (and f32 with TF32) may take tensor-op algorithms: the classes are the
// same, tensor ops included; f32 and f64 plans never take them.
TEST(ConvAlgorithmChoice, TensorOpsOnlyWhenThePlanAllowsThem) {
  const std::vector<ConvAlgorithm> offered = {
      algo(3, true, false, 10, /*tensor_ops=*/true),
      algo(5, false, false, 10, /*tensor_ops=*/true),
      algo(1, true, false, 100),
  };
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::exact), 2);
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::exact, /*tensor_ops=*/true), 0);
  EXPECT_EQ(choose_conv_algorithm(offered, 500, ConvPolicy::fastest, /*tensor_ops=*/true), 0);
  EXPECT_EQ(choose_conv_algorithm({offered[1]}, 500, ConvPolicy::deterministic, true), 0);
  EXPECT_EQ(choose_conv_algorithm({offered[1]}, 500, ConvPolicy::deterministic), -1);
}

TEST(ConvPlan, HalvesRunOnTensorCores) {
  const Geometry g = kGeometries[3];  // grouped
  const Type xt{DType::bf16, g.x}, wt{DType::bf16, g.w}, yt{DType::bf16, conv_output(g)};
  StatusOr<ConvPlan> fwd = plan_convolution(conv_node(Op::Conv, g), {xt, wt}, yt);
  ASSERT_TRUE(fwd.ok()) << fwd.status().to_string();
  EXPECT_EQ(fwd->math, ContractionMath::tensor_f32);
  EXPECT_NE(fwd->describe().find("forward bf16 x["), std::string::npos) << fwd->describe();
  EXPECT_NE(fwd->describe().find(" (tensor cores, f32 accumulation)"), std::string::npos)
      << fwd->describe();
  ConvPlan f32 = *plan_convolution(conv_node(Op::Conv, g),
                                   {Type{DType::f32, g.x}, Type{DType::f32, g.w}},
                                   Type{DType::f32, conv_output(g)});
  EXPECT_EQ(f32.math, ContractionMath::pedantic);
  f32.math = contraction_math(DType::f32, /*tf32=*/true);
  EXPECT_NE(f32.describe().find(" (tf32 tensor cores)"), std::string::npos) << f32.describe();
}

}  // namespace
}  // namespace weft::cuda

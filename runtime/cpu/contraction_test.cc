// Contraction-category library kernels (matmul, convolutions, pooling) against the
// reference interpreter, op by op, plus bitwise reproducibility for a fixed thread count
// and a check that oneDNN starts no OpenMP threads of its own.

#include <gtest/gtest.h>

#include <dirent.h>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {
namespace contraction_test {  // this file's names, apart in its package's unity test

using testing::matches_reference;
using testing::random_tensor;
using testing::run_both;

Tensor rnd(DType dtype, Shape shape, unsigned seed) {
  return random_tensor(Type{dtype, std::move(shape)}, seed);
}

constexpr double kGemmTol = 1e-4;

void expect_matches(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs, double tol) {
  for (int threads : {1, 2}) {
    std::string why;
    EXPECT_TRUE(matches_reference(op, attrs, inputs, tol, &why, threads))
        << op_name(op) << " with " << threads << " threads: " << why;
  }
}

// Two runs with the same thread count give identical bytes.
void expect_reproducible(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  for (int threads : {1, 2}) {
    const testing::Comparison a = run_both(op, attrs, inputs, threads);
    const testing::Comparison b = run_both(op, attrs, inputs, threads);
    ASSERT_TRUE(a.has_kernel && b.has_kernel);
    EXPECT_TRUE(a.cpu == b.cpu) << op_name(op) << " with " << threads << " threads";
  }
}

TEST(MatmulTest, MatchesReference) {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{7, 13}, {13, 5}},           {{128, 784}, {784, 256}}, {{1, 300}, {300, 200}},
      {{1, 13}, {13, 5}},           {{7, 13}, {13, 1}},       {{1, 13}, {13, 1}},
      {{3, 7, 13}, {13, 5}},        {{3, 7, 13}, {3, 13, 5}}, {{2, 1, 4, 6}, {3, 6, 5}},
      {{5, 13}, {2, 13, 40}},       {{256, 128}, {128, 512}}, {{0, 4}, {4, 3}},
      {{4, 0}, {0, 3}},             {{2, 64, 64}, {64, 64}},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
      expect_matches(Op::Matmul, {}, {rnd(dt, c.a, seed), rnd(dt, c.b, seed + 1)},
                     dt == DType::f32 ? kGemmTol : 1e-12);
      seed += 2;
    }
  }
}

// Transpose flags (set by fold-transpose): the operands are read transposed in place.
TEST(MatmulTest, TransposeFlagsMatchReference) {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{13, 7}, {13, 5}, true, false},      {{7, 13}, {5, 13}, false, true},
      {{13, 7}, {5, 13}, true, true},       {{784, 128}, {784, 256}, true, false},
      {{128, 256}, {784, 256}, false, true}, {{3, 13, 7}, {13, 5}, true, false},
      {{3, 7, 13}, {3, 5, 13}, false, true}, {{2, 1, 6, 4}, {3, 5, 6}, true, true},
      {{4, 40}, {4, 3}, true, false},
  };
  unsigned seed = 100;
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string() + (c.ta ? " T" : " N") +
                   (c.tb ? "T" : "N"));
      Attrs attrs;
      if (c.ta) attrs["transpose_a"] = true;
      if (c.tb) attrs["transpose_b"] = true;
      expect_matches(Op::Matmul, attrs, {rnd(dt, c.a, seed), rnd(dt, c.b, seed + 1)},
                     dt == DType::f32 ? kGemmTol : 1e-12);
      seed += 2;
    }
  }
}

// The IR rejects 1-D matmul operands, but the kernel follows NumPy like the reference
// kernel does: [k] x [k, n] gives what [1, k] x [k, n] gives, with the added axis dropped.
TEST(MatmulTest, OneDOperandsArePromoted) {
  const Tensor a = rnd(DType::f32, {1, 13}, 1), b = rnd(DType::f32, {13, 5}, 2);
  const Tensor want = run_both(Op::Matmul, {}, {a, b}).cpu;
  auto run_1d = [&](Shape sa, Shape sb, Shape sc) {
    Tensor c(Type{DType::f32, sc});
    LibraryCall call;
    call.node.op = Op::Matmul;
    call.operand_types = {{DType::f32, sa}, {DType::f32, sb}};
    call.result_type = c.type();
    auto k = make_library_kernel(call, {a.raw_data(), b.raw_data()}, c.raw_data());
    EXPECT_TRUE(k.ok() && *k);
    ThreadPool pool(2);
    EXPECT_TRUE((*k)->run(pool).ok());
    return c.to_doubles();
  };
  EXPECT_EQ(run_1d({13}, {13, 5}, {5}), want.to_doubles());
  // [1, 13] x [13]: the first column of b, read as a vector of 13 (b's first 13 values).
  const Tensor b13 = Tensor::from_vector(Shape{13, 1}, std::vector<float>(
      static_cast<const float*>(b.raw_data()), static_cast<const float*>(b.raw_data()) + 13));
  const Tensor want_col = run_both(Op::Matmul, {}, {a, b13}).cpu;
  EXPECT_EQ(run_1d({1, 13}, {13}, {1}), want_col.to_doubles());
}

TEST(MatmulTest, OtherDtypesHaveNoKernel) {
  const Tensor a = random_tensor({DType::i32, {3, 4}}, 1, -5, 5);
  const Tensor b = random_tensor({DType::i32, {4, 2}}, 2, -5, 5);
  EXPECT_FALSE(run_both(Op::Matmul, {}, {a, b}).has_kernel);
}

TEST(MatmulTest, BitwiseReproducible) {
  expect_reproducible(Op::Matmul, {},
                      {rnd(DType::f32, {128, 784}, 3), rnd(DType::f32, {784, 256}, 4)});
  expect_reproducible(Op::Matmul, {},
                      {rnd(DType::f32, {4, 33, 70}, 5), rnd(DType::f32, {4, 70, 20}, 6)});
}

int count_threads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// What the GEMM kernels' describe() says (GemmPlan::describe, which the plain and the
// epilogue kernels share): the library, the transposes when either is set, the sizes,
// the batch when over 1.
TEST(MatmulTest, ThePlanDescribesItsGemm) {
  EXPECT_EQ(GemmPlan::single(2, 3, 4).describe(/*f32=*/true), "onednn sgemm 2x3x4");
  EXPECT_EQ(GemmPlan::single(2, 3, 4, /*trans_a=*/false, /*trans_b=*/true).describe(/*f32=*/true),
            "onednn sgemm NT 2x3x4");
  GemmPlan batched = GemmPlan::single(2, 3, 4, /*trans_a=*/true);
  batched.a_offsets = {0, 8};
  batched.b_offsets = {0, 12};
  EXPECT_EQ(batched.describe(/*f32=*/false), "loop dgemm TN 2x3x4 batch 2");
}

TEST(MatmulTest, OneDnnStartsNoThreadsOfItsOwn) {
  const Tensor a = rnd(DType::f32, {256, 512}, 7), b = rnd(DType::f32, {512, 512}, 8);
  Tensor c(Type{DType::f32, {256, 512}});
  LibraryCall call;
  call.node.op = Op::Matmul;
  call.operand_types = {a.type(), b.type()};
  call.result_type = c.type();
  auto k = make_library_kernel(call, {a.raw_data(), b.raw_data()}, c.raw_data());
  ASSERT_TRUE(k.ok() && *k);
  ThreadPool pool(2);
  const int before = count_threads();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*k)->run(pool).ok());
  EXPECT_EQ(count_threads(), before);
  EXPECT_EQ((*k)->describe(), "onednn sgemm 256x512x512");
}

Attrs conv_attrs(IntList stride, IntList padding, IntList dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

struct ConvCase {
  Shape x, w;
  Attrs attrs;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{4, 1, 28, 28}, {32, 1, 3, 3}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)},
      {{3, 32, 14, 14}, {64, 32, 3, 3}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)},
      {{3, 4, 11, 9}, {6, 4, 3, 3}, conv_attrs({2, 2}, {1, 1}, {1, 1}, 1)},
      {{2, 4, 12, 13}, {6, 2, 3, 2}, conv_attrs({1, 2}, {2, 1}, {2, 1}, 2)},
      {{5, 3, 10, 10}, {5, 3, 3, 3}, conv_attrs({1, 1}, {0, 0}, {2, 2}, 1)},
      {{3, 8, 7, 7}, {12, 8, 1, 1}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)},
      {{1, 6, 9, 9}, {6, 1, 3, 3}, conv_attrs({2, 1}, {1, 2}, {1, 1}, 6)},
      // 16+ channels per group: oneDNN's primitives (the others use im2col).
      {{3, 32, 9, 10}, {32, 16, 3, 3}, conv_attrs({2, 2}, {1, 1}, {2, 2}, 2)},
      {{2, 16, 8, 8}, {16, 16, 3, 3}, conv_attrs({1, 2}, {2, 1}, {1, 1}, 1)},
      // An RGB first layer: im2col, but oneDNN for the weight gradient.
      {{3, 3, 12, 12}, {16, 3, 3, 3}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)},
      // Over three spatial dims [D, H, W]: im2col, grouped, and oneDNN's 5-D primitives.
      {{2, 3, 5, 6, 7}, {4, 3, 3, 2, 3}, conv_attrs({1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1)},
      {{2, 4, 4, 5, 5}, {6, 2, 2, 3, 3}, conv_attrs({2, 1, 1}, {0, 1, 1}, {1, 1, 1}, 2)},
      {{2, 16, 4, 6, 6}, {16, 16, 3, 3, 3}, conv_attrs({1, 1, 2}, {1, 1, 0}, {1, 2, 1}, 1)},
      // Over one spatial dim [W]: im2col and oneDNN (as a 2-D convolution of height 1).
      {{3, 4, 20}, {5, 4, 3}, conv_attrs({2}, {1}, {2}, 1)},
      {{2, 16, 12}, {16, 16, 3}, conv_attrs({1}, {1}, {1}, 1)},
  };
}

Shape conv_out(const ConvCase& c) {
  const IntList& s = std::get<IntList>(c.attrs.at("stride"));
  const IntList& p = std::get<IntList>(c.attrs.at("padding"));
  const IntList& d = std::get<IntList>(c.attrs.at("dilation"));
  std::vector<int64_t> y{c.x[0], c.w[0]};
  for (size_t a = 0; a < s.size(); ++a) {
    y.push_back((c.x[2 + a] + 2 * p[a] - d[a] * (c.w[2 + a] - 1) - 1) / s[a] + 1);
  }
  return Shape(std::move(y));
}

TEST(ConvTest, ForwardMatchesReference) {
  unsigned seed = 10;
  for (const ConvCase& c : conv_cases()) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.x.to_string() + " * " + c.w.to_string());
      expect_matches(Op::Conv, c.attrs, {rnd(dt, c.x, seed), rnd(dt, c.w, seed + 1)},
                     dt == DType::f32 ? kGemmTol : 1e-12);
      seed += 2;
    }
  }
}

TEST(ConvTest, BackwardInputMatchesReference) {
  unsigned seed = 40;
  for (const ConvCase& c : conv_cases()) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.x.to_string() + " * " + c.w.to_string());
      Attrs attrs = c.attrs;
      attrs["input_shape"] = c.x.dims;
      expect_matches(Op::ConvBackwardInput, attrs,
                     {rnd(dt, conv_out(c), seed), rnd(dt, c.w, seed + 1)},
                     dt == DType::f32 ? kGemmTol : 1e-12);
      seed += 2;
    }
  }
}

TEST(ConvTest, BackwardWeightMatchesReference) {
  unsigned seed = 70;
  for (const ConvCase& c : conv_cases()) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.x.to_string() + " * " + c.w.to_string());
      Attrs attrs = c.attrs;
      attrs["weight_shape"] = c.w.dims;
      expect_matches(Op::ConvBackwardWeight, attrs,
                     {rnd(dt, c.x, seed), rnd(dt, conv_out(c), seed + 1)},
                     dt == DType::f32 ? kGemmTol : 1e-12);
      seed += 2;
    }
  }
}

TEST(ConvTest, BitwiseReproducible) {
  const ConvCase c = conv_cases()[1];
  Attrs bw = c.attrs, bi = c.attrs;
  bw["weight_shape"] = c.w.dims;
  bi["input_shape"] = c.x.dims;
  const Tensor x = rnd(DType::f32, c.x, 1), w = rnd(DType::f32, c.w, 2);
  const Tensor gy = rnd(DType::f32, conv_out(c), 3);
  expect_reproducible(Op::Conv, c.attrs, {x, w});
  expect_reproducible(Op::ConvBackwardInput, bi, {gy, w});
  expect_reproducible(Op::ConvBackwardWeight, bw, {x, gy});
}

// f32 convolutions with 16+ channels per group (strided, dilated, grouped included) get
// oneDNN's primitives; the first layer's few channels get im2col.
TEST(ConvTest, ChoosesOnednnForWideChannels) {
  for (size_t i = 0; i < conv_cases().size(); ++i) {
    const ConvCase c = conv_cases()[i];
    const Tensor x = rnd(DType::f32, c.x, 1), w = rnd(DType::f32, c.w, 2);
    Tensor y(Type{DType::f32, conv_out(c)});
    LibraryCall call;
    call.node.op = Op::Conv;
    call.node.attrs = c.attrs;
    call.operand_types = {x.type(), w.type()};
    call.result_type = y.type();
    auto k = make_library_kernel(call, {x.raw_data(), w.raw_data()}, y.raw_data());
    ASSERT_TRUE(k.ok() && *k);
    const bool wide = c.w[1] >= 16 && c.w[0] / std::get<int64_t>(c.attrs.at("groups")) >= 16;
    EXPECT_EQ((*k)->describe().rfind(wide ? "onednn " : "im2col+", 0), 0u) << (*k)->describe();
  }
}

// The weight gradient goes to oneDNN from 3 input and 16 output channels per group (its
// im2col GEMM is thin), the single-channel one stays with im2col.
TEST(ConvTest, WeightGradientOfAnRgbLayerUsesOnednn) {
  for (int64_t channels : {1, 3}) {
    const ConvCase c{{4, channels, 12, 12}, {16, channels, 3, 3},
                     conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)};
    const Tensor x = rnd(DType::f32, c.x, 1), gy = rnd(DType::f32, conv_out(c), 2);
    Tensor gw(Type{DType::f32, c.w});
    LibraryCall call;
    call.node.op = Op::ConvBackwardWeight;
    call.node.attrs = c.attrs;
    call.node.attrs["weight_shape"] = c.w.dims;
    call.operand_types = {x.type(), gy.type()};
    call.result_type = gw.type();
    auto k = make_library_kernel(call, {x.raw_data(), gy.raw_data()}, gw.raw_data());
    ASSERT_TRUE(k.ok() && *k);
    EXPECT_EQ((*k)->describe().rfind(channels == 3 ? "onednn " : "im2col+", 0), 0u)
        << (*k)->describe();
  }
}

// Both f32 paths, bound directly: oneDNN primitives where they apply, and im2col.
TEST(ConvTest, OnednnAndIm2colAgree) {
  const ConvCase c = conv_cases()[1];
  const Tensor x = rnd(DType::f32, c.x, 1), w = rnd(DType::f32, c.w, 2);
  const Tensor gy = rnd(DType::f32, conv_out(c), 3);
  const ConvGeometry g{.n = c.x[0], .c = c.x[1], .h = c.x[2], .w = c.x[3], .o = c.w[0],
                       .kh = c.w[2], .kw = c.w[3], .oh = c.x[2], .ow = c.x[3], .ph = 1,
                       .pw = 1};
  struct Bound {
    ConvOp op;
    const Tensor *in0, *in1;
    Type out;
  };
  const Bound cases[] = {{ConvOp::kForward, &x, &w, gy.type()},
                         {ConvOp::kBackwardInput, &gy, &w, x.type()},
                         {ConvOp::kBackwardWeight, &x, &gy, w.type()}};
  ThreadPool pool(2);
  for (const Bound& b : cases) {
    Tensor a(b.out), i(b.out);
    auto onednn = make_onednn_conv_kernel(b.op, g, DType::f32, b.in0->raw_data(), b.in1->raw_data(), a.raw_data());
    auto im2col = make_im2col_conv_kernel(b.op, g, DType::f32, b.in0->raw_data(),
                                          b.in1->raw_data(), i.raw_data());
    ASSERT_TRUE(onednn && im2col);
    EXPECT_EQ(onednn->describe().rfind("onednn ", 0), 0u) << onednn->describe();
    ASSERT_TRUE(onednn->run(pool).ok() && im2col->run(pool).ok());
    std::string why;
    EXPECT_TRUE(all_close(a, i, kGemmTol, &why)) << onednn->describe() << ": " << why;
  }
}

struct PoolCase {
  Shape x;
  Attrs attrs;
};

std::vector<PoolCase> pool_cases() {
  return {
      {{4, 3, 28, 28}, {{"kernel", IntList{2, 2}}}},
      {{2, 3, 9, 11}, {{"kernel", IntList{3, 3}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}}},
      {{2, 2, 8, 7}, {{"kernel", IntList{2, 3}}, {"stride", IntList{1, 2}}, {"padding", IntList{1, 0}}}},
      {{1, 5, 6, 6}, {{"kernel", IntList{3, 3}}, {"stride", IntList{3, 1}}}},
      // The 2x2 stride-2 fast path: widths that fill whole vectors and leave tails, odd
      // heights and widths (a last row or column no window reads).
      {{2, 3, 32, 32}, {{"kernel", IntList{2, 2}}}},
      {{1, 2, 6, 40}, {{"kernel", IntList{2, 2}}, {"stride", IntList{2, 2}}}},
      {{2, 3, 9, 7}, {{"kernel", IntList{2, 2}}}},
      // 2x2 windows that overlap or are padded take the general path.
      {{1, 2, 7, 9}, {{"kernel", IntList{2, 2}}, {"stride", IntList{1, 1}}}},
      {{1, 2, 7, 9}, {{"kernel", IntList{2, 2}}, {"padding", IntList{1, 1}}}},
  };
}

Shape pool_out(const PoolCase& c) {
  const IntList& k = std::get<IntList>(c.attrs.at("kernel"));
  const IntList s = c.attrs.count("stride") ? std::get<IntList>(c.attrs.at("stride")) : k;
  const IntList p = c.attrs.count("padding") ? std::get<IntList>(c.attrs.at("padding"))
                                              : IntList{0, 0};
  return Shape{c.x[0], c.x[1], (c.x[2] + 2 * p[0] - k[0]) / s[0] + 1,
               (c.x[3] + 2 * p[1] - k[1]) / s[1] + 1};
}

TEST(PoolTest, AllOpsMatchReferenceExactly) {
  unsigned seed = 100;
  for (const PoolCase& c : pool_cases()) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(c.x.to_string());
      // Few distinct values, so windows hold ties and the first maximum matters.
      Tensor x = random_tensor({dt, c.x}, seed, -3, 3);
      const std::vector<double> v = x.to_doubles();
      for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::floor(v[i]));
      const Tensor gy = rnd(dt, pool_out(c), seed + 1), g = rnd(dt, c.x, seed + 2);
      Attrs avg_back = c.attrs;
      avg_back["input_shape"] = c.x.dims;
      expect_matches(Op::MaxPool2d, c.attrs, {x}, 0);
      expect_matches(Op::AvgPool2d, c.attrs, {x}, 0);
      expect_matches(Op::MaxPool2dBackward, c.attrs, {x, gy}, 0);
      expect_matches(Op::AvgPool2dBackward, avg_back, {gy}, 0);
      expect_matches(Op::MaxPool2dSelect, c.attrs, {x, g}, 0);
      seed += 3;
    }
  }
}

TEST(PoolTest, NanIsTheMaximum) {
  Tensor x = rnd(DType::f32, {1, 1, 4, 4}, 5);
  x.set_double(5, std::nan(""));
  const Attrs attrs = {{"kernel", IntList{2, 2}}};
  expect_matches(Op::MaxPool2d, attrs, {x}, 0);
  expect_matches(Op::MaxPool2dBackward, attrs, {x, rnd(DType::f32, {1, 1, 2, 2}, 6)}, 0);
}

// The kernel's result has the reference's exact bytes (all_close with tolerance 0 would
// accept -0 for +0), with 1 and 2 threads.
void expect_bitwise(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  for (int threads : {1, 2}) {
    const testing::Comparison c = run_both(op, attrs, inputs, threads);
    ASSERT_TRUE(c.has_kernel && c.cpu_status.ok() && c.reference_status.ok()) << op_name(op);
    EXPECT_TRUE(c.cpu == c.reference) << op_name(op) << " with " << threads << " threads";
  }
}

// Windows full of the cases the first-maximum rule decides: NaNs at every position
// (the first NaN wins), ties, +0 against -0, infinities, and gradients of -0 (the
// reference's 0 + g makes them +0).
TEST(PoolTest, SpecialValuesMatchReferenceBitwise) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> specials = {nan, 1.0, 1.0, -0.0, 0.0, -inf, inf, -1.0, nan, 2.0};
  const std::vector<Attrs> windows = {
      {{"kernel", IntList{2, 2}}},
      {{"kernel", IntList{3, 3}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}},
      {{"kernel", IntList{2, 2}}, {"stride", IntList{1, 1}}},
  };
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Attrs& attrs : windows) {
      for (unsigned seed = 1; seed <= 4; ++seed) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
        const Shape shape{2, 2, 10, 36};
        Tensor x = random_tensor({dt, shape}, seed, 0, static_cast<double>(specials.size()));
        const std::vector<double> picks = x.to_doubles();
        for (int64_t i = 0; i < x.numel(); ++i) {
          x.set_double(i, specials[static_cast<size_t>(picks[i])]);
        }
        PoolCase c{shape, attrs};
        Tensor gy = rnd(dt, pool_out(c), seed + 10);
        for (int64_t i = 0; i < gy.numel(); i += 3) gy.set_double(i, -0.0);
        const Tensor g = rnd(dt, shape, seed + 20);
        expect_bitwise(Op::MaxPool2d, attrs, {x});
        expect_bitwise(Op::MaxPool2dBackward, attrs, {x, gy});
        expect_bitwise(Op::MaxPool2dSelect, attrs, {x, g});
      }
    }
  }
}

}  // namespace contraction_test
}  // namespace
}  // namespace weft::cpu

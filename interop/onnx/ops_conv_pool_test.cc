// The Conv, ConvTranspose and pooling converters (ops/nn.cc, pool.cc): each against an
// independent loop here (PyTorch's rules), their refusals pinned.
#include <gtest/gtest.h>

#include <cmath>

#include "interop/onnx/testing/nn_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_conv_pool_test {  // this file's names, apart in its package's unity test

using nn_case::iota_f32;
using nn_case::expect_close;
using nn_case::run_ok;
using nn_case::import_error;
using nn_case::pseudo_random;

// ---------------------------------------------------------------------------
// Independent references: plain loops over NCHW (1-D as H = 1), PyTorch's rules.

/// A 2-D convolution with asymmetric pads.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* bias, std::vector<int64_t> stride,
                  std::vector<int64_t> dilation, std::vector<int64_t> pb, std::vector<int64_t> pe,
                  int64_t group) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t o = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t oh = (h + pb[0] + pe[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
  const int64_t ow = (wd + pb[1] + pe[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
  Tensor y({DType::f32, {n, o, oh, ow}});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bias ? bias->get_double(oc) : 0;
          const int64_t g = oc / (o / group);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t r = i * stride[0] - pb[0] + p * dilation[0];
                const int64_t s = j * stride[1] - pb[1] + q * dilation[1];
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                acc += x.get_double(((b * c + g * cg + ic) * h + r) * wd + s) *
                       w.get_double(((oc * cg + ic) * kh + p) * kw + q);
              }
          y.set_double(((b * o + oc) * oh + i) * ow + j, acc);
        }
  (void)c;
  return y;
}

/// A 2-D transposed convolution: every input scattered through the kernel, then the
/// begin pads cropped, the output `out` [oh, ow] long (zeros past the scattered values).
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, std::vector<int64_t> stride,
                            std::vector<int64_t> pb, std::vector<int64_t> out, int64_t group) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t og = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3], o = og * group;
  Tensor y({DType::f32, {n, o, out[0], out[1]}});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j)
          for (int64_t oc = 0; oc < og; ++oc)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t r = i * stride[0] + p - pb[0], s = j * stride[1] + q - pb[1];
                if (r < 0 || r >= out[0] || s < 0 || s >= out[1]) continue;
                const int64_t ch = ic / (c / group) * og + oc;
                const int64_t at = ((b * o + ch) * out[0] + r) * out[1] + s;
                y.set_double(at, y.get_double(at) + x.get_double(((b * c + ic) * h + i) * wd + j) *
                                                        w.get_double(((ic * og + oc) * kh + p) * kw + q));
              }
  return y;
}

/// A 2-D pool with asymmetric pads and PyTorch's ceil_mode rule; average divides by the
/// window's positions inside the input (or inside input and pads with `include_pad`).
Tensor naive_pool(const Tensor& x, bool max, std::vector<int64_t> k, std::vector<int64_t> stride,
                  std::vector<int64_t> pb, std::vector<int64_t> pe, bool ceil_mode, bool include_pad,
                  std::vector<int64_t> dilation = {1, 1}) {
  const int64_t n = x.shape()[0] * x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  auto out_size = [&](int64_t in, int a) {
    const int64_t span = in + pb[a] + pe[a] - (k[a] - 1) * dilation[a] - 1;
    int64_t o = (ceil_mode ? (span + stride[a] - 1) / stride[a] : span / stride[a]) + 1;
    if (ceil_mode && (o - 1) * stride[a] >= in + pb[a]) --o;
    return o;
  };
  const int64_t oh = out_size(h, 0), ow = out_size(wd, 1);
  Tensor y({DType::f32, {x.shape()[0], x.shape()[1], oh, ow}});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = max ? -INFINITY : 0, count = 0;
        for (int64_t p = 0; p < k[0]; ++p)
          for (int64_t q = 0; q < k[1]; ++q) {
            const int64_t r = i * stride[0] - pb[0] + p * dilation[0];
            const int64_t s = j * stride[1] - pb[1] + q * dilation[1];
            const bool in_pads = r >= -pb[0] && r < h + pe[0] && s >= -pb[1] && s < wd + pe[1];
            if (r < 0 || r >= h || s < 0 || s >= wd) {
              count += include_pad && in_pads ? 1 : 0;
              continue;
            }
            const double v = x.get_double((b * h + r) * wd + s);
            acc = max ? std::max(acc, v) : acc + v;
            count += 1;
          }
        y.set_double((b * oh + i) * ow + j, max ? acc : acc / count);
      }
  return y;
}

Tensor reshaped(Tensor t, Shape s) {
  Tensor out({t.dtype(), std::move(s)});
  for (int64_t i = 0; i < t.numel(); ++i) out.set_double(i, t.get_double(i));
  return out;
}

// ---------------------------------------------------------------------------
// Conv and ConvTranspose.

TEST(OnnxConv, AsymmetricPadsStridesGroupsDilationsAndBias) {
  OnnxBuilder b(11);
  const Tensor x = pseudo_random({1, 4, 7, 6}, 1), w = pseudo_random({6, 2, 3, 2}, 2),
               bias = pseudo_random({6}, 3);
  b.input("x", DType::f32, {1, 4, 7, 6});
  b.initializer("w", w).initializer("b", bias);
  auto& n = b.node("Conv", {"x", "w", "b"}, {"y"});
  set_attr(n, "pads", std::vector<int64_t>{2, 0, 1, 1});
  set_attr(n, "strides", std::vector<int64_t>{2, 1});
  set_attr(n, "dilations", std::vector<int64_t>{1, 2});
  set_attr(n, "group", int64_t{2});
  b.output("y", DType::f32);
  std::vector<Tensor> y = run_ok(b, {x});
  ASSERT_EQ(y.size(), 1u);
  expect_close(y[0], naive_conv(x, w, &bias, {2, 1}, {1, 2}, {2, 0}, {1, 1}, 2));
}

TEST(OnnxConv, SameLowerAndSameUpperPutTheOddPadWhereTheySay) {
  const Tensor x = pseudo_random({1, 1, 5, 5}, 4), w = pseudo_random({1, 1, 2, 2}, 5);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 1, 5, 5});
    b.initializer("w", w);
    set_attr(b.node("Conv", {"x", "w"}, {"y"}), "auto_pad", mode);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    const bool upper = std::string(mode) == "SAME_UPPER";
    const std::vector<int64_t> begin = upper ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{1, 1};
    const std::vector<int64_t> end = upper ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{0, 0};
    expect_close(y[0], naive_conv(x, w, nullptr, {1, 1}, {1, 1}, begin, end, 1));
  }
}

TEST(OnnxConv, OneDimensionalConvIsTheTwoDimensionalOneOnAUnitHeight) {
  OnnxBuilder b;
  const Tensor x = pseudo_random({2, 2, 9}, 6), w = pseudo_random({3, 2, 3}, 7);
  b.input("x", DType::f32, {2, 2, 9});
  b.initializer("w", w);
  auto& n = b.node("Conv", {"x", "w"}, {"y"});
  set_attr(n, "pads", std::vector<int64_t>{1, 2});
  set_attr(n, "strides", std::vector<int64_t>{2});
  b.output("y", DType::f32);
  std::vector<Tensor> y = run_ok(b, {x});
  ASSERT_EQ(y.size(), 1u);
  Tensor want = naive_conv(reshaped(x, {2, 2, 1, 9}), reshaped(w, {3, 2, 1, 3}), nullptr, {1, 2},
                           {1, 1}, {0, 1}, {0, 2}, 1);
  expect_close(y[0], reshaped(want, {2, 3, want.shape()[3]}));
}

TEST(OnnxConvTranspose, AsymmetricPadsOutputPaddingAtLeastTheStrideAndGroups) {
  OnnxBuilder b;
  const Tensor x = pseudo_random({1, 4, 3, 4}, 8), w = pseudo_random({4, 1, 3, 2}, 9),
               bias = pseudo_random({2}, 10);
  b.input("x", DType::f32, {1, 4, 3, 4});
  b.initializer("w", w).initializer("b", bias);
  auto& n = b.node("ConvTranspose", {"x", "w", "b"}, {"y"});
  set_attr(n, "strides", std::vector<int64_t>{2, 1});
  set_attr(n, "pads", std::vector<int64_t>{1, 0, 0, 1});
  set_attr(n, "output_padding", std::vector<int64_t>{1, 2});  // 2 >= stride 1: zeros
  set_attr(n, "group", int64_t{2});
  b.output("y", DType::f32);
  std::vector<Tensor> y = run_ok(b, {x});
  ASSERT_EQ(y.size(), 1u);
  // H: (3-1)·2 + 3 - 1 - 0 + 1 = 7; W: (4-1)·1 + 2 - 0 - 1 + 2 = 6.
  Tensor want = naive_conv_transpose(x, w, {2, 1}, {1, 0}, {7, 6}, 2);
  for (int64_t i = 0; i < want.numel(); ++i) {
    want.set_double(i, want.get_double(i) + bias.get_double(i / 42 % 2));
  }
  expect_close(y[0], want);
}

TEST(OnnxConvTranspose, OutputShapeLongerThanTheScatterIsExtendedAtTheEnd) {
  OnnxBuilder b;
  const Tensor x = pseudo_random({1, 1, 3, 3}, 11), w = pseudo_random({1, 2, 3, 3}, 12);
  b.input("x", DType::f32, {1, 1, 3, 3});
  b.initializer("w", w);
  auto& n = b.node("ConvTranspose", {"x", "w"}, {"y"});
  set_attr(n, "strides", std::vector<int64_t>{3, 2});
  set_attr(n, "output_shape", std::vector<int64_t>{10, 6});  // H: 9 + 1 zero row; W: 7 - 1
  b.output("y", DType::f32);
  std::vector<Tensor> y = run_ok(b, {x});
  ASSERT_EQ(y.size(), 1u);
  // W: total padding 7 - 6 = 1, at the end (NOTSET puts the larger half first: 1 - 0).
  expect_close(y[0], naive_conv_transpose(x, w, {3, 2}, {0, 1}, {10, 6}, 1));
}

// ---------------------------------------------------------------------------
// Pools.

struct PoolCase {
  const char* op;
  std::vector<int64_t> kernel, strides, pads;
  int64_t ceil_mode, count_include_pad;
  std::vector<int64_t> dilations = {1, 1};
};

TEST(OnnxPool, TwoDimensionalPoolsAgainstPlainLoops) {
  const Tensor x = pseudo_random({1, 2, 6, 7}, 13);
  const PoolCase cases[] = {
      {"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},   // the pool op's own padding
      {"MaxPool", {3, 2}, {2, 2}, {0, 1, 2, 0}, 1, 0},   // asymmetric, ceil
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1},
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},  // pads not counted
      {"AveragePool", {2, 3}, {2, 2}, {0, 2, 1, 0}, 1, 1},  // asymmetric, ceil, counted
      {"AveragePool", {2, 3}, {3, 2}, {1, 0, 1, 2}, 1, 0},
      {"AveragePool", {4, 4}, {1, 1}, {3, 3, 3, 3}, 0, 1},  // pads over half the kernel
      {"MaxPool", {2, 3}, {1, 2}, {1, 0, 0, 1}, 0, 0, {2, 2}},  // dilated: strided slices
      {"MaxPool", {2, 2}, {2, 2}, {0, 1, 0, 0}, 1, 0, {3, 1}},
  };
  for (const PoolCase& c : cases) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 6, 7});
    auto& n = b.node(c.op, {"x"}, {"y"});
    set_attr(n, "kernel_shape", c.kernel);
    set_attr(n, "strides", c.strides);
    set_attr(n, "pads", c.pads);
    set_attr(n, "ceil_mode", c.ceil_mode);
    if (std::string(c.op) == "AveragePool") set_attr(n, "count_include_pad", c.count_include_pad);
    if (c.dilations != std::vector<int64_t>{1, 1}) set_attr(n, "dilations", c.dilations);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    SCOPED_TRACE(std::string(c.op) + " pads " + Shape(c.pads).to_string());
    expect_close(y[0], naive_pool(x, std::string(c.op) == "MaxPool", c.kernel, c.strides,
                                  {c.pads[0], c.pads[1]}, {c.pads[2], c.pads[3]}, c.ceil_mode != 0,
                                  c.count_include_pad != 0, c.dilations));
  }
}

TEST(OnnxPool, OneAndThreeDimensionalPools) {
  {  // 1-D: the 2-D pool on a unit height.
    const Tensor x = pseudo_random({2, 1, 9}, 14);
    OnnxBuilder b;
    b.input("x", DType::f32, {2, 1, 9});
    auto& n = b.node("AveragePool", {"x"}, {"y"});
    set_attr(n, "kernel_shape", std::vector<int64_t>{3});
    set_attr(n, "strides", std::vector<int64_t>{2});
    set_attr(n, "pads", std::vector<int64_t>{2, 1});
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    Tensor want = naive_pool(reshaped(x, {2, 1, 1, 9}), false, {1, 3}, {1, 2}, {0, 2}, {0, 1}, false, false);
    expect_close(y[0], reshaped(want, {2, 1, want.shape()[3]}));
  }
  // 3-D, asymmetric pads and ceil_mode: separable, against a 3-D loop (average: over the
  // positions inside the input).
  const Tensor x = pseudo_random({1, 1, 4, 3, 5}, 15);
  const std::vector<int64_t> k = {2, 2, 3}, st = {2, 1, 2}, pb = {1, 0, 0}, pe = {0, 1, 2};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    const bool max = std::string(op) == "MaxPool";
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 1, 4, 3, 5});
    auto& n = b.node(op, {"x"}, {"y"});
    set_attr(n, "kernel_shape", k);
    set_attr(n, "pads", std::vector<int64_t>{1, 0, 0, 0, 1, 2});
    set_attr(n, "strides", st);
    set_attr(n, "ceil_mode", int64_t{1});
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    // D: ceil((4+1-2)/2)+1 = 3, H: (3+1-2)/1+1 = 3, W: ceil((5+2-3)/2)+1 = 3.
    const int64_t in[3] = {4, 3, 5};
    Tensor want({DType::f32, {1, 1, 3, 3, 3}});
    for (int64_t d = 0; d < 3; ++d)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 3; ++w) {
          double m = -INFINITY, sum = 0, count = 0;
          for (int64_t a = 0; a < k[0]; ++a)
            for (int64_t c = 0; c < k[1]; ++c)
              for (int64_t e = 0; e < k[2]; ++e) {
                const int64_t i = d * st[0] - pb[0] + a, j = h * st[1] - pb[1] + c, l = w * st[2] - pb[2] + e;
                if (i < 0 || i >= in[0] || j < 0 || j >= in[1] || l < 0 || l >= in[2]) continue;
                const double v = x.get_double((i * 3 + j) * 5 + l);
                m = std::max(m, v);
                sum += v;
                count += 1;
              }
          want.set_double((d * 3 + h) * 3 + w, max ? m : sum / count);
        }
    SCOPED_TRACE(op);
    expect_close(y[0], want);
  }
}

TEST(OnnxPool, GlobalPoolsReduceTheSpatialDims) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 2, 2});
    b.node(op, {"x"}, {"y"});
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {iota_f32({1, 2, 2, 2})});
    ASSERT_EQ(y.size(), 1u);
    const bool avg = std::string(op) == "GlobalAveragePool";
    EXPECT_EQ(y[0], f32({1, 2, 1, 1}, avg ? std::vector<float>{1.5, 5.5} : std::vector<float>{3, 7}));
  }
}

TEST(OnnxPool, RefusalsArePinned) {
  auto refusal = [](const char* op, auto&& set, int64_t kernel = 2) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 1, 5, 5});
    const bool max = std::string(op) == "MaxPool";  // with the Indices output, read
    auto& n = b.node(op, {"x"}, max ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"}, "p");
    set_attr(n, "kernel_shape", std::vector<int64_t>{kernel, kernel});
    set(n);
    b.output("y", DType::f32);
    if (max) b.output("i", DType::i64);
    return import_error(b);
  };
  EXPECT_EQ(refusal("MaxPool", [](auto&) {}),
            "test.onnx: the model's output 'i' is output 1 of node 'p' (MaxPool, opset 17), which weft "
            "does not compute");
  EXPECT_EQ(refusal("LpPool", [](auto&) {}),
            "node 'p' (LpPool, opset 17): Lp pooling (weft has no p-norm pool op) is not supported");
  EXPECT_EQ(refusal("AveragePool", [](auto& n) { set_attr(n, "auto_pad", "SAME"); }),
            "node 'p' (AveragePool, opset 17): auto_pad 'SAME' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  EXPECT_EQ(refusal("AveragePool", [](auto& n) { set_attr(n, "pads", std::vector<int64_t>{1, 1}); }),
            "node 'p' (AveragePool, opset 17): attribute 'pads' has 2 entries, expected 4");
  EXPECT_EQ(refusal("AveragePool", [](auto&) {}, 7),
            "node 'p' (AveragePool, opset 17): the window [7,7] is larger than the padded input f32[1,1,5,5]");
}

TEST(OnnxPool, MaxPoolNamingItsIndicesWithoutReadingThemImports) {
  OnnxBuilder b;
  b.input("x", DType::f32, {1, 1, 2, 2});
  set_attr(b.node("MaxPool", {"x"}, {"y", "unused_indices"}, "p"), "kernel_shape", std::vector<int64_t>{2, 2});
  b.output("y", DType::f32);
  std::vector<Tensor> y = run_ok(b, {iota_f32({1, 1, 2, 2})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0], f32({1, 1, 1, 1}, {3}));
}

}  // namespace ops_conv_pool_test
}  // namespace
}  // namespace weft::onnx_io

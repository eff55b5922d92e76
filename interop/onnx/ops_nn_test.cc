// The nn converters (ops/nn.cc, pool.cc, norm.cc, loss.cc): each against numbers worked
// out by hand or by an independent loop here, their refusals pinned, BatchNormalization
// trained in a flow, and ONNX's own backend test data for these ops (per-op pass counts
// printed; the cases known to pass are required to).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "frontend/flow.h"
#include "frontend/testing/gradcheck.h"
#include "frontend/testing/run_model.h"
#include "interop/onnx/importer.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {
namespace {
namespace ops_nn_test {  // this file's names, apart in its package's unity test

namespace fs = std::filesystem;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

Tensor iota_f32(Shape s, double start = 0, double step = 1) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<double>(i);
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}

/// Whether `got` matches `want` within ONNX's backend tolerances (rtol 1e-3, atol 1e-5).
bool close(const Tensor& got, const Tensor& want, std::string* why) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    *why = "got " + got.type().to_string() + ", want " + want.type().to_string();
    return false;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!(std::abs(g - w) <= 1e-5 + 1e-3 * std::abs(w))) {
      *why = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
      return false;
    }
  }
  return true;
}

void expect_close(const Tensor& got, const Tensor& want) {
  std::string why;
  EXPECT_TRUE(close(got, want, &why)) << why;
}

/// The outputs of a one-node model run on `inputs` (inference unless `training`).
std::vector<Tensor> run_ok(const OnnxBuilder& b, std::vector<Tensor> inputs, bool training = false) {
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), std::move(inputs), {}, training);
  EXPECT_TRUE(y.ok()) << y.error().to_string();
  return y.ok() ? *y : std::vector<Tensor>{};
}

/// Writes the model to the test's temporary folder as `name`; returns its path.
std::string save(const OnnxBuilder& b, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::string bytes;
  EXPECT_TRUE(b.model().SerializeToString(&bytes));
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

std::string import_error(const OnnxBuilder& b, bool training = false) {
  StatusOr<ImportedGraph> g = import_onnx(b.file(), {}, training);
  return g.ok() ? "imported" : g.error().message;
}

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

Tensor pseudo_random(Shape s, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  uint32_t state = seed;
  for (double& d : v) {
    state = state * 1664525u + 1013904223u;
    d = static_cast<double>(state >> 8) / static_cast<double>(1u << 24) * 2 - 1;
  }
  return Tensor::from_doubles(DType::f32, std::move(s), v);
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

// ---------------------------------------------------------------------------
// Normalization and dropout.

/// A BatchNormalization model: x [2, 2, 2] and its four [2] initializers.
OnnxBuilder batch_norm_model(int opset, std::vector<std::string> outputs = {"y"}) {
  OnnxBuilder b(opset);
  b.input("x", DType::f32, {2, 2, 2});
  b.initializer("scale", f32({2}, {2, 1})).initializer("bias", f32({2}, {1, 0}));
  b.initializer("mean", f32({2}, {1, -1})).initializer("var", f32({2}, {4, 0.25}));
  b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, outputs, "bn");
  for (const std::string& o : outputs) b.output(o, DType::f32);
  return b;
}

// x per channel: c0 = {0, 1, 4, 5}, c1 = {2, 3, 6, 7}.
const std::vector<float> kBnInput = {0, 1, 2, 3, 4, 5, 6, 7};

TEST(OnnxNorm, BatchNormalizationUsesTheRunningStatisticsForInference) {
  for (int opset : {7, 9, 15}) {
    std::vector<Tensor> y = run_ok(batch_norm_model(opset), {f32({2, 2, 2}, kBnInput)});
    ASSERT_EQ(y.size(), 1u);
    // c0: (x - 1) / sqrt(4 + 1e-5) · 2 + 1; c1: (x + 1) / sqrt(0.25 + 1e-5).
    std::vector<float> want(8);
    for (int i = 0; i < 8; ++i) {
      const bool c0 = (i / 2) % 2 == 0;
      want[i] = static_cast<float>(c0 ? (kBnInput[i] - 1) / std::sqrt(4 + 1e-5) * 2 + 1
                                      : (kBnInput[i] + 1) / std::sqrt(0.25 + 1e-5));
    }
    expect_close(y[0], f32({2, 2, 2}, want));
  }
}

TEST(OnnxNorm, BatchNormalizationTrainingModeOutputsOnnxsRunningStatistics) {
  // Opset 15 says training_mode = 1; opset 9 names the five outputs of its training mode
  // (torch.onnx.export's training export): the model reads saved_var nowhere, and
  // saved_mean is the batch mean.
  OnnxBuilder b15 = batch_norm_model(15, {"y", "running_mean", "running_var"});
  set_attr(*b15.model().mutable_graph()->mutable_node(0), "training_mode", int64_t{1});
  OnnxBuilder b9 = batch_norm_model(9, {"y", "running_mean", "running_var", "saved_mean", "saved_var"});
  b9.model().mutable_graph()->mutable_output()->RemoveLast();
  for (OnnxBuilder* b : {&b15, &b9}) {
    set_attr(*b->model().mutable_graph()->mutable_node(0), "momentum", 0.75);
    std::vector<Tensor> y = run_ok(*b, {f32({2, 2, 2}, kBnInput)});
    ASSERT_EQ(y.size(), b == &b9 ? 4u : 3u);
    if (b == &b9) expect_close(y[3], f32({2}, {2.5, 4.5}));
    // Batch: mean {2.5, 4.5}, biased var {4.25, 4.25}; ONNX: 0.75·running + 0.25·batch.
    expect_close(y[1], f32({2}, {0.75 * 1 + 0.25 * 2.5, 0.75 * -1 + 0.25 * 4.5}));
    expect_close(y[2], f32({2}, {0.75 * 4 + 0.25 * 4.25, 0.75 * 0.25 + 0.25 * 4.25}));
    const double inv = 1 / std::sqrt(4.25 + 1e-5);
    expect_close(y[0], f32({2, 2, 2}, {static_cast<float>(-2.5 * inv * 2 + 1), static_cast<float>(-1.5 * inv * 2 + 1),
                                       static_cast<float>(-2.5 * inv), static_cast<float>(-1.5 * inv),
                                       static_cast<float>(1.5 * inv * 2 + 1), static_cast<float>(2.5 * inv * 2 + 1),
                                       static_cast<float>(1.5 * inv), static_cast<float>(2.5 * inv)}));
  }
}

TEST(OnnxNorm, BatchNormalizationTrainedInAFlowAssignsTheRunningStatistics) {
  OnnxBuilder b = batch_norm_model(9);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "momentum", 0.75);
  StatusOr<Model> m = FlowBuilder::from(OnnxModel(save(b, "bn.onnx"))).build({{"x", Type{DType::f32, {2, 2, 2}}}},
                                                               BuildOptions{.training = true});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // The running statistics are state, never trained; scale and bias are parameters.
  std::map<std::string, InputKind> kinds;
  for (const ParamInfo& p : m->parameters()) kinds[p.name] = p.kind;
  EXPECT_EQ(kinds["0.mean"], InputKind::state);
  EXPECT_EQ(kinds["0.var"], InputKind::state);
  EXPECT_EQ(kinds["0.scale"], InputKind::param);
  StatusOr<testing::ModelRun> r = testing::run_model(
      *m, {f32({2, 2, 2}, kBnInput)},
      {{"0.scale", f32({2}, {2, 1})}, {"0.bias", f32({2}, {1, 0})},
       {"0.mean", f32({2}, {1, -1})}, {"0.var", f32({2}, {4, 0.25})}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // The batch statistics normalize: channel 1 is {2, 3, 6, 7} - 4.5 over sqrt(4.25).
  const double inv = 1 / std::sqrt(4.25 + 1e-5);
  EXPECT_NEAR(r->outputs[0].get_double(2), -2.5 * inv, 1e-5);
  // PyTorch's update with momentum 1 - 0.75: the variance's from the unbiased one (17/3).
  expect_close(r->updated.at("0.mean"), f32({2}, {0.75 * 1 + 0.25 * 2.5, 0.75 * -1 + 0.25 * 4.5}));
  expect_close(r->updated.at("0.var"),
               f32({2}, {static_cast<float>(0.75 * 4 + 0.25 * 17 / 3.0), static_cast<float>(0.75 * 0.25 + 0.25 * 17 / 3.0)}));
}

TEST(OnnxNorm, BatchNormalizationRefusalsArePinned) {
  OnnxBuilder b = batch_norm_model(6);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "spatial", int64_t{0});
  EXPECT_EQ(import_error(b),
            "node 'bn' (BatchNormalization, opset 6): spatial = 0 (statistics per activation) is not supported");
  b = batch_norm_model(9, {"y", "m", "v", "sm", "sv"});
  EXPECT_EQ(import_error(b, /*training=*/true),
            "test.onnx: the model's output 'sv' is output 4 of node 'bn' (BatchNormalization, "
            "opset 9), which weft does not compute");
  b = batch_norm_model(15, {"y", "m"});
  // Outside training the running statistics' outputs are not computed: refused where read.
  EXPECT_EQ(import_error(b),
            "test.onnx: the model's output 'm' is output 1 of node 'bn' (BatchNormalization, "
            "opset 15), which weft does not compute");
  OnnxBuilder fed(15);  // the running statistics fed as data, not initializers
  fed.input("x", DType::f32, {2, 2});
  for (const char* name : {"s", "b", "m", "v"}) fed.input(name, DType::f32, {2});
  fed.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
  fed.output("y", DType::f32);
  EXPECT_EQ(import_error(fed, /*training=*/true),
            "node 'bn' (BatchNormalization, opset 15): training with a running mean or variance that is "
            "not an initializer (weft updates them as state) is not supported");
  EXPECT_EQ(import_error(fed), "imported");
  OnnxBuilder one(15);
  one.input("x", DType::f32, {1, 2});
  for (const char* name : {"s", "b", "m", "v"}) one.initializer(name, f32({2}, {1, 1}));
  one.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
  one.output("y", DType::f32);
  EXPECT_EQ(import_error(one, /*training=*/true),
            "node 'bn' (BatchNormalization, opset 15): training needs more than one value per channel "
            "to compute the batch variance, got f32[1,2]");
}

TEST(OnnxNorm, InstanceLayerAndMeanVarianceNormalization) {
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 0, 0, 6});
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    b.initializer("s", f32({2}, {2, 1})).initializer("b", f32({2}, {0, 1}));
    set_attr(b.node("InstanceNormalization", {"x", "s", "b"}, {"y"}), "epsilon", 0.0);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    // c0: mean 2, var 2/3; c1: mean 2, var 8.
    const double a = 1 / std::sqrt(2 / 3.0), c = 1 / std::sqrt(8.0);
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-2 * a), 0, static_cast<float>(2 * a),
                                       static_cast<float>(1 - 2 * c), static_cast<float>(1 - 2 * c),
                                       static_cast<float>(1 + 4 * c)}));
  }
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    b.initializer("s", f32({3}, {1, 2, 3}));
    auto& n = b.node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv_std"});
    set_attr(n, "epsilon", 0.0);
    b.output("y", DType::f32).output("mean", DType::f32).output("inv_std", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 3u);
    const double a = 1 / std::sqrt(2 / 3.0), c = 1 / std::sqrt(8.0);
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-a), 0, static_cast<float>(3 * a),
                                       static_cast<float>(-2 * c), static_cast<float>(-4 * c),
                                       static_cast<float>(12 * c)}));
    expect_close(y[1], f32({1, 2, 1}, {2, 2}));
    expect_close(y[2], f32({1, 2, 1}, {static_cast<float>(a), static_cast<float>(c)}));
  }
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    set_attr(b.node("MeanVarianceNormalization", {"x"}, {"y"}), "axes", std::vector<int64_t>{2});
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    const double a = std::sqrt(2 / 3.0) + 1e-9, c = std::sqrt(8.0) + 1e-9;
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-1 / a), 0, static_cast<float>(1 / a),
                                       static_cast<float>(-2 / c), static_cast<float>(-2 / c),
                                       static_cast<float>(4 / c)}));
  }
}

TEST(OnnxNorm, LayerNormalizationStatisticsAreFloatForADoubleInput) {
  OnnxBuilder b;
  b.input("x", DType::f64, {2, 2});
  b.initializer("s", Tensor::from_vector<double>({2}, {1, 1}));
  b.node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv_std"});
  b.output("y", DType::f64).output("mean", DType::f32).output("inv_std", DType::f32);
  std::vector<Tensor> y = run_ok(b, {Tensor::from_vector<double>({2, 2}, {1, 3, 0, 0})});
  ASSERT_EQ(y.size(), 3u);
  expect_close(y[0], Tensor::from_vector<double>({2, 2}, {-1 / std::sqrt(1 + 1e-5), 1 / std::sqrt(1 + 1e-5), 0, 0}));
  expect_close(y[1], f32({2, 1}, {2, 0}));
  expect_close(y[2], f32({2, 1}, {static_cast<float>(1 / std::sqrt(1 + 1e-5)), static_cast<float>(1 / std::sqrt(1e-5))}));
}

TEST(OnnxNorm, LrnSumsSquaresOverTheChannelWindow) {
  const Tensor x = pseudo_random({1, 5, 2, 1}, 16);
  for (int64_t size : {2, 3}) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 5, 2, 1});
    auto& n = b.node("LRN", {"x"}, {"y"});
    set_attr(n, "size", size);
    set_attr(n, "alpha", 0.5);
    set_attr(n, "beta", 0.75);
    set_attr(n, "bias", 2.0);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    Tensor want({DType::f32, {1, 5, 2, 1}});
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t h = 0; h < 2; ++h) {
        double sq = 0;
        for (int64_t j = c - (size - 1) / 2; j <= c + size / 2; ++j) {
          if (j >= 0 && j < 5) sq += std::pow(x.get_double(j * 2 + h), 2);
        }
        want.set_double(c * 2 + h, x.get_double(c * 2 + h) / std::pow(2 + 0.5 / size * sq, 0.75));
      }
    expect_close(y[0], want);
  }
}

TEST(OnnxNorm, LayerNormalizationRefusesAnotherStashType) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2, 3});
  b.initializer("s", f32({3}, {1, 1, 1}));
  set_attr(b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln"), "stash_type", int64_t{10});
  b.output("y", DType::f32);
  EXPECT_EQ(import_error(b), "node 'ln' (LayerNormalization, opset 17): stash_type 10 (weft has "
                             "1, float, and 11, double) is not supported");
}

TEST(OnnxNorm, LayerNormalizationInAnotherStashType) {
  // f64 input, f32 statistics (stash_type 1): normalized in f32, scaled in f64.
  OnnxBuilder b;
  b.input("x", DType::f64, {1, 3});
  b.initializer("s", Tensor::from_vector<double>({3}, {1, 2, 3}));
  b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
  b.output("y", DType::f64);
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {Tensor::from_vector<double>({1, 3}, {1, 2, 4})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  const std::vector<float> xs = {1, 2, 4};
  const float mean = (xs[0] + xs[1] + xs[2]) / 3;
  float var = 0;
  for (float v : xs) var += (v - mean) * (v - mean) / 3;
  for (int i = 0; i < 3; ++i) {
    const float unit = (xs[i] - mean) / std::sqrt(var + 1e-5f);
    EXPECT_NEAR((*y)[0].get_double(i), static_cast<double>(unit) * (i + 1), 1e-6) << i;
  }
}

TEST(OnnxDropout, IdentityForInferenceWithAnAllTrueMask) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 2});
  b.input("ratio", DType::f32, {});  // fed at run time: it does not matter here
  b.node("Dropout", {"x", "ratio"}, {"y", "mask"});
  b.output("y", DType::f32).output("mask", DType::boolean);
  std::vector<Tensor> y = run_ok(b, {f32({2, 2}, {1, 2, 3, 4}), Tensor::scalar(DType::f32, 0.3)});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0], f32({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(y[1], Tensor::from_vector<bool>({2, 2}, {true, true, true, true}));
}

TEST(OnnxDropout, TrainingDropsAndScalesTheRestAsTheModuleDoes) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {64, 64});
  b.initializer("ratio", Tensor::scalar(DType::f32, 0.25));
  b.node("Dropout", {"x", "ratio"}, {"y", "mask"});
  b.output("y", DType::f32).output("mask", DType::boolean);
  Tensor x({DType::f32, {64, 64}});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, 3);
  std::vector<Tensor> y = run_ok(b, {x}, /*training=*/true);
  ASSERT_EQ(y.size(), 2u);
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = y[1].get_double(i) != 0;
    kept += keep;
    EXPECT_NEAR(y[0].get_double(i), keep ? 4.0 : 0.0, 1e-6);  // 3 / (1 - 0.25)
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(x.numel()), 0.75, 0.03);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "seed", 1.0);
  EXPECT_EQ(import_error(b, /*training=*/true),
            "node '#0' (Dropout, opset 13): a seed in training (weft draws from the graph's Philox "
            "stream) is not supported");
}

// ---------------------------------------------------------------------------
// Losses.

TEST(OnnxLoss, NegativeLogLikelihoodWithWeightAndIgnoreIndex) {
  // x [2, 3, 2] log-probabilities (any numbers do), target [2, 2].
  const Tensor x = iota_f32({2, 3, 2}, -1, -0.5);
  const Tensor target = Tensor::from_vector<int64_t>({2, 2}, {0, 2, 1, 1});
  const Tensor weight = f32({3}, {1, 2, 0.5});
  auto x_at = [&](int64_t n, int64_t c, int64_t d) { return x.get_double((n * 3 + c) * 2 + d); };
  for (const char* reduction : {"none", "sum", "mean"}) {
    OnnxBuilder b(13);
    b.input("x", DType::f32, {2, 3, 2});
    b.input("t", DType::i64, {2, 2});
    b.initializer("w", weight);
    auto& n = b.node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"});
    set_attr(n, "reduction", reduction);
    set_attr(n, "ignore_index", int64_t{2});
    b.output("loss", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x, target});
    ASSERT_EQ(y.size(), 1u);
    // Kept: (0,0) class 0 weight 1, (1,0) and (1,1) class 1 weight 2; (0,1) ignored.
    const double l00 = -x_at(0, 0, 0), l10 = -2 * x_at(1, 1, 0), l11 = -2 * x_at(1, 1, 1);
    const std::string r = reduction;
    if (r == "none") {
      expect_close(y[0], f32({2, 2}, {static_cast<float>(l00), 0, static_cast<float>(l10), static_cast<float>(l11)}));
    } else {
      const double sum = l00 + l10 + l11;
      expect_close(y[0], Tensor::scalar(DType::f32, r == "sum" ? sum : sum / 5));
    }
  }
}

TEST(OnnxLoss, SoftmaxCrossEntropyIsTheNllOfLogSoftmax) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3});
  b.input("t", DType::i64, {2});
  b.node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "log_prob"});
  b.output("loss", DType::f32).output("log_prob", DType::f32);
  std::vector<Tensor> y = run_ok(b, {f32({2, 3}, {1, 2, 3, 0, 0, 0}), Tensor::from_vector<int64_t>({2}, {2, 0})});
  ASSERT_EQ(y.size(), 2u);
  const double lse = std::log(std::exp(1) + std::exp(2) + std::exp(3));
  expect_close(y[1], f32({2, 3}, {static_cast<float>(1 - lse), static_cast<float>(2 - lse),
                                  static_cast<float>(3 - lse), static_cast<float>(-std::log(3)),
                                  static_cast<float>(-std::log(3)), static_cast<float>(-std::log(3))}));
  expect_close(y[0], Tensor::scalar(DType::f32, ((lse - 3) + std::log(3)) / 2));
}

TEST(OnnxLoss, ErrorsArePinned) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3});
  b.input("t", DType::i64, {3});
  b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
  b.output("loss", DType::f32);
  EXPECT_EQ(import_error(b), "node 'nll' (NegativeLogLikelihoodLoss, opset 13): the target i64[3] must be "
                             "the input's shape without the class axis, [2]");
}

// ---------------------------------------------------------------------------
// Trained in weft: what the converters emit is differentiable like any graph.

Tensor as_f64(const Tensor& t) { return Tensor::from_doubles(DType::f64, t.shape(), t.to_doubles()); }

TEST(OnnxNnTraining, GradientsThroughEveryConverterMatchFiniteDifferences) {
  // Conv (asymmetric pads) -> BatchNormalization (batch statistics) -> MaxPool (dilated,
  // ceil) -> AveragePool (pads not counted) -> ConvTranspose (asymmetric, output_padding)
  // -> InstanceNormalization -> LRN -> LayerNormalization, in f64.
  OnnxBuilder b(17);
  b.input("x", DType::f64, {2, 2, 7, 7});
  b.initializer("w", as_f64(pseudo_random({3, 2, 3, 2}, 20))).initializer("cb", as_f64(pseudo_random({3}, 21)));
  b.initializer("bn_s", as_f64(pseudo_random({3}, 22))).initializer("bn_b", as_f64(pseudo_random({3}, 23)));
  b.initializer("bn_m", as_f64(f32({3}, {0, 0, 0}))).initializer("bn_v", as_f64(f32({3}, {1, 1, 1})));
  b.initializer("tw", as_f64(pseudo_random({3, 2, 2, 2}, 24)));
  b.initializer("in_s", as_f64(pseudo_random({2}, 25))).initializer("in_b", as_f64(pseudo_random({2}, 26)));
  b.initializer("ln_s", as_f64(pseudo_random({11}, 27)));
  auto& conv = b.node("Conv", {"x", "w", "cb"}, {"c"});
  set_attr(conv, "pads", std::vector<int64_t>{1, 0, 0, 1});
  b.node("BatchNormalization", {"c", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"});
  auto& mp = b.node("MaxPool", {"bn"}, {"mp"});
  set_attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  set_attr(mp, "dilations", std::vector<int64_t>{2, 1});
  set_attr(mp, "ceil_mode", int64_t{1});
  auto& ap = b.node("AveragePool", {"mp"}, {"ap"});
  set_attr(ap, "kernel_shape", std::vector<int64_t>{2, 2});
  set_attr(ap, "pads", std::vector<int64_t>{1, 0, 0, 1});
  auto& ct = b.node("ConvTranspose", {"ap", "tw"}, {"ct"});
  set_attr(ct, "strides", std::vector<int64_t>{2, 2});
  set_attr(ct, "pads", std::vector<int64_t>{1, 0, 0, 1});
  set_attr(ct, "output_padding", std::vector<int64_t>{1, 0});
  b.node("InstanceNormalization", {"ct", "in_s", "in_b"}, {"in"});
  set_attr(b.node("LRN", {"in"}, {"lrn"}), "size", int64_t{2});
  onnx::NodeProto& ln = b.node("LayerNormalization", {"lrn", "ln_s"}, {"y"});
  set_attr(ln, "axis", int64_t{-1});
  set_attr(ln, "stash_type", int64_t{11});  // statistics in f64 too (the default is f32)
  b.output("y", DType::f64);
  StatusOr<Model> m = FlowBuilder::from(OnnxModel(save(b, "trained.onnx")))
                          .build({{"x", Type{DType::f64, {2, 2, 7, 7}}}}, BuildOptions{.training = true});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // H 7 -> conv 6 -> max 4 -> avg 4 -> transposed 3·2+2-1+1 = 8; W 7 -> 7 -> 6 -> 6 -> 5·2+2-1 = 11.
  EXPECT_EQ(m->graph().type(m->graph().outputs()[0]).to_string(), "f64[2,2,8,11]");
  testing::expect_gradients_match_finite_differences(*m, as_f64(pseudo_random({2, 2, 7, 7}, 28)), 1e-5);
}

// ---------------------------------------------------------------------------
// Every other error of these converters, pinned.

struct ErrorCase {
  const char* op;
  int opset;
  Type x;                          ///< The graph input, the node's first input.
  std::vector<Tensor> more;        ///< The node's other inputs, as initializers.
  std::function<void(onnx::NodeProto&)> attrs;
  const char* message;             ///< After "node 'n' (OP, opset N): ".
  bool training = false;
};

Tensor zeros(Type t) { return Tensor(std::move(t)); }

TEST(OnnxNnErrors, EachMessageIsPinned) {
  using Ints = std::vector<int64_t>;
  const Type x4{DType::f32, {1, 2, 4, 4}};
  const Tensor w4 = zeros({DType::f32, {2, 2, 3, 3}});
  auto none = [](onnx::NodeProto&) {};
  const std::vector<ErrorCase> cases = {
      {"Conv", 17, {DType::f32, {1, 1, 2, 2, 2, 2}}, {zeros({DType::f32, {1, 1, 1, 1, 1, 1}})}, none,
       "an input of rank 6 (weft convolves over 1 to 3 spatial dims) is not supported"},
      {"Conv", 17, x4, {zeros({DType::f32, {2, 2, 3}})}, none, "the weight [2,2,3] must have the input's rank 4"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2, 2}); },
       "kernel_shape [2,2] disagrees with the weight [2,2,3,3]"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "group", int64_t{0}); }, "group must be >= 1"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "strides", Ints{1}); },
       "attribute 'strides' has 1 entries, expected 2"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "pads", Ints{0, -1, 0, 0}); },
       "attribute 'pads' with an entry below 0 is not supported"},
      {"Conv", 17, x4, {w4},
       [](auto& n) {
         set_attr(n, "auto_pad", "SAME_UPPER");
         set_attr(n, "pads", Ints{1, 1, 1, 1});
       },
       "auto_pad SAME_UPPER and pads are given together"},
      {"ConvTranspose", 17, x4, {zeros({DType::f32, {3, 1, 2, 2}})}, none,
       "the weight [3,1,2,2] must be [C_in, C_out/group, *kernel] for the input [1,2,4,4] and group 1"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "output_shape", Ints{9}); },
       "output_shape needs one entry per spatial dim"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "pads", Ints{3, 0, 3, 0}); },
       "the output would be empty on spatial axis 0"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "output_padding", Ints{1}); },
       "attribute 'output_padding' has 1 entries, expected 2"},
      {"MaxPool", 17, {DType::f32, {2, 3}}, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2}); },
       "an input of rank 2 (weft pools over 1 to 3 spatial dims) is not supported"},
      {"MaxPool", 17, x4, {}, none, "kernel_shape is required"},
      {"MaxPool", 17, x4, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2}); },
       "kernel_shape [2] needs one entry per spatial dim of f32[1,2,4,4]"},
      {"AveragePool", 17, x4, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{0, 2}); },
       "the kernel's sizes must be >= 1"},
      {"GlobalMaxPool", 17, {DType::f32, {2, 3}}, {}, none, "the input must be [N, C, *spatial], got f32[2,3]"},
      {"BatchNormalization", 15, {DType::f32, {2}}, {}, none, "the input must be [N, C, ...], got f32[2]"},
      {"BatchNormalization", 15, {DType::f32, {2, 2}},
       {zeros({DType::f32, {2}}), zeros({DType::f32, {2}}), zeros({DType::f32, {3}}), zeros({DType::f32, {2}})},
       none, "scale, B, mean and var must be [2], got f32[3]"},
      {"InstanceNormalization", 17, {DType::f32, {2, 2}}, {zeros({DType::f32, {2}}), zeros({DType::f32, {2}})},
       none, "the input must be [N, C, *spatial], got f32[2,2]"},
      {"LayerNormalization", 17, {DType::f32, {2, 3}}, {zeros({DType::f32, {3}})},
       [](auto& n) { set_attr(n, "axis", int64_t{2}); }, "axis 2 is outside f32[2,3]"},
      {"LRN", 17, x4, {}, none, "size is required"},
      {"LRN", 17, x4, {}, [](auto& n) { set_attr(n, "size", int64_t{0}); }, "size must be >= 1"},
      {"LRN", 17, {DType::f32, {3}}, {}, [](auto& n) { set_attr(n, "size", int64_t{1}); },
       "the input must be [N, C, ...], got f32[3]"},
      {"Dropout", 10, x4, {}, [](auto& n) { set_attr(n, "ratio", 1.0); }, "the ratio must be in [0, 1), got 1.0",
       /*training=*/true},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {3}}, {zeros({DType::i64, {3}})}, none,
       "the input must be [N, C, ...], got f32[3]"},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::f32, {2}})}, none,
       "the target must hold class indices, got f32[2]"},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::i64, {2}})},
       [](auto& n) { set_attr(n, "reduction", "avg"); }, "reduction 'avg' is not none, sum or mean"},
      {"SoftmaxCrossEntropyLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::i64, {2}}), zeros({DType::f32, {2}})},
       none, "the weight must be f32[3], got f32[2]"},
  };
  for (const ErrorCase& c : cases) {
    OnnxBuilder b(c.opset);
    b.input("x", c.x.dtype, c.x.shape.dims);
    std::vector<std::string> inputs = {"x"};
    for (size_t i = 0; i < c.more.size(); ++i) {
      inputs.push_back("in" + std::to_string(i + 1));
      b.initializer(inputs.back(), c.more[i]);
    }
    c.attrs(b.node(c.op, inputs, {"y"}, "n"));
    b.output("y", DType::f32);
    EXPECT_EQ(import_error(b, c.training),
              "node 'n' (" + std::string(c.op) + ", opset " + std::to_string(c.opset) + "): " + c.message);
  }
}

// ---------------------------------------------------------------------------
// ONNX's backend test data.

struct CaseResult {
  bool pass = false;
  std::string why;
};

CaseResult run_case(const fs::path& dir) {
  StatusOr<OnnxFile> file = read_onnx_model((dir / "model.onnx").string());
  if (!file.ok()) return {false, file.error().message};
  const fs::path data = dir / "test_data_set_0";
  // input_0.pb, input_1.pb... (or output_*), in order.
  auto read_all = [&](const std::string& kind) -> StatusOr<std::vector<Tensor>> {
    std::vector<Tensor> out;
    for (int i = 0; fs::exists(data / (kind + std::to_string(i) + ".pb")); ++i) {
      WEFT_ASSIGN_OR_RETURN(Tensor t, read_onnx_tensor((data / (kind + std::to_string(i) + ".pb")).string()));
      out.push_back(std::move(t));
    }
    return out;
  };
  StatusOr<std::vector<Tensor>> inputs = read_all("input_"), outputs = read_all("output_");
  if (!inputs.ok()) return {false, inputs.error().message};
  if (!outputs.ok()) return {false, outputs.error().message};
  StatusOr<std::vector<Tensor>> got = import_and_run(*file, std::move(*inputs));
  if (!got.ok()) return {false, got.error().message};
  if (got->size() != outputs->size()) return {false, "output count"};
  for (size_t i = 0; i < outputs->size(); ++i) {
    std::string why;
    if (!close((*got)[i], (*outputs)[i], &why)) return {false, "output " + std::to_string(i) + ": " + why};
  }
  return {true, ""};
}

const char* const kDataRoot = "/usr/include/onnx/backend/test/data";

// The cases of these ops, by folder prefix (lower case), and the group each counts in.
const std::pair<const char*, const char*> kPrefixes[] = {
    {"node/test_conv", "Conv"},           {"node/test_convtranspose", "ConvTranspose"},
    {"node/test_maxpool", "MaxPool"},     {"node/test_averagepool", "AveragePool"},
    {"node/test_globalaveragepool", "GlobalAveragePool"},
    {"node/test_globalmaxpool", "GlobalMaxPool"},
    {"node/test_batchnorm", "BatchNormalization"}, {"node/test_dropout", "Dropout"},
    {"node/test_training_dropout", "Dropout"},
    {"node/test_layer_normalization", "LayerNormalization"},
    {"node/test_instancenorm", "InstanceNormalization"}, {"node/test_lrn", "LRN"},
    {"node/test_mvn", "MeanVarianceNormalization"}, {"node/test_nllloss", "NegativeLogLikelihoodLoss"},
    {"node/test_sce", "SoftmaxCrossEntropyLoss"}, {"node/test_lppool", "LpPool"},
    {"pytorch-converted/test_conv", "Conv"}, {"pytorch-converted/test_convtranspose", "ConvTranspose"},
    {"pytorch-converted/test_avgpool", "AveragePool"}, {"pytorch-converted/test_maxpool", "MaxPool"},
    {"pytorch-converted/test_batchnorm", "BatchNormalization"},
    {"pytorch-operator/test_operator_conv", "Conv"}, {"pytorch-operator/test_operator_maxpool", "MaxPool"},
};

// The cases allowed to fail, and why.
const std::pair<const char*, const char*> kMayFail[] = {
    {"_expanded", "the function bodies use ops of other families (Cast, Unsqueeze, ReduceMean...)"},
    {"test_convinteger", "ConvInteger (quantized) has no converter"},
    {"test_maxpool_with_argmax", "MaxPool's Indices output (refused)"},
    {"test_training_dropout", "training_mode fed at run time, and ONNX's random numbers are NumPy's"},
    {"pytorch-converted/test_AvgPool1d", "exported with Unsqueeze (another family)"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(OnnxNnTestData, PassCountsPerOp) {
  if (!fs::exists(kDataRoot)) GTEST_SKIP() << "no ONNX test data at " << kDataRoot;
  std::map<std::string, std::pair<int, int>> counts;  // group -> (passed, cases)
  std::set<std::string> passed;
  std::vector<std::string> cases;
  for (const char* folder : {"node", "pytorch-converted", "pytorch-operator"}) {
    for (const auto& d : fs::directory_iterator(fs::path(kDataRoot) / folder)) {
      const std::string name = std::string(folder) + "/" + d.path().filename().string();
      const char* group = nullptr;
      size_t best = 0;
      for (const auto& [prefix, g] : kPrefixes) {
        const std::string p = prefix;
        if (lower(name).rfind(p, 0) == 0 && p.size() > best) {
          best = p.size();
          group = g;
        }
      }
      if (group != nullptr) cases.push_back(name + "\t" + group);
    }
  }
  std::sort(cases.begin(), cases.end());
  for (const std::string& c : cases) {
    const std::string name = c.substr(0, c.find('\t')), group = c.substr(c.find('\t') + 1);
    CaseResult r = run_case(fs::path(kDataRoot) / name);
    counts[group].second++;
    if (r.pass) {
      counts[group].first++;
      passed.insert(name);
    }
    std::printf("%-4s %s%s%s\n", r.pass ? "ok" : "FAIL", name.c_str(), r.pass ? "" : ": ", r.why.c_str());
  }
  for (const auto& [group, pc] : counts) std::printf("%-28s %d / %d\n", group.c_str(), pc.first, pc.second);
  // Every other case must pass.
  for (const std::string& c : cases) {
    const std::string name = c.substr(0, c.find('\t'));
    if (passed.count(name)) continue;
    const char* reason = nullptr;
    for (const auto& [part, why] : kMayFail) {
      if (name.find(part) != std::string::npos) reason = why;
    }
    EXPECT_NE(reason, nullptr) << name << " fails";
  }
}

}  // namespace ops_nn_test
}  // namespace
}  // namespace weft::onnx_io

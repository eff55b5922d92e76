// Resize and Upsample (ops/indexing.cc): each interpolation mode and coordinate
// transformation against numbers computed independently (by hand from ONNX's operator
// spec, or PyTorch 1.13's F.interpolate), gradients through an imported linear and cubic
// Resize against finite differences, and what stays refused. ONNX's own Resize cases run
// in tools/onnx_conformance; a PyTorch model with bilinear upsampling trains step for step
// in training_parity_test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/flow.h"
#include "frontend/testing/gradcheck.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/nn_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_resize_test {  // this file's names, apart in its package's unity test

using nn_case::expect_close;
using nn_case::pseudo_random;
using nn_case::save;

/// x resized by Resize (opset `opset`) to `sizes` (input 3) with string attributes `attrs`.
Tensor resized(int opset, const Tensor& x, const std::vector<int64_t>& sizes,
               const std::vector<std::pair<std::string, std::string>>& attrs) {
  Case c(opset);
  c.data("x", x).init("sz", i64({static_cast<int64_t>(sizes.size())}, sizes));
  onnx::NodeProto& n = c.node("Resize", {"x", "", "", "sz"});
  for (const auto& [name, value] : attrs) set_attr(n, name, value);
  return c.y();
}

/// x resized by `scales` (Resize's input 2, or opset 10's input 1).
Tensor scaled(int opset, const Tensor& x, const std::vector<float>& scales,
              const std::vector<std::pair<std::string, std::string>>& attrs,
              const std::string& op = "Resize") {
  Case c(opset);
  c.data("x", x).init("s", f32({static_cast<int64_t>(scales.size())}, scales));
  const bool second = op == "Upsample" || opset < 11;
  onnx::NodeProto& n =
      c.node(op, second ? std::vector<std::string>{"x", "s"} : std::vector<std::string>{"x", "", "s"});
  for (const auto& [name, value] : attrs) set_attr(n, name, value);
  return c.y();
}

TEST(Resize, NearestInEveryRoundingAndCoordinateTransformation) {
  const Tensor x2 = f32({2}, {1, 2}), x3 = f32({3}, {1, 2, 3}), x4 = f32({4}, {1, 2, 3, 4});
  // half_pixel, x1.5: output x reads (x + 0.5) / 1.5 - 0.5 = -1/6, 1/2, 7/6, rounded with
  // .5 down (the default) to -> 0 (clamped), 0, 1.
  EXPECT_EQ(scaled(13, x2, {1.5}, {}), f32({3}, {1, 1, 2}));
  // Halving: 0.5, 2.5 round down to 0, 2 and up to 1, 3.
  EXPECT_EQ(scaled(13, x4, {0.5}, {}), f32({2}, {1, 3}));
  EXPECT_EQ(scaled(13, x4, {0.5}, {{"nearest_mode", "round_prefer_ceil"}}), f32({2}, {2, 4}));
  // half_pixel with ceil, x2: -0.25, 0.25, 0.75, 1.25 -> 0, 1, 1, 2 (clamped to 1).
  EXPECT_EQ(scaled(13, x2, {2}, {{"nearest_mode", "ceil"}}), f32({4}, {1, 2, 2, 2}));
  // asymmetric, x2: x / 2 = 0, 0.5, 1, 1.5; round_prefer_ceil -> 0, 1, 1, 2 (clamped).
  EXPECT_EQ(scaled(13, x2, {2},
                   {{"coordinate_transformation_mode", "asymmetric"},
                    {"nearest_mode", "round_prefer_ceil"}}),
            f32({4}, {1, 2, 2, 2}));
  // align_corners, 3 -> 5: x · 2 / 4 = 0, 0.5, 1, 1.5, 2, floored.
  EXPECT_EQ(resized(13, x3, {5},
                    {{"coordinate_transformation_mode", "align_corners"}, {"nearest_mode", "floor"}}),
            f32({5}, {1, 1, 2, 2, 3}));
  // tf_half_pixel_for_nn, 4 -> 2: (x + 0.5) / 0.5 = 1, 3.
  EXPECT_EQ(resized(13, x4, {2},
                    {{"coordinate_transformation_mode", "tf_half_pixel_for_nn"},
                     {"nearest_mode", "floor"}}),
            f32({2}, {2, 4}));
  // Opset 10: asymmetric and floor, the scales as input 1. Any dtype resizes by nearest.
  EXPECT_EQ(scaled(10, f32({3}, {1, 2, 3}), {0.7f}, {}), f32({2}, {1, 2}));
  Case ints(13);
  ints.data("x", i32({2}, {5, 7})).init("s", f32({1}, {1.5}));
  ints.node("Resize", {"x", "", "s"});
  EXPECT_EQ(ints.y(), i32({3}, {5, 5, 7}));
  // The integer-factor repeat (half_pixel, rounding to nearest), on two axes.
  EXPECT_EQ(scaled(13, f32({1, 1, 1, 2}, {1, 2}), {1, 1, 2, 3}, {}),
            f32({1, 1, 2, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(resized(13, f32({1, 2}, {1, 2}), {2, 4}, {}), f32({2, 4}, {1, 1, 2, 2, 1, 1, 2, 2}));
  Case up7(7);  // Upsample's scales as an attribute before opset 9
  set_attr(up7.data("x", f32({2}, {1, 2})).node("Upsample", {"x"}), "scales",
           std::vector<float>{2});
  EXPECT_EQ(up7.y(), f32({4}, {1, 1, 2, 2}));
}

TEST(Resize, LinearAsPyTorchsBilinear) {
  // F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=False / True) and
  // size=(1, 2), align_corners=False, in PyTorch 1.13: half_pixel and align_corners.
  const Tensor x = f32({1, 1, 2, 3}, {1, 2, 4, 3, 0, 5});
  expect_close(resized(13, x, {1, 1, 3, 5}, {{"mode", "linear"}}),
               f32({1, 1, 3, 5}, {1, 1.4, 2, 3.2, 4, 2, 1.6, 1, 3.1, 4.5, 3, 1.8, 0, 3, 5}));
  expect_close(
      resized(13, x, {1, 1, 3, 5},
              {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}),
      f32({1, 1, 3, 5}, {1, 1.5, 2, 3, 4, 2, 1.5, 1, 2.75, 4.5, 3, 1.5, 0, 2.5, 5}));
  expect_close(resized(13, x, {1, 1, 1, 2}, {{"mode", "linear"}}), f32({1, 1, 1, 2}, {1.75, 3.625}));
  // pytorch_half_pixel reads position -0.5 (the edge) for an output of length 1, where
  // half_pixel reads the middle: 4 -> 1 is (0 + 0.5) · 4 - 0.5 = 1.5.
  const Tensor x4 = f32({4}, {1, 2, 3, 4});
  expect_close(resized(13, x4, {1}, {{"mode", "linear"}}), f32({1}, {2.5}));
  expect_close(
      resized(13, x4, {1},
              {{"mode", "linear"}, {"coordinate_transformation_mode", "pytorch_half_pixel"}}),
      f32({1}, {1}));
  // Opset 10's Resize and opset 9's Upsample: asymmetric, x / 2 = 0, 0.5, 1, 1.5.
  const Tensor x2 = f32({2}, {1, 2});
  expect_close(scaled(10, x2, {2}, {{"mode", "linear"}}), f32({4}, {1, 1.5, 2, 2}));
  expect_close(scaled(9, x2, {2}, {{"mode", "linear"}}, "Upsample"), f32({4}, {1, 1.5, 2, 2}));
}

TEST(Resize, CubicAsPyTorchsBicubic) {
  // F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False) in PyTorch
  // 1.13: Keys' kernel with a = -0.75 (cubic_coeff_a's default), half_pixel, edge values
  // beyond the input.
  const Tensor x = f32({1, 1, 2, 3}, {1, 2, 4, 3, 0, 5});
  expect_close(
      scaled(13, x, {1, 1, 2, 2}, {{"mode", "cubic"}}),
      f32({1, 1, 4, 6},
          {0.639099, 1.052017, 1.711227, 2.74234,  3.56308,  4.072098, 1.443237, 1.380157,
           1.243011, 2.163879, 3.622742, 4.509186, 2.7677,   1.920624, 0.471832, 1.211121,
           3.721008, 5.229095, 3.571838, 2.248764, 0.003616, 0.63266,  3.78067,  5.666183}));
  // exclude_outside drops the taps beyond the input and renormalises: 2 -> 1 (half_pixel)
  // reads position 0.5, taps -1, 0, 1, 2 of weights w0..w3 (ratio 0.5, a = -0.5:
  // -0.0625, 0.5625, 0.5625, -0.0625); taps 0 and 1 remain, each 0.5625 / 1.125 = 1/2.
  Case ex(13);
  ex.data("x", f32({2}, {1, 3})).init("s", f32({1}, {0.5}));
  onnx::NodeProto& n = ex.node("Resize", {"x", "", "s"});
  set_attr(n, "mode", "cubic");
  set_attr(n, "cubic_coeff_a", -0.5);
  set_attr(n, "exclude_outside", int64_t{1});
  expect_close(ex.y(), f32({1}, {2}));
  // On a longer input the renormalisation shows: [1, 3, 9, 27] -> 2.
  Case ex3(13);
  ex3.data("x", f32({4}, {1, 3, 9, 27})).init("s", f32({1}, {0.5}));
  onnx::NodeProto& n3 = ex3.node("Resize", {"x", "", "s"});
  set_attr(n3, "mode", "cubic");
  set_attr(n3, "cubic_coeff_a", -0.5);
  set_attr(n3, "exclude_outside", int64_t{1});
  // Output 0 reads 0.5: taps -1..2, -1 dropped: (0.5625·1 + 0.5625·3 - 0.0625·9) / 1.0625.
  // Output 1 reads 2.5: taps 1..4, 4 dropped: (-0.0625·3 + 0.5625·9 + 0.5625·27) / 1.0625.
  expect_close(ex3.y(), f32({2}, {(0.5625 + 1.6875 - 0.5625) / 1.0625,
                                  (-0.1875 + 5.0625 + 15.1875) / 1.0625}));
}

TEST(Resize, TfCropAndResizeReadsTheRoiAndExtrapolates) {
  // 5 inputs, roi [0.25, 1.25] to 3 outputs: x · (1.25 - 0.25) · 4 / 2 + 0.25 · 4 = 1, 3, 5;
  // 5 lies past the last input (4) and reads extrapolation_value.
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  auto crop = [&](const std::vector<float>& roi, const std::string& mode, const Tensor* sizes,
                  float scale) {
    Case c(13);
    c.data("x", x).init("roi", f32({2}, roi));
    if (sizes != nullptr) c.init("sz", *sizes);
    if (sizes == nullptr) c.init("s", f32({1}, {scale}));
    onnx::NodeProto& n = c.node(
        "Resize", sizes != nullptr ? std::vector<std::string>{"x", "roi", "", "sz"}
                                   : std::vector<std::string>{"x", "roi", "s"});
    set_attr(n, "coordinate_transformation_mode", "tf_crop_and_resize");
    set_attr(n, "mode", mode);
    set_attr(n, "extrapolation_value", 9.0);
    return c.y();
  };
  const Tensor three = i64({1}, {3}), one = i64({1}, {1}), two = i64({1}, {2});
  expect_close(crop({0.25, 1.25}, "linear", &three, 0), f32({3}, {2, 4, 9}));
  // By scales the output is floor(5 · (1.25 - 0.25) · 0.6) = 3 long: the same positions.
  expect_close(crop({0.25, 1.25}, "linear", nullptr, 0.6f), f32({3}, {2, 4, 9}));
  // One output reads the region's middle: (0 + 0.5) / 2 · 4 = 1.
  expect_close(crop({0, 0.5}, "linear", &one, 0), f32({1}, {2}));
  // Nearest: roi [0.1, 0.6] to 2: x · 0.5 · 4 + 0.4 = 0.4, 2.4, rounded.
  expect_close(crop({0.1f, 0.6f}, "nearest", &two, 0), f32({2}, {1, 3}));
}

TEST(Resize, GradientsThroughLinearAndCubicMatchFiniteDifferences) {
  // Resize linear (half_pixel, 5x4 -> 7x2: up on one axis, down on the other), then cubic
  // with exclude_outside (align_corners, -> 4x5), in f64.
  OnnxBuilder b(13);
  b.input("x", DType::f64, {1, 1, 5, 4});
  b.initializer("s", f32({4}, {1, 1, 1.5, 0.6}));
  b.initializer("sz", i64({4}, {1, 1, 4, 5}));
  set_attr(b.node("Resize", {"x", "", "s"}, {"r"}), "mode", "linear");
  onnx::NodeProto& cubic = b.node("Resize", {"r", "", "", "sz"}, {"y"});
  set_attr(cubic, "mode", "cubic");
  set_attr(cubic, "exclude_outside", int64_t{1});
  set_attr(cubic, "coordinate_transformation_mode", "align_corners");
  b.output("y", DType::f64);
  StatusOr<Model> m = FlowBuilder::from(OnnxModel(save(b, "resize.onnx")))
                          .build({{"x", Type{DType::f64, {1, 1, 5, 4}}}}, BuildOptions{.training = true});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->graph().type(m->graph().outputs()[0]).to_string(), "f64[1,1,4,5]");
  const Tensor x = pseudo_random({1, 1, 5, 4}, 7);
  testing::expect_gradients_match_finite_differences(
      *m, Tensor::from_doubles(DType::f64, x.shape(), x.to_doubles()), 1e-6);
}

TEST(Resize, RefusalsNameWhatIsRefused) {
  const Tensor x = f32({2}, {1, 2});
  auto error = [&](int opset, const std::vector<std::pair<std::string, std::string>>& attrs,
                   const Tensor& data, const std::string& op = "Resize") {
    Case c(opset);
    c.data("x", data).init("s", f32({1}, {2}));
    onnx::NodeProto& n = c.node(op, op == "Upsample" || opset < 11
                                        ? std::vector<std::string>{"x", "s"}
                                        : std::vector<std::string>{"x", "", "s"});
    for (const auto& [name, value] : attrs) set_attr(n, name, value);
    return c.error();
  };
  // Opset 19's half_pixel_symmetric: the importer reads opsets up to 17.
  EXPECT_EQ(error(13, {{"coordinate_transformation_mode", "half_pixel_symmetric"}}, x),
            "node 'n' (Resize, opset 13): coordinate_transformation_mode 'half_pixel_symmetric' "
            "is not supported");
  EXPECT_EQ(error(13, {{"mode", "linear"}}, i32({2}, {1, 2})),
            "node 'n' (Resize, opset 13): mode 'linear' on i32 data is not supported");
  EXPECT_EQ(error(13, {{"mode", "area"}}, x),
            "node 'n' (Resize, opset 13): mode 'area' is not nearest, linear or cubic");
  EXPECT_EQ(error(10, {{"mode", "cubic"}}, x),
            "node 'n' (Resize, opset 10): mode 'cubic' is not nearest or linear");
  EXPECT_EQ(error(13, {{"nearest_mode", "round"}}, f32({3}, {1, 2, 3})),
            "node 'n' (Resize, opset 13): nearest_mode 'round' is not supported");
  EXPECT_EQ(error(9, {{"mode", "cubic"}}, x, "Upsample"),
            "node 'n' (Upsample, opset 9): mode 'cubic' is not supported");
  Case roi(13);
  roi.data("x", x).init("roi", f32({1}, {0})).init("s", f32({1}, {2}));
  set_attr(roi.node("Resize", {"x", "roi", "s"}), "coordinate_transformation_mode",
           "tf_crop_and_resize");
  EXPECT_EQ(roi.error(), "node 'n' (Resize, opset 13): roi needs 2·rank = 2 entries");
  Case empty(13);
  empty.data("x", f32({0}, {})).init("sz", i64({1}, {2})).node("Resize", {"x", "", "", "sz"});
  EXPECT_EQ(empty.error(), "node 'n' (Resize, opset 13): an empty axis cannot be resized to 2");
  Case negative(13);
  negative.data("x", x).init("sz", i64({1}, {-1})).node("Resize", {"x", "", "", "sz"});
  EXPECT_EQ(negative.error(), "node 'n' (Resize, opset 13): the output size -1 is negative");
  // Shapes are static: sizes computed at run time are refused (scales: ops_tensor_test).
  Case sizes(13);
  sizes.data("x", x).data("sz", i64({1}, {4})).node("Resize", {"x", "", "", "sz"});
  EXPECT_EQ(sizes.error(),
            "node 'n' (Resize, opset 13): sizes computed at run time (weft's shapes are static: "
            "it must be a constant or an initializer) is not supported");
}

}  // namespace ops_resize_test
}  // namespace
}  // namespace weft::onnx_io

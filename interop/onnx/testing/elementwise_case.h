#pragma once
// Helpers shared by the elementwise and activation converters' tests
// (ops_elementwise_test, ops_activation_test): a model of one node run on the reference
// interpreter, its import error, and its values checked. In a namespace of their own, so
// that each test file names the ones it uses (`using elementwise_case::run_op;`) beside
// node_case.h's.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "interop/onnx/importer.h"
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io::elementwise_case {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline Tensor f32(Shape s, std::vector<double> v) {
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}
inline Tensor f32(const std::vector<double>& v) { return f32(Shape({static_cast<int64_t>(v.size())}), v); }
inline Tensor of(DType dt, std::vector<double> v) {
  return Tensor::from_doubles(dt, Shape({static_cast<int64_t>(v.size())}), v);
}

using SetAttrs = std::function<void(onnx::NodeProto&)>;

// Runs a model of one `op` node on `inputs`, given as data inputs named by `names`
// ("" for an absent optional input; default x0, x1...), and returns its first output.
inline StatusOr<Tensor> run_op(const std::string& op, std::vector<Tensor> inputs, int opset = 17,
                        const SetAttrs& attrs = {}, std::vector<std::string> names = {}) {
  OnnxBuilder b(opset);
  if (names.empty()) {
    for (size_t k = 0; k < inputs.size(); ++k) names.push_back("x" + std::to_string(k));
  }
  size_t k = 0;
  for (const std::string& name : names) {
    if (name.empty()) continue;
    b.input(name, inputs[k].dtype(), inputs[k].shape().dims);
    ++k;
  }
  onnx::NodeProto& n = b.node(op, names, {"y"});
  if (attrs) attrs(n);
  b.output("y");  // its type is what the tests check
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> out, import_and_run(b.file(), std::move(inputs)));
  return std::move(out[0]);
}

// The error of importing the same one-node model.
inline std::string error_of(const std::string& op, std::vector<Tensor> inputs, int opset = 17,
                     const SetAttrs& attrs = {}) {
  StatusOr<Tensor> y = run_op(op, std::move(inputs), opset, attrs);
  return y.ok() ? "(no error)" : y.error().message;
}

// `got` has dtype `dt` and `want`'s values, each within `tol` relative, or absolute below
// 1 unless `relative` (NaN matches NaN).
inline void expect_values(const StatusOr<Tensor>& got, DType dt, const std::vector<double>& want,
                   double tol = 1e-6, bool relative = false) {
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->dtype(), dt) << got->type().to_string();
  ASSERT_EQ(got->numel(), static_cast<int64_t>(want.size())) << got->type().to_string();
  for (int64_t i = 0; i < got->numel(); ++i) {
    const double g = got->get_double(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g;
    } else if (std::isinf(w)) {
      EXPECT_EQ(g, w) << "element " << i;
    } else {
      EXPECT_NEAR(g, w, tol * (relative ? std::fabs(w) : std::max(1.0, std::fabs(w))))
          << "element " << i;
    }
  }
}

}  // namespace weft::onnx_io::elementwise_case

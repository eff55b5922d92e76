#pragma once
// One ONNX node at a time, for the converters' tests: `Case`, a model of one node with data
// inputs (given at run time) and initializers (known at import time), run on the
// reference interpreter; and the tensors those tests write.
//
//   Case c(13);
//   set_attr(c.data("x", iota_f32({2, 3})).node("ReduceSum", {"x"}), "keepdims", int64_t{0});
//   EXPECT_EQ(c.y(), f32({2}, {6, 15}));

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io {

inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}
inline Tensor i32(Shape s, std::vector<int32_t> v) {
  return Tensor::from_vector<int32_t>(std::move(s), v);
}

/// A model of one node: data inputs (given at run time) and initializers (known at
/// import time), run on the reference interpreter.
class Case {
 public:
  explicit Case(int opset) : b_(opset) {}
  Case& data(const std::string& name, Tensor t) {
    b_.input(name, t.dtype(), t.shape().dims);
    data_.push_back(std::move(t));
    return *this;
  }
  Case& init(const std::string& name, const Tensor& t) {
    b_.initializer(name, t);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out = {"y"}) {
    for (const std::string& o : out) b_.output(o);  // its type is what the test checks
    return b_.node(op, std::move(in), std::move(out), "n");
  }
  StatusOr<std::vector<Tensor>> run() { return import_and_run(b_.file(), data_); }
  /// The only output; fails the test on an error.
  Tensor y() {
    StatusOr<std::vector<Tensor>> r = run();
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? (*r)[0] : Tensor();
  }
  /// The import error's message ("" if it imported).
  std::string error() {
    StatusOr<std::vector<Tensor>> r = run();
    return r.ok() ? "" : r.error().message;
  }

 private:
  OnnxBuilder b_;
  std::vector<Tensor> data_;
};

inline Tensor iota_f32(Shape s) {
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k + 1);
  return f32(std::move(s), v);
}

}  // namespace weft::onnx_io

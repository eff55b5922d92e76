#pragma once
// Small ONNX models written in tests, and running what the importer makes of them:
//
//   OnnxBuilder b(/*opset=*/17);
//   b.input("x", DType::f32, {2, 3});
//   auto& n = b.node("LeakyRelu", {"x"}, {"y"});
//   set_attr(n, "alpha", 0.2);
//   b.output("y", DType::f32);
//   StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {x});

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "interop/onnx/attributes.h"
#include "interop/onnx/importer.h"
#include "interop/onnx/proto.h"
#include "interop/onnx/reader.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = kDefaultOpset);
  static constexpr int kDefaultOpset = 17;

  /// A data input; a negative dim is symbolic, named `d0`, `d1`... by position.
  OnnxBuilder& input(const std::string& name, DType dtype, std::vector<int64_t> dims);
  /// A data input with named symbolic dims ("" entries are unknown dims).
  OnnxBuilder& input_symbolic(const std::string& name, DType dtype, std::vector<std::string> dims);
  OnnxBuilder& initializer(const std::string& name, const Tensor& value);
  /// Appends a node; add attributes with set_attr.
  onnx::NodeProto& node(const std::string& op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "");
  OnnxBuilder& output(const std::string& name, DType dtype);
  /// An output whose type the model leaves undeclared (elem_type 0), as a node test that
  /// checks the computed type itself declares it.
  OnnxBuilder& output(const std::string& name);

  onnx::ModelProto& model() { return model_; }
  const onnx::ModelProto& model() const { return model_; }
  /// The model, serialized and parsed back as a file named `test.onnx` in dir "".
  OnnxFile file() const;

 private:
  onnx::ModelProto model_;
};

/// Appends attribute `name` holding `v` to node `n` (add_attr, attributes.h), taking a
/// test's literals as they come: any integer or enum as an INT, any floating-point
/// number as a FLOAT, a string literal as a STRING.
template <typename T>
void set_attr(onnx::NodeProto& n, const std::string& name, const T& v) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    add_attr(n, name, static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    add_attr(n, name, static_cast<float>(v));
  } else if constexpr (std::is_convertible_v<const T&, std::string>) {
    add_attr(n, name, std::string(v));
  } else {
    add_attr(n, name, v);
  }
}

/// Imports `file` (inference behaviour unless `training`), runs it on the reference
/// interpreter with `inputs`, one per data input in order (parameters from the model; the
/// shapes bind symbolic dims: name_data_inputs, options_with_shapes_of), and returns
/// its outputs; an import error is returned as is.
StatusOr<std::vector<Tensor>> import_and_run(const OnnxFile& file, std::vector<Tensor> inputs,
                                             const ImportOptions& options = {},
                                             bool training = false);

}  // namespace weft::onnx_io

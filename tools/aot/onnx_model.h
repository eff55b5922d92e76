#pragma once
// The model source of a weft_library / weft_binary whose `model` is an ONNX file: the
// macro generates a source calling onnx_model_source with the file's workspace path
// (which resolves in the generator's action and in the tests' runfiles alike).

#include <cstdint>
#include <string>

#include "ir/dtype.h"
#include "ir/status.h"
#include "tools/aot/model.h"

namespace weft::aot {

/// The ONNX model at `path` as a flow (onnx_io::OnnxModel) on its one data input, whose
/// first dimension is the batch (whatever the model declares there) and whose other
/// dimensions must be static. A floating input must have the macro's `dtype`.
StatusOr<ModelSource> onnx_model_source(const std::string& path, int64_t batch, DType dtype);

}  // namespace weft::aot

#pragma once
// An exported ONNX model without its weights, and the writer that gives it weights at run
// time without protobuf: how a training binary writes what it trained (--export-onnx,
// training/driver). The AOT generator exports the eval forward at build time
// (exporter.h's export_weightless) and embeds the result; the binary, which links no
// ONNX or protobuf library, appends its trained values as the graph's initializers.
//
//   WeightlessModel w = ...;                     // embedded by the generator
//   WEFT_RETURN_IF_ERROR(write_with_weights("mlp.onnx", w, [&](const std::string& name) {
//     return model.value(name);                  // the trained tensor
//   }));
//
// How: a protobuf message may hold an embedded message field more than once, and a
// parser merges the occurrences (repeated fields appending). The file is the weightless
// ModelProto followed by a second `graph` field holding only the initializers, each the
// TensorProto the exporter wrote with its data removed (`header`: name, dims, data
// type) followed by the tensor's bytes as `raw_data`. ONNX's own loader (python3-onnx's
// onnx.load), its checker and weft's reader all parse it as the model with its weights.

#include <functional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

/// One initializer of a weightless model.
struct WeightlessInitializer {
  std::string value;   ///< The weft value (parameter or state) whose tensor it holds.
  std::string header;  ///< Its serialized TensorProto without data: name, dims, data type.
};

/// A serialized ONNX ModelProto whose graph has no initializers, and those it lacks.
struct WeightlessModel {
  std::string model;
  std::vector<WeightlessInitializer> initializers;
};

/// The bytes of `w` with each initializer holding `value_of(initializer.value)`'s bytes.
/// Errors: `value_of`'s, a model over protobuf's 2 GiB.
StatusOr<std::string> with_weights(const WeightlessModel& w,
                                   const std::function<StatusOr<Tensor>(const std::string&)>& value_of);

/// with_weights written to `path` atomically (formats/file_io.h). Errors name the path.
Status write_with_weights(const std::string& path, const WeightlessModel& w,
                          const std::function<StatusOr<Tensor>(const std::string&)>& value_of);

}  // namespace weft::onnx_io

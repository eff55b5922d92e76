#pragma once
// Reading ONNX files safely: a model (`model.onnx`) or one tensor (`input_0.pb`, as in
// ONNX's backend test data), with every size checked before it is trusted.
//
//   WEFT_ASSIGN_OR_RETURN(OnnxFile file, read_onnx_model("resnet18.onnx"));
//   WEFT_ASSIGN_OR_RETURN(Tensor w, tensor_from_proto(file.model.graph().initializer(0), file.dir));
//
// What is refused, each with an error naming the file and what was wrong:
//  - a file that is not a protobuf ModelProto/TensorProto, or larger than protobuf's
//    2 GiB message limit;
//  - tensors of element types weft has no dtype for (INT8, UINT16, STRING, COMPLEX64...),
//    negative or overflowing dims, a data field whose length disagrees with the shape;
//  - external data (`data_location: EXTERNAL`) whose `location` is absolute or leaves the
//    model's folder (`../`, a symlink out), or whose offset/length lie outside the file.
// ONNX's FLOAT16/BFLOAT16 map to f16/bf16, BOOL to bool, UINT8 to u8; all others that
// weft has keep their width (FLOAT f32, DOUBLE f64, INT32 i32, INT64 i64).

#include <cstdint>
#include <string>
#include <string_view>

#include "interop/onnx/proto.h"
#include "ir/dtype.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

/// A parsed model and where it came from.
struct OnnxFile {
  onnx::ModelProto model;
  std::string path;  ///< As given.
  std::string dir;   ///< The folder external data is read from (the model's own).
  int opset = 0;     ///< The default domain's opset version (`ai.onnx`); 0 if not imported.
};

/// Reads and parses the model at `path`.
StatusOr<OnnxFile> read_onnx_model(const std::string& path);

/// Parses a model held in memory; `name` stands for the file in errors, `dir` is the
/// folder external data is confined to ("" refuses all external data).
StatusOr<OnnxFile> parse_onnx_model(std::string_view bytes, const std::string& name,
                                    const std::string& dir);

/// Reads one serialized TensorProto (`test_data_set_0/input_0.pb`).
StatusOr<Tensor> read_onnx_tensor(const std::string& path);

/// The tensor a TensorProto holds (`dir` as for parse_onnx_model). Errors name the
/// tensor (`initializer 'conv1.weight'`), prefixed by the caller.
StatusOr<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& dir);

/// Writes `t` into `out` (raw_data, little-endian), keeping out's name.
void tensor_to_proto(const Tensor& t, onnx::TensorProto* out);

/// The weft dtype of an ONNX element type (TensorProto::DataType), or an error naming it.
StatusOr<DType> dtype_from_onnx(int elem_type);
/// The ONNX element type of a weft dtype.
int onnx_elem_type(DType dtype);
/// `FLOAT`, `INT8`, `STRING`...: the name ONNX gives an element type.
std::string onnx_type_name(int elem_type);

}  // namespace weft::onnx_io

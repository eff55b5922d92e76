#include "tools/aot/onnx_model.h"

#include "interop/onnx/importer.h"

namespace weft::aot {

StatusOr<ModelSource> onnx_model_source(const std::string& path, int64_t batch, DType dtype) {
  WEFT_ASSIGN_OR_RETURN(onnx_io::OnnxFile file, onnx_io::read_onnx_model(path));
  const std::vector<const onnx::ValueInfoProto*> inputs = onnx_io::onnx_data_inputs(file);
  if (inputs.size() != 1) {
    return Error{path + ": the model takes " + std::to_string(inputs.size()) +
                 " data inputs; an AOT model source takes one (the batch)"};
  }
  const onnx::ValueInfoProto& in = *inputs[0];
  const std::string what = path + ": input '" + in.name() + "'";
  WEFT_ASSIGN_OR_RETURN(DType declared, onnx_io::dtype_from_onnx(in.type().tensor_type().elem_type()));
  if (is_floating(declared) && declared != dtype) {
    return Error{what + " is " + std::string(dtype_name(declared)) + ", the library's dtype " +
                 std::string(dtype_name(dtype))};
  }
  const onnx::TensorShapeProto& s = in.type().tensor_type().shape();
  if (s.dim_size() == 0) return Error{what + " has no batch dimension"};
  std::vector<int64_t> dims = {batch};
  for (int d = 1; d < s.dim_size(); ++d) {
    if (!s.dim(d).has_dim_value()) {
      return Error{what + ": dimension " + std::to_string(d) +
                   " is symbolic; an AOT model needs every dimension but the batch static"};
    }
    dims.push_back(s.dim(d).dim_value());
  }
  WEFT_ASSIGN_OR_RETURN(FlowPtr net,
                        FlowBuilder::from(onnx_io::OnnxModel(path, {.free_batch_dimension = true}))
                            .build());
  return ModelSource{net, {{in.name(), Type{declared, Shape(dims)}}}};
}

}  // namespace weft::aot

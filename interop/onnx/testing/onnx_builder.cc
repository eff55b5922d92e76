#include "interop/onnx/testing/onnx_builder.h"

#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {

OnnxBuilder::OnnxBuilder(int opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("weft-test");
  model_.add_opset_import()->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

OnnxBuilder& OnnxBuilder::input(const std::string& name, DType dtype, std::vector<int64_t> dims) {
  onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(dtype));
  auto* shape = tt->mutable_shape();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] >= 0) {
      shape->add_dim()->set_dim_value(dims[k]);
    } else {
      shape->add_dim()->set_dim_param("d" + std::to_string(k));
    }
  }
  return *this;
}

OnnxBuilder& OnnxBuilder::input_symbolic(const std::string& name, DType dtype,
                                         std::vector<std::string> dims) {
  onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(dtype));
  auto* shape = tt->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty()) dim->set_dim_param(d);
  }
  return *this;
}

OnnxBuilder& OnnxBuilder::initializer(const std::string& name, const Tensor& value) {
  onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
  tensor_to_proto(value, t);
  t->set_name(name);
  return *this;
}

onnx::NodeProto& OnnxBuilder::node(const std::string& op_type, std::vector<std::string> inputs,
                                   std::vector<std::string> outputs, const std::string& name) {
  onnx::NodeProto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return *n;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name, DType dtype) {
  onnx::ValueInfoProto* out = model_.mutable_graph()->add_output();
  out->set_name(name);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_elem_type(dtype));
  return *this;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
  return *this;
}

OnnxFile OnnxBuilder::file() const {
  std::string bytes;
  model_.SerializeToString(&bytes);
  StatusOr<OnnxFile> f = parse_onnx_model(bytes, "test.onnx", "");
  WEFT_CHECK(f.ok(), f.error().to_string());
  return std::move(*f);
}

StatusOr<std::vector<Tensor>> import_and_run(const OnnxFile& file, std::vector<Tensor> inputs,
                                             const ImportOptions& options, bool training) {
  WEFT_ASSIGN_OR_RETURN(auto data, name_data_inputs(file, std::move(inputs)));
  WEFT_ASSIGN_OR_RETURN(ImportedGraph g, import_onnx(file, options_with_shapes_of(data, options), training));
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> all, g.inputs_with(data));
  WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(g.graph, std::move(all)));
  return std::move(r.outputs);
}

}  // namespace weft::onnx_io

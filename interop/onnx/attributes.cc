// Writing an ONNX node's attributes (attributes.h).
#include "interop/onnx/attributes.h"

#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

onnx::AttributeProto* new_attr(onnx::NodeProto& n, const std::string& name,
                               onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

}  // namespace

void add_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  new_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
void add_attr(onnx::NodeProto& n, const std::string& name, float v) {
  new_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
void add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  new_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = new_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto* a = new_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void add_attr(onnx::NodeProto& n, const std::string& name, const Tensor& v) {
  tensor_to_proto(v, new_attr(n, name, onnx::AttributeProto::TENSOR)->mutable_t());
}
onnx::GraphProto* add_graph_attr(onnx::NodeProto& n, const std::string& name) {
  return new_attr(n, name, onnx::AttributeProto::GRAPH)->mutable_g();
}

}  // namespace weft::onnx_io

// NodeContext's view of one node (convert.h): its description in errors and its
// attributes, read with ONNX's types checked and the converter's defaults. Inputs and
// outputs go through the Importer (importer.cc).
#include <algorithm>

#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"

namespace weft::onnx_io {

int NodeContext::num_inputs() const { return node_.input_size(); }

bool NodeContext::has_input(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}

int NodeContext::num_outputs() const { return node_.output_size(); }

bool NodeContext::wants_output(int i) const {
  return i < node_.output_size() && !node_.output(i).empty();
}

std::string NodeContext::describe() const {
  std::string name = node_.name().empty() ? "#" + std::to_string(index_) : node_.name();
  return "node '" + name + "' (" + node_.op_type() + ", opset " + std::to_string(opset_) + ")";
}

void NodeContext::unsupported(const std::string& what) const {
  e_.fail(describe() + ": " + what + " is not supported");
}

void NodeContext::invalid(const std::string& what) const { e_.fail(describe() + ": " + what); }

const onnx::AttributeProto* NodeContext::find_attr(std::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

const onnx::AttributeProto& NodeContext::typed_attr(std::string_view name, int type) const {
  const onnx::AttributeProto* a = find_attr(name);
  if (a->type() != type && a->type() != onnx::AttributeProto::UNDEFINED) {
    invalid("attribute '" + std::string(name) + "' has type " +
            onnx::AttributeProto_AttributeType_Name(a->type()) + ", expected " +
            onnx::AttributeProto_AttributeType_Name(static_cast<onnx::AttributeProto_AttributeType>(type)));
  }
  return *a;
}

int64_t NodeContext::attr_int(std::string_view name, int64_t dflt) const {
  if (!has_attr(name)) return dflt;
  return typed_attr(name, onnx::AttributeProto::INT).i();
}

double NodeContext::attr_float(std::string_view name, double dflt) const {
  if (!has_attr(name)) return dflt;
  return typed_attr(name, onnx::AttributeProto::FLOAT).f();
}

std::string NodeContext::attr_string(std::string_view name, std::string dflt) const {
  if (!has_attr(name)) return dflt;
  return typed_attr(name, onnx::AttributeProto::STRING).s();
}

std::vector<int64_t> NodeContext::attr_ints(std::string_view name, std::vector<int64_t> dflt) const {
  if (!has_attr(name)) return dflt;
  const auto& a = typed_attr(name, onnx::AttributeProto::INTS);
  return {a.ints().begin(), a.ints().end()};
}

std::vector<double> NodeContext::attr_floats(std::string_view name) const {
  if (!has_attr(name)) return {};
  const auto& a = typed_attr(name, onnx::AttributeProto::FLOATS);
  return {a.floats().begin(), a.floats().end()};
}

const onnx::TensorProto* NodeContext::attr_tensor(std::string_view name) const {
  if (!has_attr(name)) return nullptr;
  return &typed_attr(name, onnx::AttributeProto::TENSOR).t();
}

void NodeContext::expect_attrs(std::initializer_list<std::string_view> known) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
      unsupported("attribute '" + a.name() + "'");
    }
  }
}

const onnx::GraphProto& NodeContext::attr_graph(std::string_view name) const {
  if (!has_attr(name)) invalid("attribute '" + std::string(name) + "' is required");
  return typed_attr(name, onnx::AttributeProto::GRAPH).g();
}

}  // namespace weft::onnx_io

// export_onnx and its writer: inputs and initializers, the walk over the nodes (each
// written by its row of the op table, export_ops.cc), the outputs, ONNX's checks.
#include "interop/onnx/exporter.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>

#include "formats/file_io.h"
#include "frontend/model.h"
#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {

// ---- NameTable, GraphWriter, ExportContext.

namespace {
/// "cannot export 'OP' to ONNX: WHY", at the node's location.
ExportFailure cannot_export(const Node& node, const std::string& why) {
  return ExportFailure{Error{"cannot export '" + std::string(op_name(node.op)) + "' to ONNX: " + why, node.loc}};
}
}  // namespace

std::string NameTable::unique_in(std::set<std::string>& used, const std::string& base) {
  std::string name = base.empty() ? "v" : base;
  for (int k = 1; used.count(name); ++k) name = base + "_" + std::to_string(k);
  used.insert(name);
  return name;
}

const std::string& GraphWriter::name_of(ValueId v) {
  auto it = onnx_names_.find(v);
  if (it == onnx_names_.end()) it = onnx_names_.emplace(v, names_.unique(g_.value(v).name)).first;
  return it->second;
}

void GraphWriter::write_nodes() {
  for (const Node& node : g_.nodes()) {
    for (ValueId r : node.results) {
      if (!g_.value(r).type) {
        throw cannot_export(node, "its result %" + g_.value(r).name +
                                      " has no type (export a type-inferred graph)");
      }
    }
    const OpExporter* row = find_exporter(node.op);
    WEFT_CHECK(row != nullptr, "no ONNX export entry for " + std::string(op_name(node.op)));
    ExportContext c(*this, node, *row);
    row->fn(c);
  }
}

void GraphWriter::write_outputs(const std::vector<ValueId>& values) {
  std::set<std::string> made, returned;
  for (const onnx::NodeProto& n : out_->node()) made.insert(n.output().begin(), n.output().end());
  for (ValueId v : values) {
    std::string name = name_of(v);
    if (!made.count(name) || returned.count(name)) {
      onnx::NodeProto* id = out_->add_node();
      id->set_op_type("Identity");
      id->add_input(name);
      name = names_.unique(name + "_out");
      id->add_output(name);
    }
    returned.insert(name);
    set_value_info(out_->add_output(), name, g_.type(v));
  }
}

std::string ExportContext::in(int i) { return w_.name_of(node_.operands[static_cast<size_t>(i)]); }
const Type& ExportContext::in_type(int i) const {
  return w_.graph().type(node_.operands[static_cast<size_t>(i)]);
}
std::string ExportContext::out(int i) { return w_.name_of(node_.results[static_cast<size_t>(i)]); }
const Type& ExportContext::out_type(int i) const {
  return w_.graph().type(node_.results[static_cast<size_t>(i)]);
}
void ExportContext::alias(int i, const std::string& name) {
  w_.bind(node_.results[static_cast<size_t>(i)], name);
}

std::string ExportContext::in_as(int i, DType to) {
  if (in_type(i).dtype == to) return in(i);
  onnx::NodeProto& n = add("Cast", {in(i)}, {fresh()});
  add_attr(n, "to", static_cast<int64_t>(onnx_elem_type(to)));
  return n.output(0);
}

std::string ExportContext::out_via(DType via) { return via == out_type().dtype ? out() : fresh(); }

void ExportContext::finish_via(const std::string& y, DType via) {
  if (via == out_type().dtype) return;
  add_attr(add("Cast", {y}, {out()}), "to", static_cast<int64_t>(onnx_elem_type(out_type().dtype)));
}

onnx::NodeProto& ExportContext::add(const std::string& op_type, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = w_.out()->add_node();
  n->set_op_type(op_type);
  const std::string result = node_.results.empty() ? "" : "/" + w_.graph().value(node_.results[0]).name;
  n->set_name(w_.names().unique_node(std::string(op_name(node_.op)) + result));
  if (node_.loc.known()) n->set_doc_string(node_.loc.to_string());
  for (const std::string& s : inputs) n->add_input(s);
  for (const std::string& s : outputs) n->add_output(s);
  return *n;
}

std::string ExportContext::add1(const std::string& op_type, const std::vector<std::string>& inputs) {
  std::string o = fresh();
  add(op_type, inputs, {o});
  return o;
}

std::string ExportContext::fresh(const std::string& hint) { return w_.names().unique(hint); }

std::string ExportContext::constant(const Tensor& t) {
  std::string o = fresh("const");
  add_attr(add("Constant", {}, {o}), "value", t);
  return o;
}

std::string ExportContext::ints(const std::vector<int64_t>& v) {
  return constant(Tensor::from_vector<int64_t>(Shape({static_cast<int64_t>(v.size())}), v));
}

std::string ExportContext::scalar(double v, DType dtype) { return constant(Tensor::scalar(dtype, v)); }

void ExportContext::refuse(const std::string& why) const {
  throw cannot_export(node_, why);
}

// ---- Optional attributes and value infos.

const IntList* optional_ints(const Node& n, std::string_view name) {
  const Attribute* a = n.attr(name);
  return a ? &std::get<IntList>(*a) : nullptr;
}

void set_value_info(onnx::ValueInfoProto* info, const std::string& name, const Type& type) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx_elem_type(type.dtype));
  onnx::TensorShapeProto* s = t->mutable_shape();
  for (int64_t d : type.shape.dims) s->add_dim()->set_dim_value(d);
}

// ---- The model.

namespace {

// The first op with no ONNX form, in `g` or a body, refused before anything else is asked.
void refuse_unexportable(const Graph& g) {
  for (const Node& node : g.nodes()) {
    if (const NoOnnxForm* no = find_refusal(node.op)) {
      throw cannot_export(node, no->reason);
    }
    if (node.body) refuse_unexportable(*node.body);
  }
}

// Inputs: data ones as graph inputs, parameters and state as initializers from `values`.
void write_inputs(const Graph& g, const std::map<std::string, Tensor>& values, GraphWriter& w) {
  for (const Input& in : g.inputs()) {
    const Value& v = g.value(in.value);
    const std::string kind(input_kind_name(in.kind));
    if (!v.type) {
      throw ExportFailure{Error{kind + " input '" + v.name + "' has no type (export a type-inferred graph)",
                                in.loc}};
    }
    const std::string name = w.names().unique(v.name);
    w.bind(in.value, name);
    if (in.kind == InputKind::data) {
      set_value_info(w.out()->add_input(), name, *v.type);
      continue;
    }
    auto it = values.find(v.name);
    if (it == values.end()) {
      throw ExportFailure{Error{"no value given for " + kind + " '" + v.name + "' (" + v.type->to_string() +
                                    "): its initializer needs one",
                                in.loc}};
    }
    if (it->second.type() != *v.type) {
      throw ExportFailure{Error{"the value given for " + kind + " '" + v.name + "' is " +
                                    it->second.type().to_string() + ", but the input is " +
                                    v.type->to_string(),
                                in.loc}};
    }
    onnx::TensorProto* t = w.out()->add_initializer();
    t->set_name(name);
    tensor_to_proto(it->second, t);
  }
}

}  // namespace

StatusOr<onnx::ModelProto> export_onnx(const Graph& g, const std::map<std::string, Tensor>& values,
                                       const ExportOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(kExportIrVersion);
  model.set_producer_name(options.producer);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOpset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(options.graph_name.empty() ? g.name() : options.graph_name);
  NameTable names;
  GraphWriter w(g, graph, names);
  try {
    refuse_unexportable(g);
    write_inputs(g, values, w);
    w.write_nodes();
    w.write_outputs(g.outputs());
  } catch (ExportFailure& f) {
    return std::move(f.error);
  }
  WEFT_RETURN_IF_ERROR(check_onnx_model(model));
  return model;
}

StatusOr<onnx::ModelProto> export_model(const Model& model, const std::map<std::string, Tensor>& values,
                                        const ExportOptions& options) {
  return export_onnx(model.graph(), values, options);
}

StatusOr<WeightlessModel> export_weightless(const Graph& g, const ExportOptions& options) {
  std::map<std::string, Tensor> zeros;
  std::vector<std::string> held;  // the weft value of each initializer (write_inputs' order)
  for (const Input& in : g.inputs()) {
    const Value& v = g.value(in.value);
    if (in.kind == InputKind::data || !v.type) continue;
    zeros.emplace(v.name, Tensor(*v.type));
    held.push_back(v.name);
  }
  WEFT_ASSIGN_OR_RETURN(onnx::ModelProto model, export_onnx(g, zeros, options));
  WeightlessModel w;
  for (int i = 0; i < model.graph().initializer_size(); ++i) {
    onnx::TensorProto& t = *model.mutable_graph()->mutable_initializer(i);
    t.clear_raw_data();
    w.initializers.push_back({held[static_cast<size_t>(i)], t.SerializeAsString()});
  }
  model.mutable_graph()->clear_initializer();
  w.model = model.SerializeAsString();
  return w;
}

Status check_onnx_model(onnx::ModelProto& model) {
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type_val=*/true,
                                                                   /*strict_mode_val=*/1));
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return Error{std::string("the ONNX model fails ONNX's checks: ") + e.what()};
  }
  return Status::ok_status();
}

Status write_onnx_model(const std::string& path, const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return Error{path + ": cannot serialize the ONNX model (protobuf's limit is 2 GiB)"};
  }
  return write_file_atomically(path, bytes);
}

}  // namespace weft::onnx_io

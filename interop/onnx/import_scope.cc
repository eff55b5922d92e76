// The importer's machinery (import_scope.h): NodeContext's methods, and Importer's
// scopes, import-time folding and conversion of each node.
#include "interop/onnx/import_scope.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "interop/onnx/fuse_gelu.h"
#include "interop/onnx/reader.h"
#include "ir/text_util.h"
#include "runtime/reference/interpreter.h"
#include "training/init.h"

namespace weft::onnx_io {
namespace {

// Nodes whose inputs are all known at import time are evaluated then (by the reference
// interpreter), up to this many elements in their inputs and in each output.
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// Whether an ONNX element type is a floating one.
bool is_floating_onnx(int elem_type) {
  return elem_type == onnx::TensorProto::FLOAT || elem_type == onnx::TensorProto::DOUBLE ||
         elem_type == onnx::TensorProto::FLOAT16 || elem_type == onnx::TensorProto::BFLOAT16;
}

// Ops whose result is not a function of their inputs alone.
bool is_random(std::string_view op_type) {
  return op_type.starts_with("Random") || op_type == "Bernoulli" || op_type == "Dropout";
}

// The graph input name of an ONNX initializer or constant: its own, except that an
// all-digit name (old exporters number their values) would clash with the numbers weft
// gives unnamed values, so it becomes `onnx_NAME`.
std::string input_name(const std::string& name) {
  const bool digits = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
  return digits ? "onnx_" + name : name;
}

std::string origin_of(const OnnxFile& file, const std::string& name) {
  return std::filesystem::path(file.path).filename().string() + ":" + name;
}

// Whether `dims` fits the shape `v` declares: none declared, or as many dims with each
// fixed one equal (a symbolic or unknown dim fits any size).
bool fits_declared(const onnx::ValueInfoProto& v, const std::vector<int64_t>& dims) {
  const onnx::TypeProto::Tensor& tt = v.type().tensor_type();
  if (!tt.has_shape()) return true;
  if (tt.shape().dim_size() != static_cast<int>(dims.size())) return false;
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const onnx::TensorShapeProto::Dimension& d = tt.shape().dim(k);
    if (d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() != dims[static_cast<size_t>(k)]) return false;
  }
  return true;
}

// The shape `v` declares as text: "[batch,3,?]" ("?": unknown).
std::string declared_shape(const onnx::ValueInfoProto& v) {
  std::string s = "[";
  const onnx::TensorShapeProto& shape = v.type().tensor_type().shape();
  for (int k = 0; k < shape.dim_size(); ++k) {
    const onnx::TensorShapeProto::Dimension& d = shape.dim(k);
    s += (k ? "," : "") + (d.has_dim_value() && d.dim_value() >= 0 ? std::to_string(d.dim_value())
                           : d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                                          : std::string("?"));
  }
  return s + "]";
}

}  // namespace

// ---------------------------------------------------------------------------
// NodeContext

bool NodeContext::flow_decides_mode() const { return importer_.in_flow(); }

ValueId NodeContext::input(int i) { return importer_.value(*this, i, InputKind::param); }
ValueId NodeContext::state_input(int i) { return importer_.value(*this, i, InputKind::state); }
Type NodeContext::input_type(int i) { return importer_.type(*this, i); }
const Tensor* NodeContext::constant(int i) { return importer_.constant(*this, i); }

void NodeContext::computed_at_run_time(int i, const std::string& what,
                                       const std::string& why) const {
  importer_.note_needs_constant(node_.input(i));
  unsupported(what + " computed at run time" + (why.empty() ? "" : " (" + why + ")"));
}

std::vector<int64_t> NodeContext::ints_input(int i, std::string_view what) {
  const Tensor* t = constant(i);
  if (t == nullptr) {
    computed_at_run_time(i, std::string(what),
                         "weft's shapes are static: it must be a constant or an initializer");
  }
  if (!is_integer(t->dtype())) invalid(std::string(what) + " must hold integers");
  if (t->dtype() == DType::i64) return {t->data<int64_t>(), t->data<int64_t>() + t->numel()};
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  for (int64_t k = 0; k < t->numel(); ++k) out[static_cast<size_t>(k)] = static_cast<int64_t>(t->get_double(k));
  return out;
}

double NodeContext::scalar_input(int i, std::string_view what) {
  const Tensor* t = constant(i);
  if (t == nullptr) computed_at_run_time(i, std::string(what));
  if (t->numel() != 1) invalid(std::string(what) + " must hold one value, not " + t->type().to_string());
  return t->get_double(0);
}

std::vector<SubgraphValue> NodeContext::import_subgraph(const onnx::GraphProto& body,
                                                        std::vector<SubgraphValue> inputs) {
  return importer_.import_subgraph(*this, body, std::move(inputs));
}

ValueId NodeContext::value_of(const SubgraphValue& v) { return importer_.value_of(*this, v); }

void NodeContext::set_output(int i, ValueId v) { importer_.set_output(*this, i, v); }
void NodeContext::set_constant_output(int i, Tensor t) {
  importer_.set_constant_output(*this, i, std::move(t));
}

// ---------------------------------------------------------------------------
// Importer

Importer::Entry& Importer::entry(const NodeContext& n, int i) {
  if (!n.has_input(i)) n.invalid("input " + std::to_string(i) + " is required");
  const std::string& name = n.node().input(i);
  Entry* en = find(name);
  if (en == nullptr) {
    if (const std::string* nc = not_computed(name)) {
      n.unsupported("input '" + name + "' (" + *nc + ", which weft does not compute)");
    }
    n.invalid("input '" + name + "' is used before it is defined");
  }
  return *en;
}

Importer::Entry* Importer::find(const std::string& name) {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
  }
  return nullptr;
}

const std::string* Importer::not_computed(const std::string& name) const {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (auto it = s->not_computed.find(name); it != s->not_computed.end()) return &it->second;
  }
  return nullptr;
}

void Importer::load_initializer(Entry& en, const NodeContext& n) {
  if (en.constant || en.initializer == nullptr) return;
  StatusOr<Tensor> t = tensor_from_proto(*en.initializer, file_.dir);
  if (!t.ok()) n.invalid("initializer: " + t.error().message);
  en.constant = std::move(*t);
}

const Tensor* Importer::constant(const NodeContext& n, int i) {
  Entry& en = entry(n, i);
  load_initializer(en, n);
  return en.constant ? &*en.constant : nullptr;
}

Type Importer::type(NodeContext& n, int i) {
  Entry& en = entry(n, i);
  if (fold_ == nullptr && en.value) return e_.type(*en.value);
  if (const Tensor* t = constant(n, i)) return t->type();
  return n.e().type(*en.value);
}

ValueId Importer::value(NodeContext& n, int i, InputKind initializer_kind) {
  Entry& en = entry(n, i);
  const std::string& name = n.node().input(i);
  if (fold_ != nullptr) {
    // Folding: every input is a constant; give it to the scratch graph as a data input.
    auto it = fold_->values.find(name);
    if (it != fold_->values.end()) return it->second;
    const Tensor* t = constant(n, i);
    ValueId v = fold_->graph.add_input("", t->type());
    fold_->inputs.push_back(*t);
    fold_->values[name] = v;
    return v;
  }
  if (en.value) return *en.value;
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (auto it = s->materialized.find(name); it != s->materialized.end()) return it->second;
  }
  const ValueId v = materialize(name, en, initializer_kind, n);
  Scope& here = scopes_.back();
  const bool local = here.values.count(name) != 0 && &here.values.at(name) == &en;
  if (local || e_.graph().value(v).node < 0) {
    en.value = v;  // a graph input (a parameter, a state) is valid everywhere
  } else {
    // A constant of an enclosing graph, first used inside a subgraph: the op that holds
    // it belongs to the iteration (outline_scan moves it into the loop's body), so it is
    // remembered while this scope lasts.
    here.materialized[name] = v;
  }
  return v;
}

ValueId Importer::materialize(const std::string& name, Entry& en, InputKind initializer_kind,
                              const NodeContext& n) {
  load_initializer(en, n);
  const Tensor& c = *en.constant;
  const Type type = c.type();
  if (en.initializer != nullptr) {
    const InputKind kind = is_floating(type.dtype) ? initializer_kind : InputKind::state;
    Initializer init = Initializer::stored_values(
        type, std::string(static_cast<const char*>(c.raw_data()), c.bytes()), origin_of(file_, name));
    const std::string input = graph_input_name(name, en);
    return kind == InputKind::param ? e_.param(input, type.shape, init, type.dtype)
                                    : e_.state(input, type.shape, init, type.dtype);
  }
  // A computed constant: a `full` when its elements are all equal (and exact as a
  // double), else a state input that holds it.
  bool uniform = c.numel() > 0;
  const double first = uniform ? c.get_double(0) : 0;
  for (int64_t k = 1; uniform && k < c.numel(); ++k) {
    const double v = c.get_double(k);
    uniform = v == first || (std::isnan(v) && std::isnan(first));
  }
  if (uniform && c.dtype() == DType::i64 &&
      static_cast<int64_t>(first) != c.data<int64_t>()[0]) {
    uniform = false;
  }
  if (uniform || c.numel() == 0) return e_.full(type.shape, first, type.dtype);
  Initializer init = Initializer::stored_values(
      type, std::string(static_cast<const char*>(c.raw_data()), c.bytes()), origin_of(file_, name));
  return e_.state(graph_input_name(name, en), type.shape, init, type.dtype);
}

std::string Importer::graph_input_name(const std::string& name, const Entry& en) {
  const std::string base = input_name(name);
  auto top = scopes_.front().values.find(name);
  std::string out = base;
  if (top == scopes_.front().values.end() || &top->second != &en) {
    // A subgraph's value: sibling bodies may use the same name for different values.
    for (int k = 1; input_names_.count(out) || scopes_.front().values.count(out); ++k) {
      out = base + "_" + std::to_string(k);
    }
  }
  input_names_.insert(out);
  return out;
}

void Importer::set_output(const NodeContext& n, int i, ValueId v) {
  if (!n.wants_output(i)) return;
  if (fold_ != nullptr) {
    fold_->outputs.emplace_back(i, v);
    return;
  }
  Entry en;
  en.value = v;
  scopes_.back().values[n.node().output(i)] = std::move(en);
}

void Importer::set_constant_output(const NodeContext& n, int i, Tensor t) {
  if (!n.wants_output(i)) return;
  if (fold_ != nullptr) {
    fold_->constants.emplace_back(i, std::move(t));
    return;
  }
  Entry en;
  en.constant = std::move(t);
  en.foldable = true;
  scopes_.back().values[n.node().output(i)] = std::move(en);
}

bool Importer::try_fold(const onnx::NodeProto& node, const OpConverter& c) {
  if (is_random(node.op_type()) || node.input_size() == 0) return false;
  // A node with a subgraph (Loop, Scan) reads values its inputs do not list.
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return false;
  }
  int64_t elements = 0;
  for (const std::string& name : node.input()) {
    if (name.empty()) continue;
    const Entry* en = find(name);
    if (en == nullptr || !en->foldable) return false;
    if (en->constant) elements += en->constant->numel();
  }
  if (elements > kMaxFoldElements) return false;
  Fold fold;
  fold.emitter = std::make_unique<Emitter>(fold.graph, e_.options());
  fold_ = &fold;
  bool ok = true;
  try {
    NodeContext n(*this, *fold.emitter, node, file_.opset, -1);
    c.convert(n);
  } catch (const BuildFailure&) {
    ok = false;
  }
  fold_ = nullptr;
  if (!ok) return false;
  for (const auto& [i, v] : fold.outputs) {
    if (fold.graph.type(v).numel() > kMaxFoldElements) return false;  // computed when run
    fold.graph.add_output(v);
  }
  StatusOr<reference::RunResult> r = reference::run(fold.graph, fold.inputs);
  if (!r.ok()) return false;  // converted normally, the error shows where it belongs
  for (size_t k = 0; k < fold.outputs.size(); ++k) {
    Entry en;
    en.constant = std::move(r->outputs[k]);
    en.foldable = true;
    scopes_.back().values[node.output(fold.outputs[k].first)] = std::move(en);
  }
  for (auto& [i, t] : fold.constants) {
    Entry en;
    en.constant = std::move(t);
    en.foldable = true;
    scopes_.back().values[node.output(i)] = std::move(en);
  }
  return true;
}

std::string Importer::display_name(const onnx::NodeProto& node, int index) const {
  return (node.name().empty() ? "#" + std::to_string(index) : node.name()) + " (" +
         node.op_type() + ")";
}

void Importer::convert_nodes(const onnx::GraphProto& g) {
  const std::map<int, GeluSpan> gelus = find_gelu_spans(g);
  std::set<int> inside;
  for (const auto& [last, span] : gelus) inside.insert(span.nodes.begin(), span.nodes.end() - 1);
  for (int i = 0; i < g.node_size(); ++i) {
    if (inside.count(i)) continue;
    auto gelu = gelus.find(i);
    if (gelu == gelus.end()) convert(g.node(i), i);
    else convert(gelu_node(g, gelu->second), i, kGeluOpset);
  }
}

void Importer::convert(const onnx::NodeProto& node, int index, int opset) {
  if (opset == 0) opset = file_.opset;
  Location loc = Location::of_file(file_.path);
  e_.push_frame(owner_, display_name(node, index), "", loc);
  NodeContext n(*this, e_, node, opset, index);
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    n.unsupported("domain '" + node.domain() + "'");
  }
  const OpConverter* c = find_converter(node.op_type(), opset);
  if (c == nullptr) {
    const int from = first_converted_opset(node.op_type());
    if (from > 0) {
      n.unsupported("the op type before opset " + std::to_string(from) +
                    " (weft converts it from that opset on)");
    }
    n.unsupported("the op type");
  }
  const Scope& scope = scopes_.back();  // a subgraph may shadow an outer name
  for (const std::string& out : node.output()) {
    if (!out.empty() && (scope.values.count(out) || scope.not_computed.count(out))) {
      n.invalid("output '" + out + "' is already defined (an ONNX graph assigns each name once)");
    }
  }
  // More inputs than ONNX's schema of the op at this opset declares (ONNX's own op table,
  // libonnx; none for the importer's own Gelu): refused, not ignored. An empty name past
  // them is an absent optional input.
  if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "")) {
    const int most = schema->max_input();
    for (int i = most; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;
      const std::string takes = most == 0 ? "no inputs" : "at most " + counted(most, "input");
      n.invalid("it takes " + takes + ", got " + std::to_string(node.input_size()) + " (input " +
                std::to_string(i) + " is '" + node.input(i) + "')");
    }
  }
  if (!try_fold(node, *c)) c->convert(n);
  // An output the converter did not produce (an optional one weft does not compute) is
  // refused where it is used, not here: most models never read them.
  Scope& here = scopes_.back();
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && !here.values.count(node.output(i))) {
      here.not_computed[node.output(i)] = "output " + std::to_string(i) + " of " + n.describe();
    }
  }
  e_.pop_frame();
}

void Importer::add_initializers(const onnx::GraphProto& g) {
  for (const onnx::TensorProto& t : g.initializer()) {
    Entry en;
    en.initializer = &t;
    en.foldable = !is_floating_onnx(t.data_type());
    // A graph assigns each name once; the last of two initializers used to win silently.
    if (!scopes_.back().values.emplace(t.name(), std::move(en)).second) {
      e_.fail(file_.path + ": " + (g.name().empty() ? "the graph" : "graph '" + g.name() + "'") +
              " has two initializers named '" + t.name() + "' (an ONNX graph assigns each name once)");
    }
  }
}

std::vector<SubgraphValue> Importer::import_subgraph(NodeContext& n, const onnx::GraphProto& g,
                                                     std::vector<SubgraphValue> inputs) {
  if (static_cast<int>(inputs.size()) != g.input_size()) {
    n.invalid("its body '" + g.name() + "' takes " + std::to_string(g.input_size()) + " inputs, not " +
              std::to_string(inputs.size()));
  }
  if (g.sparse_initializer_size() > 0) n.unsupported("sparse initializers in its body");
  scopes_.emplace_back();
  add_initializers(g);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Entry en;
    en.value = inputs[k].value;
    en.constant = std::move(inputs[k].constant);
    en.foldable = !en.value.has_value();
    if (!scopes_.back().values.emplace(g.input(static_cast<int>(k)).name(), std::move(en)).second) {
      n.invalid("its body declares input '" + g.input(static_cast<int>(k)).name() + "' twice");
    }
  }
  convert_nodes(g);
  std::vector<SubgraphValue> outputs;
  for (const onnx::ValueInfoProto& out : g.output()) {
    Entry* en = find(out.name());
    if (const std::string* nc = not_computed(out.name())) {
      n.unsupported("its body's output '" + out.name() + "' (" + *nc + ", which weft does not compute)");
    }
    if (en == nullptr) n.invalid("its body's output '" + out.name() + "' is never computed");
    load_initializer(*en, n);
    SubgraphValue v{out.name(), en->value, std::nullopt};
    // A trained initializer is a parameter, never folded into a constant.
    if (!v.value && en->initializer != nullptr && !en->foldable) {
      v.value = materialize(out.name(), *en, InputKind::param, n);
    } else if (!v.value) {
      v.constant = en->constant;
    }
    outputs.push_back(std::move(v));
  }
  scopes_.pop_back();
  return outputs;
}

ValueId Importer::value_of(NodeContext& n, const SubgraphValue& v) {
  if (v.value) return *v.value;
  Entry en;
  en.constant = v.constant;
  return materialize(v.name, en, InputKind::state, n);
}

std::vector<ValueId> Importer::run(const std::vector<ValueId>& inputs) {
  const onnx::GraphProto& g = file_.model.graph();
  auto fail = [&](const std::string& m) { e_.fail(file_.path + ": " + m); };
  if (file_.opset == 0) fail("the model imports no opset of the default ONNX domain");
  if (file_.opset > kMaxOpset) {
    fail("opset " + std::to_string(file_.opset) + " is newer than weft's importer reads (up to " +
         std::to_string(kMaxOpset) + ")");
  }
  if (file_.model.ir_version() > kMaxIrVersion) {
    fail("IR version " + std::to_string(file_.model.ir_version()) + " is newer than weft's importer reads (up to " +
         std::to_string(kMaxIrVersion) + ")");
  }
  if (g.sparse_initializer_size() > 0) fail("sparse initializers are not supported");
  add_initializers(g);
  std::map<std::string, Entry>& values = scopes_.back().values;
  size_t k = 0;
  // Whether every data input has the shape the model declares: then so must its outputs.
  bool inputs_as_declared = true;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (auto it = values.find(in.name()); it != values.end()) {  // an initializer listed as an input (IR < 4)
      const onnx::TensorProto& t = *it->second.initializer;
      const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      if (!fits_declared(in, dims)) {
        fail("input '" + in.name() + "' is declared as " + declared_shape(in) + " but its initializer holds " +
             Shape(dims).to_string() +
             " (an initializer that stands for an input must have its shape)");
      }
      continue;
    }
    if (constant_inputs_ != nullptr && constant_inputs_->count(in.name())) {
      Entry en;
      en.constant = constant_inputs_->at(in.name());
      en.foldable = true;
      values[in.name()] = std::move(en);
      continue;
    }
    if (k >= inputs.size()) fail("the model has more inputs than the " + std::to_string(inputs.size()) + " given");
    Entry en;
    en.value = inputs[k++];
    inputs_as_declared = inputs_as_declared && fits_declared(in, e_.type(*en.value).shape.dims);
    values[in.name()] = std::move(en);
  }
  if (k != inputs.size()) {
    fail(counted(static_cast<int64_t>(inputs.size()), "input") + " given, the model takes " + std::to_string(k));
  }
  convert_nodes(g);
  std::vector<ValueId> outputs;
  for (const onnx::ValueInfoProto& out : g.output()) {
    Entry* found = find(out.name());
    if (const std::string* nc = not_computed(out.name())) {
      fail("the model's output '" + out.name() + "' is " + *nc + ", which weft does not compute");
    }
    if (found == nullptr) fail("output '" + out.name() + "' is never computed");
    Entry& en = *found;
    if (!en.value) {
      onnx::NodeProto identity;
      identity.set_op_type("Identity");
      identity.add_input(out.name());
      NodeContext n(*this, e_, identity, file_.opset, -1);
      en.value = materialize(out.name(), en, InputKind::param, n);
    }
    // The dtype the model declares for an output, where it gives one, is what weft
    // computes: a difference is a broken model (ONNX Runtime refuses to load it) or a
    // converter's mistake, never something to write silently. So is its shape, when the
    // inputs have the shapes the model declares (given other shapes, outputs may differ).
    const int declared = out.type().tensor_type().elem_type();
    const Type computed = e_.type(*en.value);
    if (StatusOr<DType> d = dtype_from_onnx(declared); declared != 0 && (!d.ok() || *d != computed.dtype)) {
      fail("the model declares output '" + out.name() + "' as " +
           (d.ok() ? std::string(dtype_name(*d))
                   : onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(declared))) +
           ", but it computes " + computed.to_string());
    }
    if (inputs_as_declared && !fits_declared(out, computed.shape.dims)) {
      fail("the model declares output '" + out.name() + "' with shape " + declared_shape(out) +
           ", but it computes " + computed.to_string());
    }
    outputs.push_back(*en.value);
  }
  return outputs;
}

}  // namespace weft::onnx_io

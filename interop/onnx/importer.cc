#include "interop/onnx/importer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "interop/onnx/convert.h"
#include "runtime/reference/interpreter.h"
#include "training/init.h"

namespace weft::onnx_io {
namespace {

// Nodes whose inputs are all known at import time are evaluated then (by the reference
// interpreter), up to this many elements in their inputs and in each output.
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// Ops whose result is not a function of their inputs alone.
bool is_floating_onnx(int elem_type) {
  return elem_type == onnx::TensorProto::FLOAT || elem_type == onnx::TensorProto::DOUBLE ||
         elem_type == onnx::TensorProto::FLOAT16 || elem_type == onnx::TensorProto::BFLOAT16;
}

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

}  // namespace

// The state of one import: what each ONNX value name stands for so far.
class Importer {
 public:
  Importer(Emitter& e, const OnnxFile& file, const Module* owner,
           const std::map<std::string, Tensor>* constant_inputs = nullptr,
           std::vector<std::string>* needs_constant = nullptr)
      : e_(e), file_(file), owner_(owner), constant_inputs_(constant_inputs),
        needs_constant_(needs_constant) {}

  std::vector<ValueId> run(const std::vector<ValueId>& inputs);

  // ---- For NodeContext.
  /// Whether the model is a module of a flow (OnnxModel), not a graph of its own.
  bool in_flow() const { return owner_ != nullptr; }
  struct Entry {
    std::optional<ValueId> value;               // its graph value, once it has one
    std::optional<Tensor> constant;             // its value, when known at import time
    const onnx::TensorProto* initializer = nullptr;
    bool foldable = false;  // may be folded into a constant (not a trained weight)
  };
  Entry& entry(const NodeContext& n, int i);
  const Tensor* constant(const NodeContext& n, int i);
  ValueId value(NodeContext& n, int i, InputKind initializer_kind);
  Type type(NodeContext& n, int i);
  void set_output(const NodeContext& n, int i, ValueId v);
  void set_constant_output(const NodeContext& n, int i, Tensor t);
  /// Records (ImportOptions::needs_constant) that the import needs `name` at import time.
  void note_needs_constant(const std::string& name) {
    if (needs_constant_) needs_constant_->push_back(name);
  }
  std::vector<SubgraphValue> import_subgraph(NodeContext& n, const onnx::GraphProto& g,
                                             std::vector<SubgraphValue> inputs);
  ValueId value_of(NodeContext& n, const SubgraphValue& v);

 private:
  // Evaluating one node at import time, in a scratch graph.
  struct Fold {
    Graph graph{"fold"};
    std::unique_ptr<Emitter> emitter;
    std::vector<Tensor> inputs;
    std::map<std::string, ValueId> values;
    std::vector<std::pair<int, ValueId>> outputs;
    std::vector<std::pair<int, Tensor>> constants;
  };

  // The values of one graph: the model's, or a subgraph's (Loop's and Scan's body) while
  // it is imported, whose lookups fall back to the enclosing scopes.
  struct Scope {
    std::map<std::string, Entry> values;
    /// Node outputs that no converter produced, with what they are.
    std::map<std::string, std::string> not_computed;
    /// Constants of enclosing scopes made graph values by an op inside this one.
    std::map<std::string, ValueId> materialized;
  };
  /// The entry named `name`, innermost scope first, or nullptr.
  Entry* find(const std::string& name);
  /// What `name` is when no converter produced it, or nullptr.
  const std::string* not_computed(const std::string& name) const;
  /// Adds the initializers of `g` to the innermost scope.
  void add_initializers(const onnx::GraphProto& g);
  void convert(const onnx::NodeProto& node, int index);
  void load_initializer(Entry& en, const NodeContext& n);
  bool try_fold(const onnx::NodeProto& node, const OpConverter& c);
  ValueId materialize(const std::string& name, Entry& entry, InputKind initializer_kind,
                      const NodeContext& n);
  /// The name of the graph input that holds `name` (`en`): input_name(name) for the
  /// model's own values, made unique for a subgraph's (`c_1`).
  std::string graph_input_name(const std::string& name, const Entry& en);
  std::string display_name(const onnx::NodeProto& node, int index) const;

  Emitter& e_;
  const OnnxFile& file_;
  const Module* owner_;
  const std::map<std::string, Tensor>* constant_inputs_;  ///< ImportOptions::constant_inputs
  std::vector<std::string>* needs_constant_;  ///< ImportOptions::needs_constant
  /// The model's graph, then each subgraph being imported inside it.
  std::vector<Scope> scopes_{1};
  /// The names given to graph inputs so far.
  std::set<std::string> input_names_;
  Fold* fold_ = nullptr;
};

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

void Importer::convert(const onnx::NodeProto& node, int index) {
  Location loc = Location::of_file(file_.path);
  e_.push_frame(owner_, display_name(node, index), "", loc);
  NodeContext n(*this, e_, node, file_.opset, index);
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    n.unsupported("domain '" + node.domain() + "'");
  }
  const OpConverter* c = find_converter(node.op_type(), file_.opset);
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
    scopes_.back().values[t.name()] = std::move(en);
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
  for (int i = 0; i < g.node_size(); ++i) convert(g.node(i), i);
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
  if (g.sparse_initializer_size() > 0) fail("sparse initializers are not supported");
  add_initializers(g);
  std::map<std::string, Entry>& values = scopes_.back().values;
  size_t k = 0;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (values.count(in.name())) continue;  // an initializer listed as an input (IR < 4)
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
    values[in.name()] = std::move(en);
  }
  if (k != inputs.size()) {
    fail(std::to_string(inputs.size()) + " inputs given, the model takes " + std::to_string(k));
  }
  for (int i = 0; i < g.node_size(); ++i) convert(g.node(i), i);
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
    outputs.push_back(*en.value);
  }
  return outputs;
}

// ---------------------------------------------------------------------------
// Entry points

namespace {

// The declared type of graph input `in`, with symbolic dims bound from `dims`.
StatusOr<Type> declared_type(const onnx::ValueInfoProto& in, const std::map<std::string, int64_t>& dims,
                             const Shape* given) {
  const std::string what = "input '" + in.name() + "'";
  if (!in.type().has_tensor_type()) return Error{what + ": only tensor inputs are supported"};
  const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
  StatusOr<DType> dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype.ok()) return Error{what + ": " + dtype.error().message};
  if (given != nullptr) return Type{*dtype, *given};
  if (!tt.has_shape()) {
    return Error{what + " has no declared shape; give it (weftc import --input-shape " + in.name() +
                 "=2x3)"};
  }
  std::vector<int64_t> shape;
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const onnx::TensorShapeProto::Dimension& d = tt.shape().dim(k);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
      continue;
    }
    const std::string sym = d.has_dim_param() ? d.dim_param() : "";
    auto it = sym.empty() ? dims.end() : dims.find(sym);
    if (it == dims.end()) {
      return Error{what + ": dimension " + std::to_string(k) +
                   (sym.empty() ? " is unknown" : " ('" + sym + "') is symbolic") +
                   "; weft's shapes are static: give its size (weftc import " +
                   (sym.empty() ? "--input-shape " + in.name() + "=..." : "--dim " + sym + "=N") + ")"};
    }
    shape.push_back(it->second);
  }
  return Type{*dtype, Shape(shape)};
}

bool is_initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::TensorProto& t : g.initializer()) {
    if (t.name() == name) return true;
  }
  return false;
}

class OnnxModule : public Module {
 public:
  OnnxModule(std::string path, ImportOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}

  std::string describe() const override {
    return "OnnxModel(" + std::filesystem::path(path_).filename().string() + ")";
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (file_ == nullptr) {
      StatusOr<OnnxFile> f = read_onnx_model(path_);
      if (!f.ok()) e.fail(f.error().message);
      file_ = std::make_shared<OnnxFile>(std::move(*f));
    }
    check_inputs(e, inputs);
    Importer importer(e, *file_, this);
    std::vector<ValueId> outputs = importer.run(inputs);
    if (outputs.empty()) e.fail(path_ + ": the model has no outputs");
    return outputs[0];
  }

 private:
  // The flow's values must have the model's dtypes and its static dims; a symbolic dim
  // takes the size it has in the first input that names it.
  void check_inputs(Emitter& e, const std::vector<ValueId>& inputs) {
    const onnx::GraphProto& g = file_->model.graph();
    std::map<std::string, int64_t> bound = options_.dims;
    size_t k = 0;
    for (const onnx::ValueInfoProto& in : g.input()) {
      if (is_initializer(g, in.name()) || k >= inputs.size()) continue;
      const Type got = e.type(inputs[k++]);
      const std::string what = path_ + ": input '" + in.name() + "'";
      StatusOr<DType> dtype = dtype_from_onnx(in.type().tensor_type().elem_type());
      if (!dtype.ok()) e.fail(what + ": " + dtype.error().message);
      if (*dtype != got.dtype) {
        e.fail(what + " is " + std::string(dtype_name(*dtype)) + ", given " + got.to_string());
      }
      if (!in.type().tensor_type().has_shape()) continue;
      const onnx::TensorShapeProto& s = in.type().tensor_type().shape();
      if (s.dim_size() != got.shape.rank()) {
        e.fail(what + " has rank " + std::to_string(s.dim_size()) + ", given " + got.to_string());
      }
      for (int d = 0; d < s.dim_size(); ++d) {
        const auto& dim = s.dim(d);
        int64_t want = dim.has_dim_value() ? dim.dim_value() : -1;
        if (want < 0 && dim.has_dim_param()) {
          auto [it, fresh] = bound.emplace(dim.dim_param(), got.shape[d]);
          want = it->second;
        }
        if (d == 0 && options_.free_batch_dimension) continue;
        if (want >= 0 && want != got.shape[d]) {
          e.fail(what + " has dimension " + std::to_string(d) + " of size " + std::to_string(want) +
                 (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "") + ", given " +
                 got.to_string());
        }
      }
    }
  }

  std::string path_;
  ImportOptions options_;
  std::shared_ptr<const OnnxFile> file_;
};

}  // namespace

std::vector<const onnx::ValueInfoProto*> onnx_data_inputs(const OnnxFile& file) {
  std::vector<const onnx::ValueInfoProto*> out;
  for (const onnx::ValueInfoProto& in : file.model.graph().input()) {
    if (!is_initializer(file.model.graph(), in.name())) out.push_back(&in);
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, Type>>> onnx_input_types(const OnnxFile& file,
                                                                     const ImportOptions& options) {
  const onnx::GraphProto& g = file.model.graph();
  std::vector<std::pair<std::string, Type>> out;
  std::map<std::string, Shape> unused = options.input_shapes;
  std::set<std::string> seen;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (is_initializer(g, in.name())) continue;
    if (in.name().empty()) return Error{file.path + ": the model has an input with no name"};
    if (options.constant_inputs.count(in.name())) {
      StatusOr<DType> declared = dtype_from_onnx(in.type().tensor_type().elem_type());
      if (declared.ok() && *declared != options.constant_inputs.at(in.name()).dtype()) {
        return Error{file.path + ": input '" + in.name() + "' is " + std::string(dtype_name(*declared)) +
                     ", its constant value " + options.constant_inputs.at(in.name()).type().to_string()};
      }
      seen.insert(in.name());
      continue;
    }
    if (!seen.insert(in.name()).second) {
      return Error{file.path + ": the model declares input '" + in.name() + "' twice"};
    }
    auto given = options.input_shapes.find(in.name());
    unused.erase(in.name());
    StatusOr<Type> t = declared_type(in, options.dims,
                                     given == options.input_shapes.end() ? nullptr : &given->second);
    if (!t.ok()) return Error{file.path + ": " + t.error().message};
    out.emplace_back(in.name(), *t);
  }
  if (!unused.empty()) {
    return Error{file.path + ": the model has no input named '" + unused.begin()->first + "'"};
  }
  for (const auto& [name, value] : options.constant_inputs) {
    if (!seen.count(name)) return Error{file.path + ": the model has no input named '" + name + "'"};
  }
  return out;
}

ModulePtr OnnxModel(const std::string& path, ImportOptions options) {
  return std::make_shared<OnnxModule>(path, std::move(options));
}

StatusOr<std::vector<Tensor>> ImportedGraph::inputs_with(
    const std::map<std::string, Tensor>& data) const {
  std::vector<Tensor> all;
  for (const Input& in : graph.inputs()) {
    const std::string& name = graph.value(in.value).name;
    auto it = values.find(name);
    if (it == values.end()) it = data.find(name);
    if (it == data.end()) return Error{"no tensor given for input '" + name + "'"};
    all.push_back(it->second);
  }
  return all;
}

StatusOr<std::map<std::string, Tensor>> name_data_inputs(const OnnxFile& file,
                                                         std::vector<Tensor> tensors) {
  const std::vector<const onnx::ValueInfoProto*> inputs = onnx_data_inputs(file);
  if (inputs.size() != tensors.size()) {
    return Error{std::to_string(tensors.size()) + " inputs given, the model takes " +
                 std::to_string(inputs.size())};
  }
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < inputs.size(); ++k) out.emplace(inputs[k]->name(), std::move(tensors[k]));
  return out;
}

ImportOptions options_with_shapes_of(const std::map<std::string, Tensor>& data,
                                     ImportOptions options) {
  for (const auto& [name, t] : data) options.input_shapes.emplace(name, t.shape());
  return options;
}

StatusOr<ImportedGraph> import_onnx(const OnnxFile& file, const ImportOptions& options,
                                    bool training) {
  WEFT_ASSIGN_OR_RETURN(auto types, onnx_input_types(file, options));
  ImportedGraph out;
  Emitter e(out.graph, BuildOptions{.training = training, .seed = 0});
  try {
    std::vector<ValueId> inputs;
    for (const auto& [name, type] : types) inputs.push_back(out.graph.add_input(name, type));
    Importer importer(e, file, nullptr, &options.constant_inputs, options.needs_constant);
    std::vector<ValueId> outputs = importer.run(inputs);
    e.finish();
    out.graph.set_outputs(std::move(outputs));
  } catch (const BuildFailure& f) {
    return f.error;
  }
  out.params = e.params();
  for (const ParamInfo& p : out.params) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, materialize(p.init, out.graph.type(p.value), /*seed=*/0,
                                                parameter_stream(p.name)));
    out.values.emplace(p.name, std::move(t));
  }
  return out;
}

StatusOr<ImportedGraph> import_onnx(const std::string& path, const ImportOptions& options,
                                    bool training) {
  WEFT_ASSIGN_OR_RETURN(OnnxFile file, read_onnx_model(path));
  return import_onnx(file, options, training);
}

}  // namespace weft::onnx_io

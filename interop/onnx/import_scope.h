#pragma once
// The importer's machinery, shared by its two files: `Importer`, the state of one import
// (its scopes: what each ONNX value name stands for so far, innermost subgraph first; the
// import-time folding of nodes whose inputs are all constants; the nodes' conversion
// through the converter table), which `import_scope.cc` implements with NodeContext's
// methods. The entry points (OnnxModel, import_onnx) are in importer.cc.
// Internal to //interop/onnx:importer.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "interop/onnx/convert.h"
#include "interop/onnx/importer.h"

namespace weft::onnx_io {

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
  /// Converts `node` with the converters of `opset` (0: the model's).
  void convert(const onnx::NodeProto& node, int index, int opset = 0);
  /// Converts the nodes of `g` in order, each GELU the exporter spelled out as one Gelu
  /// (fuse_gelu.h).
  void convert_nodes(const onnx::GraphProto& g);
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

}  // namespace weft::onnx_io

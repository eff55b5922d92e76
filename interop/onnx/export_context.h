#pragma once
// The exporter's insides (exporter.h): ExportContext, what an entry of the op table
// (export_ops.cc) is handed to write one weft node as ONNX nodes, and the table itself.
//
//   // export_ops.cc
//   void log1p(ExportContext& c) {                       // log1p(x) = Log(1 + x)
//     c.add("Log", {c.add1("Add", {c.in(0), c.scalar(1.0, c.in_type(0).dtype)})}, {c.out()});
//   }
//
// Names are unique across the whole model, bodies included (ONNX's scoping rule).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interop/onnx/proto.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

/// An export error thrown from inside the table's entries, returned by export_onnx.
struct ExportFailure {
  Error error;
};

/// Names unique across the model.
class NameTable {
 public:
  /// `base`, or `base_1`, `base_2`... when taken; marks it taken.
  std::string unique(const std::string& base);

 private:
  std::set<std::string> used_;
};

class ExportContext;
using ExportFn = void (*)(ExportContext&);

/// A row of the op table: weft op `op` is written by `fn`; `onnx_op` is the ONNX op type
/// of a one-to-one mapping (read by `direct`), or nullptr.
struct OpExporter {
  Op op;
  const char* onnx_op;
  ExportFn fn;
};

/// An op with no ONNX form, and why.
struct NoOnnxForm {
  Op op;
  const char* reason;
};

/// The table (export_ops.cc): every op is in exactly one of the two (a completeness test).
const OpExporter* find_exporter(Op op);
const NoOnnxForm* find_refusal(Op op);
std::vector<Op> exported_ops();
std::vector<Op> refused_ops();

/// Writes the nodes of a weft graph (the model's, or a body) into an ONNX graph.
class GraphWriter {
 public:
  GraphWriter(const Graph& g, onnx::GraphProto* out, NameTable& names)
      : g_(g), out_(out), names_(names) {}

  /// Gives value `v` the ONNX name `name` (inputs, a body's outer-scope values).
  void bind(ValueId v, const std::string& name) { onnx_names_[v] = name; }
  /// The ONNX name of `v`, made unique from its weft name the first time it is asked.
  const std::string& name_of(ValueId v);
  /// Exports every node; throws ExportFailure.
  void write_nodes();
  /// Adds `values` as the graph's outputs (typed), through Identity nodes where a value
  /// is not made by a node of this graph or is returned twice.
  void write_outputs(const std::vector<ValueId>& values);

  const Graph& graph() const { return g_; }
  onnx::GraphProto* out() { return out_; }
  NameTable& names() { return names_; }
  /// Whether `v` was made by a node of this graph (not an input nor an outer value).
  bool made_here(ValueId v) const { return made_.count(v) > 0; }

 private:
  const Graph& g_;
  onnx::GraphProto* out_;
  NameTable& names_;
  std::map<ValueId, std::string> onnx_names_;
  std::set<ValueId> made_;
  friend class ExportContext;
};

/// One weft node being exported.
class ExportContext {
 public:
  ExportContext(GraphWriter& w, const Node& node, const OpExporter& row)
      : w_(w), node_(node), row_(row) {}

  const Node& node() const { return node_; }
  const OpExporter& row() const { return row_; }
  GraphWriter& writer() { return w_; }
  int num_operands() const { return static_cast<int>(node_.operands.size()); }
  /// Operand i's ONNX name and type.
  std::string in(int i);
  const Type& in_type(int i) const;
  /// Result i's ONNX name and type.
  std::string out(int i = 0);
  const Type& out_type(int i = 0) const;
  /// Result i is the value already named `name` (a fused body's output).
  void alias(int i, const std::string& name);

  /// Appends an ONNX node.
  onnx::NodeProto& add(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs);
  /// Appends a node with one fresh output and returns that output's name.
  std::string add1(const std::string& op_type, const std::vector<std::string>& inputs);
  /// A fresh name for an intermediate value.
  std::string fresh(const std::string& hint = "t");
  /// A Constant node holding `t`; returns its output.
  std::string constant(const Tensor& t);
  /// A 1-D i64 constant (shapes, axes, pads).
  std::string ints(const std::vector<int64_t>& v);
  /// A scalar constant of `dtype`.
  std::string scalar(double v, DType dtype);

  /// Refuses the node: "cannot export 'OP' to ONNX: WHY", at the node's location.
  [[noreturn]] void refuse(const std::string& why) const;

 private:
  GraphWriter& w_;
  const Node& node_;
  const OpExporter& row_;
};

// Attributes of an ONNX node.
void add_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
void add_attr(onnx::NodeProto& n, const std::string& name, float v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void add_attr(onnx::NodeProto& n, const std::string& name, const Tensor& v);
/// A graph attribute (Scan's body); returns the graph to fill.
onnx::GraphProto* add_graph_attr(onnx::NodeProto& n, const std::string& name);

/// A typed ValueInfoProto (graph inputs and outputs).
void set_value_info(onnx::ValueInfoProto* info, const std::string& name, const Type& type);

}  // namespace weft::onnx_io

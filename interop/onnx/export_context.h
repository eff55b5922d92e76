#pragma once
// The exporter's insides (exporter.h): ExportContext, what a row of the export table is
// handed to write one weft node as ONNX nodes, and the table: one file per family
// (export_ops.cc: elementwise and reductions, and the ops with no ONNX form;
// export_ops_movement.cc, export_ops_nn.cc, export_ops_loop.cc), every op in exactly one
// row or refusal (a completeness test).
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
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "interop/onnx/attributes.h"
#include "interop/onnx/proto.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

/// An export error thrown from inside the table's entries, returned by export_onnx.
struct ExportFailure {
  Error error;
};

/// Names unique across the model: of values, and (apart) of nodes.
class NameTable {
 public:
  /// `base`, or `base_1`, `base_2`... when taken; marks it taken.
  std::string unique(const std::string& base) { return unique_in(used_, base); }
  std::string unique_node(const std::string& base) { return unique_in(node_names_, base); }

 private:
  static std::string unique_in(std::set<std::string>& used, const std::string& base);
  std::set<std::string> used_, node_names_;
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

// The families.
std::span<const OpExporter> elementwise_exporters();  // export_ops.cc: elementwise, reductions
std::span<const OpExporter> movement_exporters();     // export_ops_movement.cc: movement, constants
std::span<const OpExporter> nn_exporters();           // export_ops_nn.cc: contractions, windows, composites
std::span<const OpExporter> loop_exporters();         // export_ops_loop.cc: fused, scan

/// The row of `op`, or the reason it has none (export_ops.cc).
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

  // ---- Computing in another dtype than ONNX's op takes (bf16 in f32, bools as u8...).
  /// Operand i as dtype `to` (through a Cast), or as it is when it has that dtype.
  std::string in_as(int i, DType to);
  /// The name for the result computed in dtype `via`: the result's own when `via` is
  /// its dtype, else a fresh value that finish_via casts back to the result's dtype.
  std::string out_via(DType via);
  void finish_via(const std::string& y, DType via);

  /// Appends an ONNX node, named after the weft node (`relu/y`) with its location as
  /// the doc string.
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

// An ONNX node's attributes are written with add_attr and add_graph_attr (attributes.h).

/// A node's optional ints attribute (absent: nullptr).
const IntList* optional_ints(const Node& n, std::string_view name);

/// ONNX's convolutions, pools and ConstantOfShape take no bf16: computed in f32 and
/// rounded back, as weft computes bf16.
inline DType f32_for_bf16(DType dt) { return dt == DType::bf16 ? DType::f32 : dt; }

/// Formulas of several ONNX ops compute f16 and bf16 in f32, rounding once at the end as
/// weft does (rounding each step would differ).
inline DType f32_for_halves(DType dt) { return is_half(dt) ? DType::f32 : dt; }

/// A typed ValueInfoProto (graph inputs and outputs).
void set_value_info(onnx::ValueInfoProto* info, const std::string& name, const Type& type);

}  // namespace weft::onnx_io

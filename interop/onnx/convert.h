#pragma once
// The converter table: how each ONNX op becomes weft ops. One file per op family
// (ops/*.cc) lists its converters; `find_converter` picks the one for a node's op type
// and the model's opset. A converter reads the node's inputs — as graph values, or as
// constants known at import time (shapes, axes, pads) — and its attributes with ONNX's
// defaults, emits weft ops through the Emitter, and sets every output:
//
//   // ops/activation.cc
//   void leaky_relu(NodeContext& n) {
//     n.expect_attrs({"alpha"});
//     Emitter& e = n.e();
//     ValueId x = n.input(0);
//     ValueId slope = e.constant(n.attr_float("alpha", 0.01), e.type(x).dtype);
//     n.set_output(0, e.op(Op::Maximum, {x, e.mul(x, slope)}));   // (alpha < 1)
//   }
//   const OpConverter kActivations[] = {{"LeakyRelu", 6, leaky_relu}, ...};
//
// What a converter cannot express exactly it refuses with `n.unsupported("what")`,
// which names the node, its op type and the opset: never a silent approximation.
// `expect_attrs` refuses any attribute the converter does not read, so an attribute
// added in a later opset is never ignored.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/module.h"
#include "interop/onnx/proto_fwd.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

class Importer;

/// A value of a subgraph (Loop's and Scan's body) as the importer sees it: a graph value,
/// or a constant known at import time.
struct SubgraphValue {
  std::string name;
  std::optional<ValueId> value;
  std::optional<Tensor> constant;
};

/// One ONNX node being converted.
class NodeContext {
 public:
  /// `index`: the node's position in the graph (-1 for nodes made by the importer).
  NodeContext(Importer& importer, Emitter& e, const onnx::NodeProto& node, int opset, int index)
      : importer_(importer), e_(e), node_(node), opset_(opset), index_(index) {}

  Emitter& e() { return e_; }
  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  /// Training behaviour (BatchNorm's batch statistics, Dropout) or inference.
  bool training() const { return e_.training(); }
  /// Whether the flow's mode alone decides training behaviour (an OnnxModel in a flow:
  /// the exported `training_mode` / `is_test` are ignored) or the model's attributes may
  /// ask for it too (import_onnx: a graph of its own does what the model says).
  bool flow_decides_mode() const;

  // ---- Inputs. An absent optional input has an empty name (or lies past the end).
  int num_inputs() const;
  bool has_input(int i) const;
  /// Input i as a graph value. An initializer becomes a parameter (float) or state
  /// (others) named as in the model; a constant becomes a `full` op when all its
  /// elements are equal, else a state input holding it. Refuses an absent input.
  ValueId input(int i);
  /// Input i as a graph value that the step may update but never trains (BatchNorm's
  /// running statistics): an initializer becomes a state input, not a parameter.
  ValueId state_input(int i);
  /// The input's type, whether or not it is a graph value yet.
  Type input_type(int i);
  /// The input's value when known at import time (an initializer, a Constant, or
  /// computed from them, as shape arithmetic is), else nullptr.
  const Tensor* constant(int i);
  /// The input as integers known at import time (Reshape's shape, Slice's starts...);
  /// refuses a computed one, naming `what`.
  std::vector<int64_t> ints_input(int i, std::string_view what);
  /// A scalar (or one-element) input known at import time, as a double.
  double scalar_input(int i, std::string_view what);

  // ---- Attributes, with ONNX's defaults given by the caller.
  bool has_attr(std::string_view name) const { return find_attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t dflt) const;
  double attr_float(std::string_view name, double dflt) const;
  std::string attr_string(std::string_view name, std::string dflt) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> dflt = {}) const;
  std::vector<double> attr_floats(std::string_view name) const;
  const onnx::TensorProto* attr_tensor(std::string_view name) const;
  /// The graph attribute `name` (Loop's and Scan's `body`); refuses a missing one.
  const onnx::GraphProto& attr_graph(std::string_view name) const;
  /// Refuses any attribute not in `known`.
  void expect_attrs(std::initializer_list<std::string_view> known) const;

  // ---- Subgraphs.
  /// Emits `body` once, inline, through the same importer: its inputs are `inputs` in
  /// order (graph values, or constants known at import time), its nodes are converted in
  /// a scope of their own whose lookups fall back to the enclosing graphs (a body node
  /// may read outer values: after Emitter::outline_scan they are the scan's consts).
  /// Returns the body's outputs, in order.
  std::vector<SubgraphValue> import_subgraph(const onnx::GraphProto& body,
                                             std::vector<SubgraphValue> inputs);
  /// `v` as a graph value: a constant becomes a `full` op or a state input, as input() does.
  ValueId value_of(const SubgraphValue& v);

  // ---- Outputs.
  int num_outputs() const;
  /// Whether output i is present (optional outputs have an empty name).
  bool wants_output(int i) const;
  void set_output(int i, ValueId v);
  /// An output whose value is known at import time (Shape, Size, Constant).
  void set_constant_output(int i, Tensor t);

  /// Refuses the node: `node 'Conv_3' (Conv, opset 11): WHAT is not supported`.
  [[noreturn]] void unsupported(const std::string& what) const;
  /// Refuses the node because input i, which it needs at import time, is computed at run
  /// time: `...: WHAT computed at run time (WHY) is not supported`; the input's name goes
  /// to ImportOptions::needs_constant.
  [[noreturn]] void computed_at_run_time(int i, const std::string& what,
                                         const std::string& why = {}) const;
  /// The model is invalid here: `node 'Conv_3' (Conv, opset 11): WHAT`.
  [[noreturn]] void invalid(const std::string& what) const;
  /// `node 'Conv_3' (Conv, opset 11)`.
  std::string describe() const;

 private:
  const onnx::AttributeProto* find_attr(std::string_view name) const;
  const onnx::AttributeProto& typed_attr(std::string_view name, int type) const;

  Importer& importer_;
  Emitter& e_;
  const onnx::NodeProto& node_;
  int opset_;
  int index_;
};

using ConvertFn = void (*)(NodeContext&);

/// One row of the table: `op_type` from opset `since` on (until the next row for the
/// same op type), converted by `convert`.
struct OpConverter {
  const char* op_type;
  int since;
  ConvertFn convert;
};

// The families (ops/*.cc).
std::span<const OpConverter> elementwise_converters();  // ops/elementwise.cc
std::span<const OpConverter> activation_converters();   // ops/activation.cc
std::span<const OpConverter> nn_converters();           // ops/nn.cc: convolutions
std::span<const OpConverter> pool_converters();         // ops/pool.cc
std::span<const OpConverter> norm_converters();         // ops/norm.cc: batch/layer/instance norm, dropout
std::span<const OpConverter> loss_converters();         // ops/loss.cc
std::span<const OpConverter> linalg_converters();       // ops/linalg.cc
std::span<const OpConverter> reduce_converters();       // ops/reduce.cc
std::span<const OpConverter> tensor_converters();       // ops/tensor.cc
std::span<const OpConverter> indexing_converters();     // ops/indexing.cc: gather, pad, one-hot...
std::span<const OpConverter> control_converters();      // ops/control.cc: Scan, Loop
std::span<const OpConverter> rnn_converters();          // ops/rnn.cc: RNN, GRU, LSTM

/// The newest converter of `op_type` whose `since` is at most `opset`, or nullptr.
const OpConverter* find_converter(std::string_view op_type, int opset);
/// The first opset from which `op_type` has a converter; 0 when it has none.
int first_converted_opset(std::string_view op_type);

/// The highest opset of the default domain the importer knows.
inline constexpr int kMaxOpset = 17;
/// The newest ONNX IR version the importer knows (ONNX 1.12's, the one of opset 17).
inline constexpr int64_t kMaxIrVersion = 8;

}  // namespace weft::onnx_io

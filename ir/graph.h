#pragma once
// The graph IR: typed SSA values, nodes (op + operands + attributes + location), named
// inputs with a kind (data / param / state) and ordered outputs. Nodes are kept in a
// valid topological order: every operand is a graph input or the result of an earlier
// node.
//
// A tiny example, f(x) = relu(x·w + b), built by hand:
//
//   weft::Graph g("f");
//   auto x = g.add_input("x", {DType::f32, {4, 6}});
//   auto w = g.add_input("w", {DType::f32, {6, 5}}, InputKind::param);
//   auto b = g.add_input("b", {DType::f32, {5}}, InputKind::param);
//   auto h = g.add_node(Op::Matmul, {x, w});
//   auto y = g.add_node(Op::Relu, {g.add_node(Op::Add, {h, b})});
//   g.add_output(y);
//
// whose text form (ir/text.h) is
//
//   graph @f(%x: f32[4,6], %w: f32[6,5] {param}, %b: f32[5] {param}) -> (f32[4,5]) {
//     %0 = matmul(%x, %w) : f32[4,5]
//     %1 = add(%0, %b) : f32[4,5]
//     %2 = relu(%1) : f32[4,5]
//     return %2
//   }

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/location.h"
#include "ir/op.h"
#include "ir/shape.h"

namespace weft {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

enum class InputKind { data, param, state };
std::string_view input_kind_name(InputKind kind);  ///< "data", "param", "state"
std::optional<InputKind> parse_input_kind(std::string_view name);

class Graph;

struct Value {
  std::string name;           ///< Unique within the graph, printed as `%name`.
  std::optional<Type> type;   ///< Unknown until shape inference (or declared in text).
  int node = -1;              ///< Index of the producing node; -1 for a graph input.
};

/// How deep bodies may nest: a `fused` or `scan` node's body is at depth 1, a body node's
/// body at depth 2, and so on. The readers (the .wir parser, the JSON reader) refuse deeper
/// graphs, so that a hostile file cannot overflow the stack of passes that recurse into
/// bodies; the JSON reader's cap on JSON nesting is what the writer needs at this depth.
/// No real graph comes near it.
inline constexpr int kMaxBodyDepth = 256;

struct Node {
  Op op;
  std::vector<ValueId> operands;
  Attrs attrs;                  ///< Only attributes that were given; defaults are implied.
  std::vector<ValueId> results; ///< One value, or none for statements such as assign.
  Location loc;
  /// `fused`: the kernel's body, a graph whose inputs are the node's operands (same
  /// types, in order) and whose outputs are the node's results (same types, in order).
  /// `scan`: the loop's body (ir/ops.def: one iteration's inputs and outputs).
  std::shared_ptr<const Graph> body = nullptr;

  ValueId result() const { return results.empty() ? kNoValue : results[0]; }
  const OpInfo& info() const { return op_info(op); }

  /// The attribute if given, else its schema default; nullptr if neither exists.
  const Attribute* attr(std::string_view name) const;
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  // Typed accessors: the attribute (or its default) must exist and have that kind; the
  // verifier guarantees this for schema attributes, so a violation is an internal error.
  int64_t int_attr(std::string_view name) const;
  double float_attr(std::string_view name) const;
  const std::string& str_attr(std::string_view name) const;
  bool bool_attr(std::string_view name) const;
  DType dtype_attr(std::string_view name) const;
  const IntList& ints_attr(std::string_view name) const;
};

struct Input {
  ValueId value;
  InputKind kind = InputKind::data;
  Location loc;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  /// Where the graph's header is (the `graph` keyword of a `.wir` file); unknown for
  /// built graphs. Errors about the whole graph, such as a signature that does not
  /// match the outputs, point here.
  const Location& loc() const { return loc_; }
  void set_loc(Location loc) { loc_ = std::move(loc); }

  /// Adds a named graph input. `name` must be unique (empty: a fresh numeric name).
  ValueId add_input(std::string name, Type type, InputKind kind = InputKind::data,
                    Location loc = {});
  /// Appends a node and returns its result (kNoValue for ops with no result). The result
  /// is named `result_name`, or gets a fresh numeric name when that is empty; its type
  /// is `type` if given, else unknown until shape inference.
  ValueId add_node(Op op, std::vector<ValueId> operands, Attrs attrs = {}, Location loc = {},
                   std::optional<Type> type = std::nullopt, std::string result_name = "");
  /// Gives node `node` one more result (only `fused` and `scan` nodes have several: one
  /// per output of their body) and returns it; naming and typing as in add_node.
  ValueId add_result(int node, std::string result_name = "",
                     std::optional<Type> type = std::nullopt);
  void add_output(ValueId v) { outputs_.push_back(v); }
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  Node& node(int i) { return nodes_[i]; }
  const Node& node(int i) const { return nodes_[i]; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& mutable_outputs() { return outputs_; }

  int num_values() const { return static_cast<int>(values_.size()); }
  const Value& value(ValueId v) const { return values_[v]; }
  Value& mutable_value(ValueId v) { return values_[v]; }
  /// The value's type; it must be known (an internal error otherwise).
  const Type& type(ValueId v) const;
  std::optional<ValueId> find_value(std::string_view name) const;
  /// The index in inputs() of the input whose value is `v`, or -1.
  int input_index(ValueId v) const;
  /// A numeric name not used by any value yet.
  std::string fresh_name();

  /// Output types declared in the text header (`-> (f32[4,5])`); empty when none were.
  const std::vector<Type>& declared_output_types() const { return declared_outputs_; }
  void set_declared_output_types(std::vector<Type> types) { declared_outputs_ = std::move(types); }

  /// Replaces every use of `from` (node operands and graph outputs) with `to`.
  void replace_all_uses(ValueId from, ValueId to);
  /// Keeps the nodes whose `keep` entry is true, in order. Values of removed nodes stay
  /// allocated but have no producer and must have no remaining uses.
  void remove_nodes(const std::vector<bool>& keep);
  /// Reorders the nodes into a topological order, keeping the current order wherever it
  /// already is one: a node whose operands are not all defined yet waits until they are.
  /// For passes that append a node and redirect earlier uses to it.
  void sort_topologically();
  /// Number of uses of each value, counting graph outputs.
  std::vector<int> use_counts() const;

 private:
  ValueId new_value(std::string name, std::optional<Type> type, int node);

  std::string name_;
  Location loc_;
  std::vector<Value> values_;
  std::vector<Input> inputs_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
  std::vector<Type> declared_outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
  int next_fresh_ = 0;
};

/// True when the graphs are identical up to value numbering: same name, inputs (names,
/// kinds, types), nodes (ops, operands, attributes, result names and types, locations)
/// and outputs. On a difference, `why` (if given) says where the first one is. The
/// graph's own `loc()` is not compared: it says where a copy was read from.
bool structurally_equal(const Graph& a, const Graph& b, std::string* why = nullptr);

}  // namespace weft

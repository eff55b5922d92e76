#pragma once
// Modules and the Emitter they write IR through.
//
// A module is a building block of a network (Linear, GELU, a whole built flow, ...). It
// knows how to emit its computation as IR nodes, given the values flowing into it:
//
//   class Scale : public UnaryModule {
//    public:
//     explicit Scale(double s) : s_(s) {}
//     std::string describe() const override { return "Scale(" + format_float(s_) + ")"; }
//     ValueId forward1(Emitter& e, ValueId x) override {
//       return e.mul(x, e.constant(s_, e.type(x).dtype));
//     }
//    private:
//     double s_;
//   };
//
// Modules are held by shared pointer (`ModulePtr`); using one instance in several places
// shares its parameters. Every node a module emits carries the location of the builder
// call that placed the module and its builder path (`encoder > split[1] >
// Linear(256->10)`); a shape error inside a module is a user error pointing there.

#include <cstdint>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/initializer.h"
#include "ir/status.h"

namespace weft {

class Emitter;

/// The IR location of a C++ call site (file, line, column; no builder path).
Location to_location(const std::source_location& loc);

class Module {
 public:
  virtual ~Module() = default;
  /// A short description for builder paths and errors: `Linear(256->10)`.
  virtual std::string describe() const = 0;
  /// Emits the module on `inputs`: the stream first, then any values named by `uses`.
  /// Returns the output value. Errors are reported with `Emitter::fail`.
  virtual ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) = 0;
};

using ModulePtr = std::shared_ptr<Module>;

/// A module with exactly one input (most of them).
class UnaryModule : public Module {
 public:
  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) final;
  virtual ValueId forward1(Emitter& e, ValueId x) = 0;
};

/// How a graph is built: training or evaluation behaviour (BatchNorm statistics,
/// Dropout), and the seed of the parameter initializers.
struct BuildOptions {
  bool training = true;
  uint64_t seed = 0;
};

/// One parameter or state input created by a module.
struct ParamInfo {
  std::string name;        ///< Stable path name: `encoder.0.weight`, a checkpoint key.
  ValueId value;           ///< The graph input.
  InputKind kind;          ///< param (trained) or state (e.g. running statistics).
  Initializer init;
  std::string label_path;  ///< The labels enclosing the module: `encoder.scan`, or "".
  /// A forward reference's state (`TAG.state`: a tag read before it is defined, carried
  /// from one step to the next); Trainer::reset_state() zeroes these.
  bool carried = false;
};

/// User errors inside Emitter calls unwind to the builder's `build`, which returns
/// them; modules never see this type.
struct BuildFailure {
  Error error;
};

/// One loop iteration emitted inline, to be turned into a `scan` node's body
/// (Emitter::outline_scan). The nodes from `first_node` on are the iteration.
struct ScanRegion {
  int first_node = 0;
  int64_t length = 1;  ///< 0: no iteration runs (outline_scan drops it).
  bool remat = false;
  std::vector<ValueId> carries;       ///< Initial carries, read by the iteration as its state.
  std::vector<ValueId> next_carries;  ///< What the iteration computed for each carry.
  std::vector<ValueId> slices;        ///< Values the iteration read as one slice of xs[j]...
  std::vector<ValueId> xs;            ///< ...and the stacked [length, ...] operands.
  std::vector<ValueId> ys;            ///< Per-iteration outputs, stacked as results.
  int64_t stop = -1;  ///< A bool[] carry: the loop ends once it is true (scan's `stop`).
  /// The iterations run from length-1 down to 0 (scan's `reverse`): slot i of xs and ys
  /// is still iteration i's.
  bool reverse = false;
};

/// Writes IR for modules: ops with immediate shape inference, parameters shared per
/// module instance, and the location/path bookkeeping the builder sets up.
class Emitter {
 public:
  Emitter(Graph& graph, BuildOptions options);

  // ---- Ops. Each infers its result type at once; a shape error fails the build
  // ---- naming the op, both shapes, the builder call's file:line and the builder path.
  ValueId op(Op op, std::vector<ValueId> operands, Attrs attrs = {});
  ValueId add(ValueId a, ValueId b) { return op(Op::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(Op::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(Op::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(Op::Div, {a, b}); }
  ValueId matmul(ValueId a, ValueId b) { return op(Op::Matmul, {a, b}); }
  ValueId reshape(ValueId x, IntList shape) { return op(Op::Reshape, {x}, {{"shape", shape}}); }
  ValueId transpose(ValueId x, IntList perm) { return op(Op::Transpose, {x}, {{"perm", perm}}); }
  /// Swaps the last two axes.
  ValueId transpose_last2(ValueId x);
  ValueId sum(ValueId x, IntList axes, bool keepdims = false);
  ValueId mean(ValueId x, IntList axes, bool keepdims = false);
  /// A scalar constant of `dtype`.
  ValueId constant(double value, DType dtype = DType::f32);
  /// A constant tensor filled with `value`.
  ValueId full(Shape shape, double value, DType dtype = DType::f32);

  // By value on purpose: emitting a parameter adds a graph value, which would leave a
  // reference into the graph's value table dangling.
  Type type(ValueId v) const { return graph_.type(v); }
  Shape shape(ValueId v) const { return graph_.type(v).shape; }
  int rank(ValueId v) const { return graph_.type(v).shape.rank(); }

  // ---- Parameters and state of the module being emitted. The first call for a
  // ---- (module instance, name) pair creates a graph input named by the module's
  // ---- path (`encoder.0.weight`); later calls, from other uses of the same instance,
  // ---- return the same input.
  ValueId param(std::string_view name, Shape shape, Initializer init, DType dtype = DType::f32);
  ValueId state(std::string_view name, Shape shape, Initializer init, DType dtype = DType::f32);
  /// The state of tag `tag` read before it is defined (FlowBuilder's forward references):
  /// `TAG.state`, zeros at first, marked ParamInfo::carried.
  ValueId carried_state(const std::string& tag, const Type& type);
  /// `assign(target, value)`: after the step, the param/state `target` holds `value`.
  void assign(ValueId target, ValueId value);

  bool training() const { return options_.training; }
  const BuildOptions& options() const { return options_; }
  /// A fresh i64[2] Philox key (seed, offset) for one random op. Keys derive from the
  /// graph's `rng` state input, which the step advances, so each call site and each
  /// step draws different numbers.
  ValueId random_key();

  /// Called once after the whole graph is emitted: advances the `rng` state if any
  /// random op drew from it.
  void finish();

  /// Nodes emitted so far: where a loop iteration about to be emitted starts.
  int num_nodes() const { return static_cast<int>(graph_.nodes().size()); }
  /// Moves the iteration's nodes (region.first_node on) into the body of one `scan` node
  /// (ir/ops.def), whose consts are the outer values they read, and returns its results:
  /// the last carries, then the stacked ys. Fails the build when the iteration assigns
  /// state (BatchNorm's statistics, a forward reference) or a carry changes type. A
  /// region of length 0 runs no iteration: its nodes are dropped and the results are the
  /// initial carries and ys stacked zero times (`full` of [0, ...]), with no `scan` node
  /// (which has at least one slot).
  std::vector<ValueId> outline_scan(const ScanRegion& region);

  /// Fails the build with a user error at the current builder call and path.
  [[noreturn]] void fail(const std::string& message) const;

  // ---- Used by the builder.
  /// Runs `m` on `inputs` inside a new frame: `path_part` extends the builder path
  /// (`Linear(256->10)`, `split[1]`), `name_part` the parameter names (`3`, `encoder`),
  /// `loc` is the builder call. A module already on the frame stack is a cycle.
  ValueId emit(const ModulePtr& m, const std::vector<ValueId>& inputs, std::string path_part,
               std::string name_part, std::source_location loc);
  /// Enters/leaves a frame without running a module (flows use it for split branches).
  void push_frame(const Module* m, std::string path_part, std::string name_part,
                  std::source_location loc, bool is_label = false);
  /// The same, with the location given as data: where the nodes of an imported model
  /// come from (`resnet18.onnx`, and the ONNX node in the builder path).
  void push_frame(const Module* m, std::string path_part, std::string name_part, Location loc);
  void pop_frame();
  /// The builder path of the current frame: `encoder > split[1] > Linear(256->10)`.
  std::string path() const;
  /// The labels of the enclosing frames, dot-joined: `encoder.scan`.
  std::string label_path() const;
  Location location() const;

  Graph& graph() { return graph_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  /// The label path of the module that emitted each node, by node index.
  const std::vector<std::string>& node_label_paths() const { return node_labels_; }
  /// Records a tag for drawing: `name` prefixed by the enclosing labels (`encoder.hidden`).
  void note_tag(const std::string& name, ValueId value);
  const std::vector<std::pair<std::string, ValueId>>& tags() const { return tags_; }

 private:
  struct Frame {
    const Module* module;
    std::string path_part;
    std::string name_part;
    Location loc;  ///< Without the builder path (location() adds it).
    bool is_label;
  };
  ValueId persistent(std::string_view name, Shape shape, Initializer init, DType dtype,
                     InputKind kind);
  std::string param_prefix() const;
  /// Removes the nodes from `first_node` on, with their tags and labels.
  void drop_nodes_from(int first_node);

  Graph& graph_;
  BuildOptions options_;
  std::vector<Frame> frames_;
  std::vector<ParamInfo> params_;
  std::vector<std::string> node_labels_;
  std::map<std::pair<const Module*, std::string>, ValueId> shared_;
  std::vector<std::pair<std::string, ValueId>> tags_;
  ValueId rng_state_ = kNoValue;
  int random_calls_ = 0;
};

}  // namespace weft

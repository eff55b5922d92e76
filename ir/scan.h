#pragma once
// Building `scan` nodes (ir/ops.def): a loop whose body is a graph of its own.
//
//   Graph body("step");                                   // one iteration: h' = tanh(h·w)
//   ValueId w = body.add_input("w", f32[4,4]), h = body.add_input("h", f32[2,4]);
//   body.add_output(add_typed_node(body, Op::Tanh, {add_typed_node(body, Op::Matmul, {h, w})}));
//   auto r = add_scan(g, {w_outer, h0}, {.length = 10, .carries = 1, .consts = 1}, body, loc);
//   // r->at(0): h after 10 iterations
//
// Operands are the consts, then the initial carries, then the xs ([length, ...] each);
// results are the last carries, then the body's per-iteration outputs stacked on a
// leading axis of `length`. Types follow the scan shape rule (ir/shape_rules.h).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct ScanShape {
  int64_t length = 1;
  int64_t carries = 0;
  int64_t consts = 0;
  bool reverse = false;
  bool remat = false;
  int64_t stop = -1;    ///< A bool[] carry: the loop stops once it is true (ir/ops.def).
  int64_t active = -1;  ///< A bool[length] xs: iteration i runs only where it is true.
};

/// Which iterations of scan node `n` run: -1 when every one does (no `stop` or `active`),
/// else the carry (`stop`) or the operand (`active`, an index into n.operands) that
/// decides. The reference interpreter, the CPU runtime and mask-loop-exits read it.
struct ScanExit {
  int64_t stop_carry = -1;     ///< Index among the carries.
  int64_t active_operand = -1; ///< Index among the operands.
  bool any() const { return stop_carry >= 0 || active_operand >= 0; }
};
ScanExit scan_exit(const Node& n);

/// Copies node `n` of graph `src` to the end of `out`: operands through `map` (src value
/// -> out value), the same op, attributes, location, types and body; records its results
/// in `map`, named `name(src result)` (empty: a fresh name). The loop transforms (unrolling,
/// hoisting, a loop's gradient, outlining) rebuild graphs with it.
void copy_node(Graph& out, const Graph& src, const Node& n, std::vector<ValueId>& map,
               const std::function<std::string(ValueId)>& name);

/// Appends to `out` loop `n` of `src` with new `operands` (values of `out`), `attrs` and
/// `body`, keeping the results `keep` (indices into n.results, in order; typed and named
/// as in `src`), recorded in `map`. The loop transforms that change a loop's interface
/// (hoisting consts, pruning results) rebuild it with this.
void copy_loop(Graph& out, const Graph& src, const Node& n, std::vector<ValueId> operands, Attrs attrs,
               std::shared_ptr<const Graph> body, const std::vector<size_t>& keep, std::vector<ValueId>& map);

/// A body (a loop's, or a fused kernel's) rebuilt with new or retyped parameters, for
/// the transforms that change what a body reads (hoisting casts or invariants out of a
/// loop, rotating a carry's cast into a carry of its own, folding a slice or a producer
/// into a kernel) or adds to what it returns (a loop's gradient stacking forward values):
/// they choose the parameters one by one, drop the nodes those parameters replace, and
/// copy the rest of the body as it was.
///
///   BodyRebuilder b(body);                       // %w: f32, %h; %c = cast(%w) {dtype=bf16}
///   b.replace(c, b.input(0, DType::bf16));       // %w: bf16 now, read where %c was
///   b.input(1);
///   b.copy_nodes();                              // every node but %c, names kept
///   Graph rebuilt = std::move(b).finish();       // body's outputs, through the map
class BodyRebuilder {
 public:
  /// An empty body with `src`'s name and location. With `renumber`, src's numeric names
  /// (the parser's and fresh ones) are not kept: the new body numbers those values
  /// afresh, among the parameters and nodes the caller adds unnamed.
  explicit BodyRebuilder(const Graph& src, bool renumber = false);

  /// Adds src's parameter `k` with its name, kind and location, and its type, or its
  /// shape in `dtype` where that is given.
  ValueId input(size_t k, std::optional<DType> dtype = std::nullopt);
  /// Adds src's parameter `k` with its name, kind and location, typed `type`: a wider
  /// value whose window the new body reads where src read the parameter (read_as).
  ValueId input(size_t k, Type type);
  /// Adds src's parameters `from` to `to` (exclusive) as they are.
  void inputs(size_t from, size_t to);
  /// Adds a parameter named and typed as src's value `v` (a node's result), which the
  /// new body reads where src read `v`.
  ValueId input_for(ValueId v, InputKind kind = InputKind::data, Location loc = {});
  /// src's node `node` is not copied; the new body reads `v` where src read its result.
  void replace(int node, ValueId v);
  /// src's node `node` is not copied (a result still read needs an input_for).
  void skip(int node);
  /// The new body reads `v` where src read its value `src_value` (a parameter, say, read
  /// through a slice of a wider one).
  void read_as(ValueId src_value, ValueId v) { map_[src_value] = v; }
  /// Copies src's nodes, except those replaced or skipped, in order, with their names.
  void copy_nodes();

  /// The new body's value for src's `v`.
  ValueId operator[](ValueId v) const { return map_[v]; }
  /// The new body as built so far (for outputs of the caller's own).
  Graph& graph() { return out_; }
  /// The new body returning src's outputs, with src's declared output types.
  Graph finish() &&;

 private:
  /// src's name for `v`, or empty (a fresh number) where renumbering drops it.
  std::string name(ValueId v) const;

  const Graph& src_;
  const bool renumber_;
  Graph out_;
  std::vector<ValueId> map_;   ///< src's values to the new body's.
  std::vector<bool> dropped_;  ///< src's nodes not to copy.
};

/// The start of a transform that rebuilds `g`: an empty graph with g's name, location and
/// inputs; `map` (g's values to the new graph's) holds the inputs.
Graph rebuild_inputs(const Graph& g, std::vector<ValueId>& map);

/// Its end: `out` returns g's outputs (through `map`) with g's declared output types, and
/// replaces `g`.
void rebuild_outputs(Graph& g, Graph out, const std::vector<ValueId>& map);

/// The attributes of a scan node of that shape.
Attrs scan_attrs(const ScanShape& shape);

/// Appends a typed `scan` node with body `body` (typed, with one input per operand) and
/// returns all its results. A body that does not fit the operands is an error from the
/// shape rule, at `loc`.
StatusOr<std::vector<ValueId>> add_scan(Graph& g, std::vector<ValueId> operands,
                                        const ScanShape& shape,
                                        std::shared_ptr<const Graph> body, Location loc);

}  // namespace weft

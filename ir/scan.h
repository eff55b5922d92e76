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

// (family: control) ONNX's loops as weft's `scan` (ir/ops.def): Scan (Scan-8's batched
// form as a loop over the batch around the scan) and Loop with a constant trip count;
// and If (the branch a constant condition picks, or both and a `select`).
// The body is imported as ONE iteration, inline, through the same importer
// (NodeContext::import_subgraph: its nodes may read outer values), on stand-ins for the
// carries and for one slice of each scanned input; then Emitter::outline_scan turns that
// iteration into one `scan` node whose consts are the outer values it read:
//
//   Scan(h0, xs) {body(h, x) -> (h', y)}   ->   %h, %ys = scan(<outer values>, %h0, %xs)
//
// weft's shapes are static: a carry keeps its type from one iteration to the next and
// the trip count is known at import time. A Loop's condition computed at run time (in
// its body, or its initial one) becomes the scan's `stop` carry (its negation), so the
// carries keep the values of the iteration where ONNX's loop ends; a loop with such an
// exit and scan outputs is refused, since those would end early (weft's `stop` leaves
// zero-filled slots instead). A Loop with M = 0, or a Scan over sequences of length 0,
// runs no iteration: its body is imported (for its outputs' types) and dropped, and its
// outputs are the initial states and scan outputs of length 0, with no `scan` (which has
// at least one slot; Emitter::outline_scan of a region of length 0).
#include <algorithm>
#include <string>
#include <vector>

#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"

namespace weft::onnx_io {
namespace {
namespace control {  // this file's names, apart in the importer's unity units

// A graph value of its own equal to `v`: a carry's initial value that the body may also
// read from the outer scope (it must stay a const there) — a same-shape reshape.
ValueId stand_in(Emitter& e, ValueId v) { return e.reshape(v, e.shape(v).dims); }

// Slot 0 of `xs` along its first axis, without that axis: a stand-in for the slice one
// iteration reads.
ValueId first_slot(Emitter& e, ValueId xs) {
  const Shape s = e.shape(xs);
  IntList start(static_cast<size_t>(s.rank()), 0), stop = s.dims;
  stop[0] = 1;
  const ValueId one = e.op(Op::Slice, {xs}, {{"start", start}, {"stop", stop}});
  return e.reshape(one, IntList(s.dims.begin() + 1, s.dims.end()));
}

// `x` with its first axis turned around.
ValueId flip_first(Emitter& e, ValueId x) {
  const int64_t n = e.shape(x)[0];
  const ValueId iota = e.op(Op::Iota, {}, {{"shape", IntList{n}}, {"axis", int64_t{0}}, {"dtype", DType::i64}});
  const ValueId index = e.sub(e.constant(static_cast<double>(n - 1), DType::i64), iota);
  return e.op(Op::Gather, {x, index}, {{"axis", int64_t{0}}});
}

// The permutation of a rank-`rank` tensor that moves axis `from` to position `to`.
IntList move_axis(int64_t rank, int64_t from, int64_t to) {
  IntList perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != from) perm.push_back(d);
  }
  perm.insert(perm.begin() + to, from);
  return perm;
}

// An axis attribute entry in [-rank, rank), made non-negative.
int64_t normalize_axis(NodeContext& n, const std::string& what, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    n.invalid(what + " is " + std::to_string(axis) + ", out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// An attribute of one entry per scanned input or output (default all zeros).
std::vector<int64_t> per_entry(NodeContext& n, const char* name, size_t count) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count) {
    n.invalid("attribute '" + std::string(name) + "' has " + std::to_string(v.size()) + " entries for " +
              std::to_string(count));
  }
  return v;
}

// The next carries the body computed, as values of the carries' types.
std::vector<ValueId> next_carries(NodeContext& n, const std::vector<SubgraphValue>& outs, size_t first,
                                  const std::vector<ValueId>& carries, const std::vector<std::string>& names) {
  Emitter& e = n.e();
  std::vector<ValueId> next;
  for (size_t k = 0; k < carries.size(); ++k) {
    const ValueId v = n.value_of(outs[first + k]);
    if (e.type(v) != e.type(carries[k])) {
      n.unsupported("a body that changes its loop-carried value '" + names[k] + "' from " +
                    e.type(carries[k]).to_string() + " to " + e.type(v).to_string() +
                    " (weft's loop carries keep their type)");
    }
    next.push_back(v);
  }
  return next;
}

// Whether `g` or a subgraph of it reads the value `name`.
bool reads(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& in : node.input()) {
      if (in == name) return true;
    }
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g() && reads(a.g(), name)) return true;
      for (const onnx::GraphProto& sub : a.graphs()) {
        if (reads(sub, name)) return true;
      }
    }
  }
  for (const onnx::ValueInfoProto& out : g.output()) {
    if (out.name() == name) return true;
  }
  return false;
}

// The loop of a Scan: `body` maps (the states, one slot of each xs) to (the next
// states, `k_out` outputs); `xs` are [length, ...], read from slot 0 up. Returns the
// last states, then the outputs stacked in iteration order.
std::vector<ValueId> scan_loop(NodeContext& n, const onnx::GraphProto& body, const std::vector<ValueId>& initial,
                               const std::vector<ValueId>& xs, int64_t k_out) {
  Emitter& e = n.e();
  std::vector<ValueId> carries, slices;
  std::vector<std::string> names;
  for (size_t i = 0; i < initial.size(); ++i) {
    carries.push_back(stand_in(e, initial[i]));
    names.push_back(body.input(static_cast<int>(i)).name());
  }
  const int64_t length = e.shape(xs[0])[0];
  for (ValueId x : xs) {
    if (e.shape(x)[0] != length) {
      n.invalid("scanned inputs of " + std::to_string(length) + " and " + std::to_string(e.shape(x)[0]) +
                " iterations");
    }
  }
  // Each slice the iteration reads, before it. Sequences of length 0 run no iteration,
  // as a Loop with M = 0: the body is imported on zeros standing in for a slot, put
  // inside the region so that outline_scan drops them with it (the states come out as
  // their initial values, the outputs with length 0).
  ScanRegion region;
  region.length = length;
  if (length == 0) region.first_node = e.num_nodes();
  for (ValueId x : xs) {
    const Shape s = e.shape(x);
    slices.push_back(length > 0 ? first_slot(e, x)
                                : e.full(Shape(IntList(s.dims.begin() + 1, s.dims.end())), 0, e.type(x).dtype));
  }
  if (length > 0) region.first_node = e.num_nodes();
  std::vector<SubgraphValue> in;
  for (ValueId v : carries) in.push_back({"", v, std::nullopt});
  for (ValueId v : slices) in.push_back({"", v, std::nullopt});
  const std::vector<SubgraphValue> outs = n.import_subgraph(body, std::move(in));
  region.next_carries = next_carries(n, outs, 0, carries, names);
  for (int64_t k = 0; k < k_out; ++k) region.ys.push_back(n.value_of(outs[initial.size() + static_cast<size_t>(k)]));
  region.carries = carries;
  region.slices = slices;
  region.xs = xs;
  return e.outline_scan(region);
}

// Scan (opset 9 on): N state variables, then M scanned inputs; the body maps (state,
// one slice of each) to (next state, K per-iteration outputs), stacked along
// scan_output_axes. ONNX gives each scanned input and output a direction, weft's scan one
// for all (ScanRegion::reverse): the loop runs forward, the scanned inputs read backward
// and the outputs stacked backward (directions 1) are turned around, and axes other than
// the first are moved there by a transpose.
void scan(NodeContext& n) {
  n.expect_attrs({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                  "scan_output_axes", "scan_output_directions"});
  Emitter& e = n.e();
  const onnx::GraphProto& body = n.attr_graph("body");
  if (!n.has_attr("num_scan_inputs")) n.invalid("attribute 'num_scan_inputs' is required");
  const int64_t m = n.attr_int("num_scan_inputs", 0);
  const int64_t states = n.num_inputs() - m;
  if (m < 1 || states < 0) {
    n.invalid("num_scan_inputs is " + std::to_string(m) + " for " + std::to_string(n.num_inputs()) + " inputs");
  }
  if (body.input_size() != n.num_inputs()) {
    n.invalid("its body takes " + std::to_string(body.input_size()) + " inputs, the node gives " +
              std::to_string(n.num_inputs()));
  }
  const int64_t k_out = body.output_size() - states;
  if (k_out < 0 || n.num_outputs() > body.output_size()) {
    n.invalid("its body has " + std::to_string(body.output_size()) + " outputs for " +
              std::to_string(states) + " state variables and " + std::to_string(n.num_outputs()) +
              " node outputs");
  }
  const std::vector<int64_t> in_axes = per_entry(n, "scan_input_axes", static_cast<size_t>(m));
  const std::vector<int64_t> in_dirs = per_entry(n, "scan_input_directions", static_cast<size_t>(m));
  const std::vector<int64_t> out_axes = per_entry(n, "scan_output_axes", static_cast<size_t>(k_out));
  const std::vector<int64_t> out_dirs = per_entry(n, "scan_output_directions", static_cast<size_t>(k_out));
  for (const auto* dirs : {&in_dirs, &out_dirs}) {
    for (int64_t d : *dirs) {
      if (d != 0 && d != 1) n.invalid("a scan direction is " + std::to_string(d) + " (0 or 1)");
    }
  }
  std::vector<ValueId> initial, xs;
  for (int64_t i = 0; i < states; ++i) initial.push_back(n.input(static_cast<int>(i)));
  for (int64_t j = 0; j < m; ++j) {
    ValueId x = n.input(static_cast<int>(states + j));
    const int64_t rank = e.rank(x);
    if (rank < 1) n.invalid("scanned input " + std::to_string(j) + " is a scalar");
    const int64_t axis = normalize_axis(n, "scan_input_axes[" + std::to_string(j) + "]", in_axes[j], rank);
    if (axis != 0) x = e.transpose(x, move_axis(rank, axis, 0));
    xs.push_back(in_dirs[j] == 1 ? flip_first(e, x) : x);
  }
  const std::vector<ValueId> r = scan_loop(n, body, initial, xs, k_out);
  for (int64_t i = 0; i < states; ++i) n.set_output(static_cast<int>(i), r[static_cast<size_t>(i)]);
  for (int64_t k = 0; k < k_out; ++k) {
    ValueId y = r[static_cast<size_t>(states + k)];
    if (out_dirs[k] == 1) y = flip_first(e, y);
    const int64_t rank = e.rank(y);
    const int64_t axis = normalize_axis(n, "scan_output_axes[" + std::to_string(k) + "]", out_axes[k], rank);
    if (axis != 0) y = e.transpose(y, move_axis(rank, 0, axis));
    n.set_output(static_cast<int>(states + k), y);
  }
}

// Scan-8: the same loop for each sample of a batch. Every input has the batch axis
// first; the scanned ones are [batch, length, ...] (directions per scanned input), the
// outputs stacked to [batch, length, ...]. A loop over the batch whose body is the scan.
void scan8(NodeContext& n) {
  n.expect_attrs({"body", "num_scan_inputs", "directions"});
  Emitter& e = n.e();
  const onnx::GraphProto& body = n.attr_graph("body");
  if (n.has_input(0)) n.unsupported("sequence_lens (sequences of different lengths in one batch)");
  if (!n.has_attr("num_scan_inputs")) n.invalid("attribute 'num_scan_inputs' is required");
  const int64_t m = n.attr_int("num_scan_inputs", 0);
  const int64_t states = n.num_inputs() - 1 - m;
  if (m < 1 || states < 0 || body.input_size() != states + m) {
    n.invalid("num_scan_inputs is " + std::to_string(m) + " for " + std::to_string(n.num_inputs() - 1) +
              " inputs and a body of " + std::to_string(body.input_size()));
  }
  const int64_t k_out = body.output_size() - states;
  if (k_out < 0) n.invalid("its body has fewer outputs than state variables");
  const std::vector<int64_t> dirs = per_entry(n, "directions", static_cast<size_t>(m));
  std::vector<ValueId> batched, slots;
  for (int i = 1; i < n.num_inputs(); ++i) {
    const ValueId x = n.input(i);
    if (e.rank(x) < (i > states ? 2 : 1)) n.invalid("input " + std::to_string(i) + " has no batch axis");
    batched.push_back(x);
  }
  for (ValueId x : batched) {
    if (e.shape(x)[0] != e.shape(batched[0])[0]) {
      n.invalid("inputs of batch " + std::to_string(e.shape(batched[0])[0]) + " and " + std::to_string(e.shape(x)[0]));
    }
    slots.push_back(first_slot(e, x));
  }
  ScanRegion per_sample;
  per_sample.first_node = e.num_nodes();
  per_sample.length = e.shape(batched[0])[0];
  std::vector<ValueId> initial(slots.begin(), slots.begin() + states), xs;
  for (int64_t j = 0; j < m; ++j) {
    const ValueId x = slots[static_cast<size_t>(states + j)];
    xs.push_back(dirs[static_cast<size_t>(j)] == 1 ? flip_first(e, x) : x);
  }
  per_sample.ys = scan_loop(n, body, initial, xs, k_out);
  per_sample.slices = slots;
  per_sample.xs = batched;
  const std::vector<ValueId> r = e.outline_scan(per_sample);
  for (size_t i = 0; i < r.size(); ++i) n.set_output(static_cast<int>(i), r[i]);
}

// Loop's trip count M, known at import time: how many iterations run unless the
// condition stops them. 0 (or less: ONNX's loop runs while i < M) runs none.
int64_t trip_count(NodeContext& n) {
  if (!n.has_input(0)) n.unsupported("a Loop without a trip count M (weft's loops have a static length)");
  if (n.constant(0) == nullptr) {
    n.computed_at_run_time(0, "a trip count M",
                           "weft's loops have a static length: M must be a constant or an initializer");
  }
  return std::max<int64_t>(static_cast<int64_t>(n.scalar_input(0, "the trip count M")), 0);
}

// Not `condition` (bool, one value), as the bool[] a scan's `stop` carry is.
ValueId negation(Emitter& e, ValueId condition) { return e.reshape(e.op(Op::Not, {condition}), {}); }

// Whether the Loop's initial condition is absent or a constant true (no exit before the
// first iteration).
bool starts_true(NodeContext& n) {
  if (!n.has_input(1)) return true;
  const Tensor* c = n.constant(1);
  if (c == nullptr) return false;
  if (c->numel() != 1) n.invalid("the condition must hold one value, not " + c->type().to_string());
  return c->get_double(0) != 0;
}

// Whether `body` returns its condition input as its condition, as is or through an
// Identity: the loop ends only with its trip count. (A condition the body computes,
// even a constant, takes the scan's `stop`.)
bool keeps_condition(const onnx::GraphProto& body) {
  const std::string& in = body.input(1).name();
  const std::string& out = body.output(0).name();
  if (out == in) return true;
  for (const onnx::NodeProto& node : body.node()) {
    for (const std::string& o : node.output()) {
      if (o == out) return node.op_type() == "Identity" && node.input_size() == 1 && node.input(0) == in;
    }
  }
  return false;
}

// Loop: M iterations of body(iteration, condition, carried...) -> (condition, carried...,
// scan outputs), the scan outputs stacked on a new first axis, while the condition holds.
// M must be known at import time; with M = 0 the carried outputs are the initial values
// and the scan outputs have length 0. A condition that may end the loop early (an initial
// one that is not a constant true, one the body computes) becomes the scan's `stop`
// carry, its negation; with scan outputs it must be known at import time (their length).
void loop(NodeContext& n) {
  n.expect_attrs({"body"});
  Emitter& e = n.e();
  const onnx::GraphProto& body = n.attr_graph("body");
  if (n.num_inputs() < 2) n.invalid("it takes a trip count M and a condition (either may be empty)");
  const int64_t states = n.num_inputs() - 2;
  if (body.input_size() != states + 2) {
    n.invalid("its body takes " + std::to_string(body.input_size()) + " inputs, the node gives " +
              std::to_string(states) + " loop-carried values (and the iteration number and condition)");
  }
  const int64_t k_out = body.output_size() - 1 - states;
  if (k_out < 0) {
    n.invalid("its body has " + std::to_string(body.output_size()) + " outputs for " +
              std::to_string(states) + " loop-carried values and the condition");
  }
  const int64_t trips = trip_count(n);
  std::vector<ValueId> carries;
  std::vector<std::string> names;
  // The iteration number, when the body reads it: a carry of its own, counting from 0.
  const bool counts = reads(body, body.input(0).name());
  if (counts) {
    carries.push_back(stand_in(e, e.full(Shape({}), 0, DType::i64)));
    names.push_back(body.input(0).name());
  }
  for (int64_t i = 0; i < states; ++i) {
    carries.push_back(stand_in(e, n.input(static_cast<int>(2 + i))));
    names.push_back(body.input(static_cast<int>(2 + i)).name());
  }
  // The stop carry, last: not the condition, before each iteration. M = 0 runs no
  // iteration (a region of length 0: the carries come out as their initial values, the
  // scan outputs with length 0), and needs none.
  const bool never = trips == 0;
  const bool starts = starts_true(n);
  const bool stops = !never && (!starts || !keeps_condition(body));
  if (stops) carries.push_back(stand_in(e, n.has_input(1) ? negation(e, n.input(1)) : e.constant(0, DType::boolean)));
  ScanRegion region;
  region.first_node = e.num_nodes();
  std::vector<SubgraphValue> in;
  in.push_back(counts ? SubgraphValue{"", carries[0], std::nullopt}
                      : SubgraphValue{"", std::nullopt, Tensor::scalar(DType::i64, 0)});
  // An iteration runs only while the condition holds: inside, it is true.
  in.push_back({"", std::nullopt, Tensor::scalar(DType::boolean, 1)});
  const size_t offset = counts ? 1 : 0;
  for (size_t i = offset; i < names.size(); ++i) in.push_back({"", carries[i], std::nullopt});
  const std::vector<SubgraphValue> outs = n.import_subgraph(body, std::move(in));
  // A condition known at import time ends the loop after its first iteration or never.
  const bool static_exit = starts && outs[0].constant;
  if (k_out > 0 && !static_exit && !never) {
    const std::string why =
        "with scan outputs, a data-dependent exit: weft's stacked outputs have a static length, and an "
        "early exit leaves zero-filled slots where ONNX's Loop ends them (a Loop with only loop-carried "
        "values may exit early)";
    if (!starts && n.constant(1) == nullptr) n.computed_at_run_time(1, "an initial condition", why);
    n.unsupported((starts ? "a condition computed in the body " : "an initial condition that is false ") + why);
  }
  region.length = !never && static_exit && outs[0].constant->get_double(0) == 0 ? 1 : trips;
  std::vector<ValueId> next = next_carries(
      n, outs, 1, std::vector<ValueId>(carries.begin() + static_cast<ptrdiff_t>(offset), carries.begin() + static_cast<ptrdiff_t>(names.size())),
      std::vector<std::string>(names.begin() + static_cast<ptrdiff_t>(offset), names.end()));
  if (counts) next.insert(next.begin(), e.add(carries[0], e.constant(1, DType::i64)));
  if (stops) {
    region.stop = static_cast<int64_t>(carries.size()) - 1;
    next.push_back(negation(e, n.value_of(outs[0])));
  }
  region.carries = carries;
  region.next_carries = next;
  for (int64_t k = 0; k < k_out; ++k) region.ys.push_back(n.value_of(outs[static_cast<size_t>(1 + states + k)]));
  const std::vector<ValueId> r = e.outline_scan(region);
  for (int64_t i = 0; i < states; ++i) n.set_output(static_cast<int>(i), r[offset + static_cast<size_t>(i)]);
  for (int64_t k = 0; k < k_out; ++k) {
    const ValueId ys = r[carries.size() + static_cast<size_t>(k)];
    n.set_output(static_cast<int>(states + k), ys);
  }
}

// If: a condition known at import time imports the branch it picks, inline; a computed
// one imports both and selects between their outputs (exact: the branches have no side
// effects), which then must have one type each (weft's shapes are static).
void if_then_else(NodeContext& n) {
  n.expect_attrs({"then_branch", "else_branch"});
  Emitter& e = n.e();
  const onnx::GraphProto& then_branch = n.attr_graph("then_branch");
  const onnx::GraphProto& else_branch = n.attr_graph("else_branch");
  if (then_branch.output_size() != else_branch.output_size()) {
    n.invalid("its branches have " + std::to_string(then_branch.output_size()) + " and " +
              std::to_string(else_branch.output_size()) + " outputs");
  }
  const Type ct = n.input_type(0);
  if (ct.numel() != 1) n.invalid("the condition must hold one value, not " + ct.to_string());
  if (const Tensor* c = n.constant(0)) {
    const std::vector<SubgraphValue> outs = n.import_subgraph(c->get_double(0) != 0 ? then_branch : else_branch, {});
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].constant) {
        n.set_constant_output(static_cast<int>(i), *outs[i].constant);
      } else {
        n.set_output(static_cast<int>(i), *outs[i].value);
      }
    }
    return;
  }
  const ValueId cond = e.reshape(n.input(0), {});
  const std::vector<SubgraphValue> yes = n.import_subgraph(then_branch, {});
  const std::vector<SubgraphValue> no = n.import_subgraph(else_branch, {});
  for (size_t i = 0; i < yes.size(); ++i) {
    const ValueId a = n.value_of(yes[i]), b = n.value_of(no[i]);
    if (e.type(a) != e.type(b)) {
      n.computed_at_run_time(0, "a condition",
                             "choosing between outputs of types " + e.type(a).to_string() + " and " +
                                 e.type(b).to_string() + ": weft's shapes are static");
    }
    n.set_output(static_cast<int>(i), e.op(Op::Select, {cond, a, b}));
  }
}

const OpConverter kControl[] = {
    {"If", 1, if_then_else},
    {"Loop", 1, loop},
    {"Scan", 8, scan8},
    {"Scan", 9, scan},
};

}  // namespace control
}  // namespace

std::span<const OpConverter> control_converters() { return control::kControl; }

}  // namespace weft::onnx_io

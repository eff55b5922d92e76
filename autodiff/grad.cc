#include "autodiff/grad.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "autodiff/rules.h"
#include "ir/shape_rules.h"

namespace weft {

ValueId GradBuilder::op(Op op, std::vector<ValueId> operands, Attrs attrs) {
  StatusOr<ValueId> result = add_typed_node(graph_, op, std::move(operands), std::move(attrs), loc_);
  WEFT_CHECK(result.ok(), "autodiff or an optimizer built an ill-typed node: " +
                              result.status().to_string());
  return *result;
}

ValueId GradBuilder::constant(double value, DType dtype) {
  return op(Op::Full, {}, {{"shape", IntList{}}, {"value", value}, {"dtype", dtype}});
}

ValueId GradBuilder::zeros(const Type& type) {
  return op(Op::Full, {}, {{"shape", type.shape.dims}, {"value", 0.0}, {"dtype", type.dtype}});
}

ValueId GradBuilder::broadcast_to(ValueId g, Shape shape) {
  if (this->shape(g) == shape) return g;
  return op(Op::BroadcastTo, {g}, {{"shape", shape.dims}});
}

ValueId GradBuilder::sum_to_shape(ValueId g, Shape target) {
  Shape s = shape(g);
  if (s == target) return g;
  int lead = s.rank() - target.rank();
  WEFT_CHECK(lead >= 0, "sum_to_shape: target has a higher rank");
  IntList axes;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(i);
  }
  ValueId summed = op(Op::Sum, {g}, {{"axes", axes}, {"keepdims", true}});
  return op(Op::Reshape, {summed}, {{"shape", target.dims}});
}

const GradEntry& grad_entry(Op op) {
  static const grad_rules::Table table = [] {
    grad_rules::Table t{};
    grad_rules::add_elementwise(t);
    grad_rules::add_reduction(t);
    grad_rules::add_movement(t);
    grad_rules::add_nn(t);
    grad_rules::add_composite(t);
    return t;
  }();
  return table[static_cast<int>(op)];
}

namespace {

/// A zero-filled pad along one axis only: `inner` placed at [lo, lo + len) of `axis`.
struct Piece {
  ValueId inner;
  int axis;
  int64_t lo, len, size;  ///< size: the axis's length in the padded result.
};

std::optional<Piece> as_piece(const Graph& g, ValueId v) {
  const int at = g.value(v).node;
  if (at < 0) return std::nullopt;
  const Node& n = g.node(at);
  if (n.op != Op::Pad || n.float_attr("value") != 0.0) return std::nullopt;
  const IntList& lo = n.ints_attr("low");
  const IntList& hi = n.ints_attr("high");
  std::optional<Piece> piece;
  for (size_t d = 0; d < lo.size(); ++d) {
    if (lo[d] == 0 && hi[d] == 0) continue;
    if (piece || lo[d] < 0 || hi[d] < 0) return std::nullopt;  // two axes, or a crop
    const int64_t len = g.type(n.operands[0]).shape[static_cast<int>(d)];
    piece = Piece{n.operands[0], static_cast<int>(d), lo[d], len, lo[d] + len + hi[d]};
  }
  return piece;
}

/// Half contribution `v` in f32: the f32 value it was rounded from where it is a cast of
/// one (a cast's gradient: an f32 path's cotangent narrowed), else `v` widened.
ValueId wide(GradBuilder& b, const Graph& g, ValueId v) {
  const int at = g.value(v).node;
  if (at >= 0 && g.node(at).op == Op::Cast && g.type(g.node(at).operands[0]).dtype == DType::f32) {
    return g.node(at).operands[0];
  }
  return b.op(Op::Cast, {v}, {{"dtype", DType::f32}});
}

/// The sum of a value's gradient contributions, in the order they were found. Zero pads
/// along one axis whose pieces lie side by side (the gradients of slices that cut a
/// tensor into pieces: an LSTM's four gates, attention's q, k and v) become one concat of
/// the pieces (padded where they do not cover the axis) instead of a pad per piece and an
/// add per pad: the same sums, as each element gets one piece and zeros (up to the sign
/// of a zero: -0 + 0 is +0), without the padded copies. Contributions of a half dtype
/// (f16, bf16) that still need adding are widened and added in f32, and the sum is
/// returned in f32, unrounded: the caller rounds it once where it needs the value's
/// dtype (PyTorch's autograd adds them in the half dtype, rounding at every add).
ValueId sum_contributions(GradBuilder& b, const Graph& g, std::vector<ValueId> parts) {
  std::vector<std::optional<Piece>> pieces;
  for (ValueId v : parts) pieces.push_back(as_piece(g, v));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!pieces[i]) continue;
    // The pieces along i's axis, by position: a run of adjacent ones through i.
    std::vector<size_t> same;
    for (size_t j = i; j < parts.size(); ++j) {
      if (pieces[j] && pieces[j]->axis == pieces[i]->axis && g.type(parts[j]) == g.type(parts[i])) {
        same.push_back(j);
      }
    }
    std::sort(same.begin(), same.end(),
              [&](size_t x, size_t y) { return pieces[x]->lo < pieces[y]->lo; });
    size_t first = 0;
    while (same[first] != i) ++first;
    size_t begin = first, end = first + 1;
    while (begin > 0 && pieces[same[begin - 1]]->lo + pieces[same[begin - 1]]->len ==
                            pieces[same[begin]]->lo) {
      --begin;
    }
    while (end < same.size() &&
           pieces[same[end - 1]]->lo + pieces[same[end - 1]]->len == pieces[same[end]]->lo) {
      ++end;
    }
    if (end - begin < 2) continue;
    const Piece& low = *pieces[same[begin]];
    const Piece& high = *pieces[same[end - 1]];
    std::vector<ValueId> inner;
    for (size_t k = begin; k < end; ++k) inner.push_back(pieces[same[k]]->inner);
    ValueId joined = b.op(Op::Concat, inner, {{"axis", int64_t{low.axis}}});
    const int64_t after = low.size - high.lo - high.len;
    if (low.lo != 0 || after != 0) {
      const int rank = g.type(joined).shape.rank();
      IntList lo(rank, 0), hi(rank, 0);
      lo[low.axis] = low.lo;
      hi[low.axis] = after;
      joined = b.op(Op::Pad, {joined}, {{"low", lo}, {"high", hi}});
    }
    // The run's sum takes the place of its first part; the others drop out.
    const size_t at = *std::min_element(same.begin() + begin, same.begin() + end);
    for (size_t k = begin; k < end; ++k) {
      parts[same[k]] = kNoValue;
      pieces[same[k]].reset();
    }
    parts[at] = joined;
  }
  std::erase(parts, kNoValue);
  const bool widen = parts.size() > 1 && is_half(g.type(parts[0]).dtype);
  ValueId sum = kNoValue;
  for (ValueId v : parts) {
    if (widen) v = wide(b, g, v);
    sum = sum == kNoValue ? v : b.add(sum, v);
  }
  return sum;
}

/// A cast from f32 to a half dtype: its operand's gradient is the cotangent widened, so a
/// cotangent summed in f32 is passed on as it is, never rounded (autocast's cast of an
/// f32 value read by several bf16 ops; rotate-carry-casts' low carry that a ys stacks
/// too, whose two cotangents reach the f32 carry unrounded).
bool narrows_f32(const Graph& g, const Node& n) {
  return n.op == Op::Cast && g.type(n.operands[0]).dtype == DType::f32 &&
         is_half(g.type(n.result()).dtype);
}

/// The values whose gradients the sweep computes: float values on a path from some
/// `wrt` value to a seeded output (only the nodes between them are differentiated).
std::vector<bool> values_needing_gradients(const Graph& g,
                                           const std::vector<std::pair<ValueId, ValueId>>& seeds,
                                           const std::vector<ValueId>& wrt) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  std::vector<bool> from_wrt(g.num_values(), false), to_output(g.num_values(), false);
  for (ValueId v : wrt) from_wrt[v] = true;
  for (int i = 0; i < num_nodes; ++i) {
    const Node& n = g.node(i);
    bool any = std::any_of(n.operands.begin(), n.operands.end(), [&](ValueId o) { return from_wrt[o]; });
    // `|=`, not `=`: a wrt value may be a node's result (an intermediate), not an input.
    for (ValueId r : n.results) from_wrt[r] = from_wrt[r] || any;
  }
  for (const auto& seed : seeds) to_output[seed.first] = true;
  for (int i = num_nodes - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    if (std::none_of(n.results.begin(), n.results.end(), [&](ValueId r) { return to_output[r]; })) {
      continue;
    }
    for (ValueId o : n.operands) to_output[o] = true;
  }
  std::vector<bool> needs(g.num_values(), false);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    needs[v] = from_wrt[v] && to_output[v] && is_floating(g.type(v).dtype);
  }
  return needs;
}

/// The walk from the outputs back: each value's gradient contributions, summed
/// (sum_contributions) when the value's producer is reached — every user comes after it,
/// so all of them are in by then. A half value's sum, made in f32, is rounded to its
/// dtype once.
class ReverseSweep {
 public:
  ReverseSweep(Graph& g, std::vector<bool> needs)
      : g_(g), needs_(std::move(needs)), parts_(static_cast<size_t>(g.num_values())) {}

  /// `seed` is `output`'s cotangent.
  void seed(ValueId output, ValueId seed) {
    WEFT_CHECK(g_.type(seed) == g_.type(output), "append_gradients: the seed of %" +
                                                     g_.value(output).name + " has another type");
    parts_[output].push_back(seed);
  }

  /// Node `i`'s gradient rule, from its result's total to its operands' contributions.
  Status through_node(int i) {
    const Node n = g_.node(i);  // a copy: rules append nodes, which may move the vector
    if (n.result() == kNoValue || parts_[n.result()].empty() || !needs_[n.result()]) return Status();
    const bool any_operand =
        std::any_of(n.operands.begin(), n.operands.end(), [&](ValueId o) { return needs_[o]; });
    if (!any_operand) return Status();
    const GradEntry& entry = grad_entry(n.op);
    if (entry.rule == nullptr) {
      std::string why = entry.not_differentiable ? entry.not_differentiable : "no gradient rule";
      return Error{"cannot differentiate through " + std::string(op_name(n.op)) + " (" + why +
                       "), but the gradient w.r.t. one of its operands is needed",
                   n.loc};
    }
    GradBuilder b(g_, n.loc);
    if (narrows_f32(g_, n) && needs_[n.operands[0]]) {
      sum_parts(b, n.result());
      const ValueId sum = parts_[n.result()][0];
      if (g_.type(sum).dtype == DType::f32) {  // several contributions, added in f32
        parts_[n.operands[0]].push_back(sum);
        return Status();
      }
    }
    std::vector<ValueId> operand_grads = entry.rule(b, n, total(b, n.result()));
    WEFT_CHECK(operand_grads.size() == n.operands.size(),
               std::string(op_name(n.op)) + "'s gradient rule returned the wrong count");
    for (size_t k = 0; k < n.operands.size(); ++k) {
      ValueId o = n.operands[k];
      ValueId d = operand_grads[k];
      if (d == kNoValue || !needs_[o]) continue;
      d = b.sum_to_shape(d, g_.type(o).shape);
      WEFT_CHECK(g_.type(d) == g_.type(o), std::string(op_name(n.op)) + "'s gradient for operand " +
                                               std::to_string(k) + " is " + g_.type(d).to_string() +
                                               ", not " + g_.type(o).to_string());
      parts_[o].push_back(d);
    }
    return Status();
  }

  /// Loop node `i`: several results, each with its cotangent (none: zero), through the
  /// loop's own transform (grad_rules::scan_gradients).
  Status through_loop(int i) {
    const Node n = g_.node(i);  // a copy: the transform appends nodes
    std::vector<ValueId> cotangents;
    bool any_result = false;
    GradBuilder b(g_, n.loc);
    for (ValueId r : n.results) {
      const bool has = !parts_[r].empty() && needs_[r];
      cotangents.push_back(has ? total(b, r) : kNoValue);
      any_result = any_result || has;
    }
    std::vector<bool> operand_needs;
    for (ValueId o : n.operands) operand_needs.push_back(needs_[o]);
    if (!any_result || std::none_of(operand_needs.begin(), operand_needs.end(), [](bool x) { return x; })) {
      return Status();
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<ValueId> operand_grads,
                          grad_rules::scan_gradients(g_, i, cotangents, operand_needs));
    for (size_t k = 0; k < n.operands.size(); ++k) {
      if (operand_grads[k] != kNoValue && operand_needs[k]) parts_[n.operands[k]].push_back(operand_grads[k]);
    }
    return Status();
  }

  /// Each `wrt` value's gradient: its contributions' total, or zeros where none reached it.
  std::vector<ValueId> gradients(const std::vector<ValueId>& wrt) {
    std::vector<ValueId> out;
    for (ValueId v : wrt) {
      const int at = g_.value(v).node;
      GradBuilder b(g_, at >= 0 ? g_.node(at).loc : Location{});
      const ValueId grad = total(b, v);
      out.push_back(grad != kNoValue ? grad : b.zeros(g_.type(v)));
    }
    return out;
  }

 private:
  void sum_parts(GradBuilder& b, ValueId v) {
    if (parts_[v].size() > 1) parts_[v] = {sum_contributions(b, g_, std::move(parts_[v]))};
  }

  /// `v`'s contributions summed, in `v`'s dtype; kNoValue when none reached it.
  ValueId total(GradBuilder& b, ValueId v) {
    if (parts_[v].empty()) return kNoValue;
    sum_parts(b, v);
    const DType dtype = g_.type(v).dtype;
    if (g_.type(parts_[v][0]).dtype != dtype) parts_[v] = {b.op(Op::Cast, {parts_[v][0]}, {{"dtype", dtype}})};
    return parts_[v][0];
  }

  Graph& g_;
  const std::vector<bool> needs_;  ///< values_needing_gradients, of the values before the sweep.
  std::vector<std::vector<ValueId>> parts_;
};

}  // namespace

StatusOr<std::vector<ValueId>> append_gradients(Graph& g, ValueId output,
                                                const std::vector<ValueId>& wrt, ValueId seed) {
  const Type out_type = g.type(output);
  if (seed == kNoValue && (out_type.shape.rank() != 0 || !is_floating(out_type.dtype))) {
    return Error{"cannot differentiate %" + g.value(output).name + " of type " +
                 out_type.to_string() + ": the output must be a float scalar, or a seed (its "
                 "cotangent) must be given"};
  }
  if (seed == kNoValue) {
    GradBuilder b(g, g.value(output).node >= 0 ? g.node(g.value(output).node).loc : Location{});
    seed = b.constant(1.0, out_type.dtype);
  }
  return append_gradients(g, {{output, seed}}, wrt);
}

StatusOr<std::vector<ValueId>> append_gradients(
    Graph& g, const std::vector<std::pair<ValueId, ValueId>>& seeds,
    const std::vector<ValueId>& wrt) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  ReverseSweep sweep(g, values_needing_gradients(g, seeds, wrt));
  for (const auto& [output, seed] : seeds) sweep.seed(output, seed);
  for (int i = num_nodes - 1; i >= 0; --i) {
    WEFT_RETURN_IF_ERROR(g.node(i).op == Op::Scan ? sweep.through_loop(i) : sweep.through_node(i));
  }
  return sweep.gradients(wrt);
}

StatusOr<Graph> gradient_graph(const Graph& source, int output, const std::vector<std::string>& wrt,
                               const std::string& seed_name) {
  if (output < 0 || output >= static_cast<int>(source.outputs().size())) {
    return Error{"graph @" + source.name() + " has " + std::to_string(source.outputs().size()) +
                 " outputs; there is no output " + std::to_string(output)};
  }
  Graph g = source;
  g.set_name(source.name() + "_grad");
  std::vector<bool> keep;
  for (const Node& n : g.nodes()) keep.push_back(n.op != Op::Assign);
  g.remove_nodes(keep);
  std::vector<ValueId> wrt_values;
  std::string inputs;
  for (const Input& in : g.inputs()) inputs += (inputs.empty() ? "%" : ", %") + g.value(in.value).name;
  for (const std::string& name : wrt) {
    auto v = g.find_value(name);
    if (!v || g.input_index(*v) < 0) {
      return Error{"cannot differentiate w.r.t. %" + name + ": @" + source.name() +
                   " has no input of that name; its inputs are " + inputs};
    }
    const Input& in = g.inputs()[g.input_index(*v)];
    if (!is_floating(g.type(*v).dtype)) {
      return Error{"cannot differentiate w.r.t. %" + name + ": it is " + g.type(*v).to_string() +
                       ", and only floating-point inputs have gradients",
                   in.loc};
    }
    wrt_values.push_back(*v);
  }
  ValueId out = g.outputs()[output];
  ValueId seed = kNoValue;
  if (!seed_name.empty()) {
    if (g.find_value(seed_name)) {
      return Error{"cannot name the seed input %" + seed_name + ": @" + source.name() +
                   " already has a value of that name"};
    }
    seed = g.add_input(seed_name, g.type(out));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<ValueId> grads, append_gradients(g, out, wrt_values, seed));
  g.set_outputs(grads);
  g.set_declared_output_types({});
  return g;
}

}  // namespace weft

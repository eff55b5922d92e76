// Shape rules of reductions and movement ops (reshape, transpose, broadcast_to, slice,
// concat, pad, gather, scatter_add, one_hot). Semantics: shape_rules.h.

#include <algorithm>

#include "ir/checked_math.h"
#include "ir/shape_rules_internal.h"
#include "ir/text_util.h"

namespace weft::shape_rules_internal {
namespace {

// ---- Reductions ----------------------------------------------------------------------

/// Drops (or, with keepdims, sets to 1) the dims at `axes`.
Shape reduce_dims(const Shape& s, const std::vector<int>& axes, bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < s.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) dims.push_back(s[i]);
    else if (keepdims) dims.push_back(1);
  }
  return Shape(std::move(dims));
}

enum class Accepts { number, floating, any };

template <Accepts accepts>
StatusOr<Type> reduce(const Node& node, const std::vector<Type>& in) {
  if (accepts == Accepts::number) {
    WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", is_numeric(in[0].dtype),
                                       "a numeric dtype (not bool); cast it to a number"));
  }
  if (accepts == Accepts::floating) {
    WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", is_floating(in[0].dtype),
                                       "a floating dtype; cast it first"));
  }
  std::vector<int> axes;
  if (node.has_attr("axes")) {
    WEFT_ASSIGN_OR_RETURN(axes, normalize_unique(node.ints_attr("axes"), "axes", in[0],
                                                 "operand"));
  } else {
    for (int i = 0; i < in[0].shape.rank(); ++i) axes.push_back(i);
  }
  return Type{in[0].dtype, reduce_dims(in[0].shape, axes, node.bool_attr("keepdims"))};
}

StatusOr<Type> argmax(const Node& node, const std::vector<Type>& in) {
  // As PyTorch: no argmax of bools (the reference interpreter has none either).
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", is_numeric(in[0].dtype),
                                     "a numeric dtype (not bool); cast it to a number"));
  WEFT_ASSIGN_OR_RETURN(int axis, normalize(node.int_attr("axis"), "axis", in[0], "operand"));
  return Type{DType::i64, reduce_dims(in[0].shape, {axis}, node.bool_attr("keepdims"))};
}

// ---- Movement ------------------------------------------------------------------------

StatusOr<Type> reshape(const Node& node, const std::vector<Type>& in) {
  IntList dims = node.ints_attr("shape");
  int inferred = -1;
  IntList given;  // the entries other than -1
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return rule_error("shape " + str(dims) + " may hold one -1 and otherwise sizes >= 0");
    } else {
      given.push_back(dims[i]);
    }
  }
  std::optional<int64_t> known = checked_numel(given);
  if (!known) {
    return rule_error("shape " + str(dims) + " is too large: its element count overflows int64");
  }
  std::optional<int64_t> operand_numel = checked_numel(in[0].shape.dims);
  if (!operand_numel) {
    return rule_error("operand " + str(in[0]) +
                      " is too large: its element count overflows int64");
  }
  const int64_t numel = *operand_numel;
  if (inferred >= 0) {
    if (*known == 0 || numel % *known != 0) {
      return rule_error("cannot reshape " + str(in[0]) + " (" + counted(numel, "element") + ") to " +
                        str(dims) + ": no size for -1 fits");
    }
    dims[inferred] = numel / *known;
  } else if (*known != numel) {
    return rule_error("cannot reshape " + str(in[0]) + " (" + counted(numel, "element") + ") to " +
                      str(dims) + " (" + counted(*known, "element") + ")");
  }
  return Type{in[0].dtype, Shape(std::move(dims))};
}

StatusOr<Type> transpose(const Node& node, const std::vector<Type>& in) {
  const IntList& perm = node.ints_attr("perm");
  const int rank = in[0].shape.rank();
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  if (!ok) {
    return rule_error("perm " + str(perm) + " is not a permutation of 0.." +
                      std::to_string(rank - 1) + " for operand " + str(in[0]));
  }
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(in[0].shape[static_cast<int>(p)]);
  return Type{in[0].dtype, Shape(std::move(dims))};
}

StatusOr<Type> broadcast_to(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Shape target, shape_attr(node, "shape"));
  auto b = broadcast_shapes(in[0].shape, target);
  if (!b || !(*b == target)) {
    return rule_error("cannot broadcast operand " + str(in[0]) + " to shape " +
                      target.to_string() + " (each operand dim must equal the target's or be "
                      "1, aligned from the right)");
  }
  return Type{in[0].dtype, std::move(target)};
}

/// Python's clamping of a slice bound against a dim of size d.
int64_t clamp_bound(int64_t b, int64_t d) {
  return b < 0 ? std::max<int64_t>(b + d, 0) : std::min(b, d);
}

StatusOr<Type> slice(const Node& node, const std::vector<Type>& in) {
  const size_t rank = static_cast<size_t>(in[0].shape.rank());
  const IntList& start = node.ints_attr("start");
  const IntList& stop = node.ints_attr("stop");
  IntList step = node.has_attr("step") ? node.ints_attr("step") : IntList(rank, 1);
  if (start.size() != rank || stop.size() != rank || step.size() != rank) {
    return rule_error("start " + str(start) + ", stop " + str(stop) + " and step " + str(step) +
                      " need one entry per axis of operand " + str(in[0]));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i) {
    if (step[i] < 1) return rule_error("step " + str(step) + " must have entries >= 1");
    int64_t d = in[0].shape[static_cast<int>(i)];
    int64_t len = clamp_bound(stop[i], d) - clamp_bound(start[i], d);
    // (len - 1) / step + 1 rather than (len + step - 1) / step, which overflows for a huge step.
    dims.push_back(len <= 0 ? 0 : (len - 1) / step[i] + 1);
  }
  return Type{in[0].dtype, Shape(std::move(dims))};
}

StatusOr<Type> concat(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(int axis, normalize(node.int_attr("axis"), "axis", in[0], "operand 0"));
  Type out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    std::string name = "operand " + std::to_string(i);
    WEFT_RETURN_IF_ERROR(require_same_dtype(in[0], "operand 0", in[i], name));
    bool same = in[i].shape.rank() == in[0].shape.rank();
    for (int d = 0; same && d < in[0].shape.rank(); ++d) {
      same = d == axis || in[i].shape[d] == in[0].shape[d];
    }
    if (!same) {
      return rule_error("operand 0 " + str(in[0]) + " and " + name + " " + str(in[i]) +
                        " must have the same rank and equal dims except on axis " +
                        std::to_string(axis));
    }
    Checked sum = Checked(out.shape.dims[axis]) + in[i].shape[axis];
    if (!sum.ok()) {
      return rule_error("the sizes along axis " + std::to_string(axis) + " of operands 0.." +
                        std::to_string(i) + " (last " + name + " " + str(in[i]) +
                        ") add up to more than int64 can hold");
    }
    out.shape.dims[axis] = sum.value();
  }
  return out;
}

StatusOr<Type> pad(const Node& node, const std::vector<Type>& in) {
  const size_t rank = static_cast<size_t>(in[0].shape.rank());
  WEFT_ASSIGN_OR_RETURN(IntList low, list_attr(node, "low", rank, 0));
  WEFT_ASSIGN_OR_RETURN(IntList high, list_attr(node, "high", rank, 0));
  Type out = in[0];
  for (size_t i = 0; i < rank; ++i) {
    Checked dim = Checked(low[i]) + in[0].shape.dims[i] + high[i];
    if (!dim.ok()) {
      return rule_error("low " + str(low) + " and high " + str(high) + " overflow int64 on axis " +
                        std::to_string(i) + " of operand " + str(in[0]) + " (low + " +
                        std::to_string(in[0].shape.dims[i]) + " + high); check the padding");
    }
    out.shape.dims[i] = dim.value();
  }
  return out;
}

/// An index operand: i64 and (when `one_d`) rank 1.
Status require_index(const Type& idx, bool one_d) {
  if (idx.dtype != DType::i64 || (one_d && idx.shape.rank() != 1)) {
    return rule_error(std::string("indices ") + str(idx) + " must be " +
                      (one_d ? "a 1-D i64 tensor" : "i64"));
  }
  return Status();
}

StatusOr<Type> gather(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_index(in[1], /*one_d=*/true));
  WEFT_ASSIGN_OR_RETURN(int axis, normalize(node.int_attr("axis"), "axis", in[0], "operand"));
  Type out = in[0];
  out.shape.dims[axis] = in[1].shape[0];
  return out;
}

StatusOr<Type> scatter_add(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "base", is_numeric(in[0].dtype), "a numeric dtype"));
  WEFT_RETURN_IF_ERROR(require_index(in[1], /*one_d=*/true));
  WEFT_RETURN_IF_ERROR(require_same_dtype(in[0], "base", in[2], "src"));
  WEFT_ASSIGN_OR_RETURN(int axis, normalize(node.int_attr("axis"), "axis", in[0], "base"));
  Shape expected = in[0].shape;
  expected.dims[axis] = in[1].shape[0];
  if (!(in[2].shape == expected)) {
    return rule_error("src " + str(in[2]) + " must have shape " + expected.to_string() +
                      " (base " + str(in[0]) + " with dim " + std::to_string(axis) +
                      " = len(indices " + str(in[1]) + "))");
  }
  return in[0];
}

StatusOr<Type> one_hot(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_index(in[0], /*one_d=*/false));
  int64_t depth = node.int_attr("depth");
  if (depth < 1) return rule_error("depth " + std::to_string(depth) + " must be >= 1");
  Shape shape = in[0].shape;
  shape.dims.push_back(depth);
  return Type{node.dtype_attr("dtype"), std::move(shape)};
}

}  // namespace

// The results of a fused kernel are its body's outputs (the rule gives the first; see
// fused_result_type); the operands must be exactly the body's inputs.
StatusOr<Type> fused(const Node& node, const std::vector<Type>& in) {
  if (node.body == nullptr) return rule_error("the node has no body");
  const Graph& body = *node.body;
  if (body.inputs().size() != in.size()) {
    return rule_error("body @" + body.name() + " takes " + std::to_string(body.inputs().size()) +
                      " inputs, but the node has " + std::to_string(in.size()) + " operands");
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& want = body.value(body.inputs()[i].value).type;
    if (!want || *want != in[i]) {
      return rule_error("operand " + std::to_string(i) + " is " + str(in[i]) + " but body input %" +
                        body.value(body.inputs()[i].value).name + " is " +
                        (want ? str(*want) : std::string("untyped")));
    }
  }
  if (body.outputs().empty()) return rule_error("body @" + body.name() + " returns nothing");
  for (ValueId v : body.outputs()) {
    if (!body.value(v).type) {
      return rule_error("the type of body @" + body.name() + "'s result %" + body.value(v).name +
                        " is unknown");
    }
  }
  // The first result's type; further results have their body outputs' types.
  return *body.value(body.outputs()[0]).type;
}

// scan(consts..., carries..., xs...) {length, carries, consts}: the body takes the consts
// and carries as they are and one slice of each xs ([length, ...] without the leading
// axis); it returns the next carries, each of its carry's exact type, then the ys. The
// rule gives the first result (see result_type).
StatusOr<Type> scan(const Node& node, const std::vector<Type>& in) {
  if (node.body == nullptr) return rule_error("the node has no body");
  const Graph& body = *node.body;
  const int64_t length = node.int_attr("length");
  const int64_t carries = node.int_attr("carries"), consts = node.int_attr("consts");
  const int64_t n = static_cast<int64_t>(in.size());
  if (length < 1) return rule_error("length " + std::to_string(length) + " must be >= 1");
  if (carries < 0 || consts < 0 || consts + carries > n) {
    return rule_error("consts=" + std::to_string(consts) + " and carries=" +
                      std::to_string(carries) + " do not fit its " + std::to_string(n) +
                      " operands");
  }
  if (static_cast<int64_t>(body.inputs().size()) != n) {
    return rule_error("body @" + body.name() + " takes " + std::to_string(body.inputs().size()) +
                      " inputs, but the node has " + std::to_string(n) + " operands");
  }
  auto input_name = [&](int64_t i) { return "%" + body.value(body.inputs()[i].value).name; };
  for (int64_t i = 0; i < n; ++i) {
    const auto& want = body.value(body.inputs()[i].value).type;
    Type given = in[i];
    if (i >= consts + carries) {
      if (given.shape.rank() == 0 || given.shape[0] != length) {
        return rule_error("operand " + std::to_string(i) + " (an xs) is " + str(given) +
                          "; it must have a leading axis of the length " + std::to_string(length));
      }
      given.shape.dims.erase(given.shape.dims.begin());
    }
    if (!want || *want != given) {
      return rule_error("operand " + std::to_string(i) + " gives body input " + input_name(i) +
                        " the type " + str(given) + ", but it is " +
                        (want ? str(*want) : std::string("untyped")));
    }
  }
  const int64_t outputs = static_cast<int64_t>(body.outputs().size());
  if (outputs == 0 || outputs < carries) {
    return rule_error("body @" + body.name() + " returns " + counted(outputs, "value") + "; it must return its " +
                      std::to_string(carries) + (carries == 1 ? " next carry" : " next carries") +
                      ", then its per-iteration outputs, at least one in all");
  }
  for (int64_t k = 0; k < outputs; ++k) {
    const Value& v = body.value(body.outputs()[k]);
    if (!v.type) {
      return rule_error("the type of body @" + body.name() + "'s result %" + v.name + " is unknown");
    }
    if (k < carries && *v.type != in[consts + k]) {
      return rule_error("the body's next carry %" + v.name + " is " + str(*v.type) + ", but carry " +
                        input_name(consts + k) + " is " + str(in[consts + k]) +
                        ": a carry keeps its type across iterations");
    }
  }
  const int64_t stop = node.int_attr("stop"), active = node.int_attr("active");
  const Type flag{DType::boolean, Shape({})};
  if (stop >= carries || stop < -1 || (stop >= 0 && in[consts + stop] != flag)) {
    return rule_error("stop=" + std::to_string(stop) + " must name a bool[] carry (0.." + std::to_string(carries - 1) +
                      ")" + (stop >= 0 && stop < carries ? ", but that carry is " + str(in[consts + stop]) : ""));
  }
  const int64_t xs = n - consts - carries;
  const Type mask{DType::boolean, Shape({length})};
  if (active >= xs || active < -1 || (active >= 0 && in[consts + carries + active] != mask)) {
    return rule_error("active=" + std::to_string(active) + " must name a bool[" + std::to_string(length) +
                      "] xs (0.." + std::to_string(xs - 1) + ")" +
                      (active >= 0 && active < xs ? ", but that xs is " + str(in[consts + carries + active]) : ""));
  }
  // Each per-iteration output stacked over the slots must be measurable (#28: f32[2^63-1, 4]).
  for (int64_t k = carries; k < outputs; ++k) {
    const Value& v = body.value(body.outputs()[k]);
    std::vector<int64_t> dims = v.type->shape.dims;
    dims.insert(dims.begin(), length);
    if (!size_fits(v.type->dtype, dims)) {
      return rule_error("the body's per-iteration output %" + v.name + " (" + str(*v.type) + ") stacked over length " +
                        std::to_string(length) + " is too large: its size in bytes overflows int64");
    }
  }
  Type first = *body.value(body.outputs()[0]).type;
  if (carries == 0) first.shape.dims.insert(first.shape.dims.begin(), length);
  return first;
}

namespace {

// all_reduce(x) or all_reduce(x, predicate) {reduction}: the identity on types; "mean"
// needs a float dtype (an integer mean would round), "sum" any numeric one; the
// predicate is a bool[].
StatusOr<Type> all_reduce(const Node& node, const std::vector<Type>& in) {
  if (in.size() > 2) {
    return rule_error("takes x and an optional bool[] predicate, not " + std::to_string(in.size()) + " operands");
  }
  if (in.size() == 2 && !(in[1].dtype == DType::boolean && in[1].shape.rank() == 0)) {
    return rule_error("the predicate must be bool[], not " + in[1].to_string());
  }
  const std::string& r = node.str_attr("reduction");
  if (r != "mean" && r != "sum") {
    return rule_error("unknown reduction \"" + r + "\"; expected \"mean\" or \"sum\"");
  }
  if (r == "mean") {
    WEFT_RETURN_IF_ERROR(require_dtype(in[0], "x", is_floating(in[0].dtype),
                                       "a floating dtype for reduction \"mean\" (\"sum\" "
                                       "takes integers)"));
  }
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "x", is_numeric(in[0].dtype), "a numeric dtype"));
  return in[0];
}

}  // namespace

void add_structural_rules(RuleTable& t) {
  set_rule(t, Op::Fused, fused);
  set_rule(t, Op::Scan, scan);
  set_rule(t, Op::AllReduce, all_reduce);
  set_rule(t, Op::Sum, reduce<Accepts::number>);
  set_rule(t, Op::Mean, reduce<Accepts::floating>);
  set_rule(t, Op::Max, reduce<Accepts::any>);
  set_rule(t, Op::Min, reduce<Accepts::any>);
  set_rule(t, Op::Argmax, argmax);
  set_rule(t, Op::Reshape, reshape);
  set_rule(t, Op::Transpose, transpose);
  set_rule(t, Op::BroadcastTo, broadcast_to);
  set_rule(t, Op::Slice, slice);
  set_rule(t, Op::Concat, concat);
  set_rule(t, Op::Pad, pad);
  set_rule(t, Op::Gather, gather);
  set_rule(t, Op::ScatterAdd, scatter_add);
  set_rule(t, Op::OneHot, one_hot);
}

}  // namespace weft::shape_rules_internal

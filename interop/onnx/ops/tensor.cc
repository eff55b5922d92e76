// Tensors as data: constants, shapes, the movement ops (reshape, transpose, slice,
// gather, concat, pad...) and tensors made from indices (range, one-hot, trilu, eye).
//
// weft's shapes are static: sizes, axes, pads and repeats must be known at import time
// (ints_input refuses computed ones); the data itself may be computed. Ops whose output
// shape depends on the data (NonZero, Compress, Unique) are refused. Index arithmetic
// (negative indices, reflect padding, reversed slices) is emitted as i64 ops on `iota`,
// so a converter never needs a constant tensor of its own.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "interop/onnx/convert.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

using Dims = std::vector<int64_t>;

// ---- Helpers ------------------------------------------------------------------------

/// `axis` in [-rank, rank) as a non-negative axis, or the node is invalid.
int axis_in(NodeContext& n, int64_t axis, int rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank) {
    n.invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
              std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

ValueId i64(Emitter& e, int64_t v) { return e.constant(static_cast<double>(v), DType::i64); }

/// 0, 1, ..., len-1 along `axis` of a tensor of `shape` (i64).
ValueId iota(Emitter& e, Dims shape, int axis) {
  return e.op(Op::Iota, {}, {{"shape", shape}, {"axis", int64_t{axis}}, {"dtype", DType::i64}});
}

ValueId cast(Emitter& e, ValueId x, DType dtype) {
  return e.type(x).dtype == dtype ? x : e.op(Op::Cast, {x}, {{"dtype", dtype}});
}

/// x along `axis` at the 1-D i64 `indices`.
ValueId gather1(Emitter& e, ValueId x, int axis, ValueId indices) {
  return e.op(Op::Gather, {x, indices}, {{"axis", int64_t{axis}}});
}

/// x[start:stop:step] along `axis` (start, stop in [0, dim], step >= 1).
ValueId slice_axis(Emitter& e, ValueId x, int axis, int64_t start, int64_t stop, int64_t step = 1) {
  const int rank = e.rank(x);
  Dims starts(rank, 0), stops = e.shape(x).dims, steps(rank, 1);
  starts[axis] = start;
  stops[axis] = stop;
  steps[axis] = step;
  return e.op(Op::Slice, {x}, {{"start", starts}, {"stop", stops}, {"step", steps}});
}

/// x padded by `low` and `high` per axis with `value`; negative amounts crop (weft's
/// pad takes only amounts >= 0, so the crop is a slice).
ValueId pad_or_crop(Emitter& e, ValueId x, const Dims& low, const Dims& high, double value) {
  const Dims d = e.shape(x).dims;
  Dims start(d.size()), stop(d.size()), grow_low(d.size()), grow_high(d.size());
  bool crops = false, grows = false;
  for (size_t k = 0; k < d.size(); ++k) {
    start[k] = std::min<int64_t>(-std::min<int64_t>(low[k], 0), d[k]);
    stop[k] = std::max(start[k], d[k] + std::min<int64_t>(high[k], 0));
    grow_low[k] = std::max<int64_t>(low[k], 0);
    grow_high[k] = std::max<int64_t>(high[k], 0);
    crops = crops || low[k] < 0 || high[k] < 0;
    grows = grows || low[k] > 0 || high[k] > 0;
  }
  if (crops) x = e.op(Op::Slice, {x}, {{"start", start}, {"stop", stop}});
  if (grows) x = e.op(Op::Pad, {x}, {{"low", grow_low}, {"high", grow_high}, {"value", value}});
  return x;
}

/// Negative indices count from the end of a dim of size `dim`: idx < 0 ? idx + dim : idx.
/// Skipped when the indices are known and none is negative.
ValueId wrap_negative(NodeContext& n, int i, ValueId idx, int64_t dim) {
  if (const Tensor* t = n.constant(i)) {
    bool negative = false;
    for (int64_t k = 0; k < t->numel(); ++k) negative = negative || t->get_double(k) < 0;
    if (!negative) return idx;
  }
  Emitter& e = n.e();
  return e.op(Op::Select, {e.op(Op::Lt, {idx, i64(e, 0)}), e.add(idx, i64(e, dim)), idx});
}

/// Input i as i64 indices (ONNX allows int32 and int64).
ValueId index_input(NodeContext& n, int i) {
  ValueId v = n.input(i);
  if (!is_integer(n.e().type(v).dtype)) n.invalid("indices must be integers");
  return cast(n.e(), v, DType::i64);
}

// ---- Constants and shapes -----------------------------------------------------------

void constant(NodeContext& n) {
  n.expect_attrs({"value", "value_float", "value_floats", "value_int", "value_ints"});
  if (const onnx::TensorProto* t = n.attr_tensor("value")) {
    StatusOr<Tensor> v = tensor_from_proto(*t, "");
    if (!v.ok()) n.invalid(v.error().message);
    n.set_constant_output(0, std::move(*v));
  } else if (n.has_attr("value_float")) {
    n.set_constant_output(0, Tensor::scalar(DType::f32, n.attr_float("value_float", 0)));
  } else if (n.has_attr("value_int")) {
    n.set_constant_output(0, Tensor::from_vector<int64_t>(Shape{}, {n.attr_int("value_int", 0)}));
  } else if (n.has_attr("value_floats")) {
    std::vector<double> v = n.attr_floats("value_floats");
    n.set_constant_output(
        0, Tensor::from_doubles(DType::f32, Shape({static_cast<int64_t>(v.size())}), v));
  } else if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    n.set_constant_output(0,
                          Tensor::from_vector<int64_t>(Shape({static_cast<int64_t>(v.size())}), v));
  } else {
    n.invalid("a Constant needs a value attribute");
  }
}

void identity(NodeContext& n) {
  n.expect_attrs({});
  if (const Tensor* t = n.constant(0)) {
    n.set_constant_output(0, *t);
  } else {
    n.set_output(0, n.input(0));
  }
}

void shape(NodeContext& n) {
  n.expect_attrs({"start", "end"});
  const Shape s = n.input_type(0).shape;
  const int64_t rank = s.rank();
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(n.attr_int("start", 0)), end = clamp(n.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(s[static_cast<int>(d)]);
  n.set_constant_output(
      0, Tensor::from_vector<int64_t>(Shape({static_cast<int64_t>(dims.size())}), dims));
}

void size(NodeContext& n) {
  n.expect_attrs({});
  n.set_constant_output(0, Tensor::from_vector<int64_t>(Shape{}, {n.input_type(0).shape.numel()}));
}

void constant_of_shape(NodeContext& n) {
  n.expect_attrs({"value"});
  const Dims shape = n.ints_input(0, "the shape");
  Tensor value = Tensor::scalar(DType::f32, 0);
  if (const onnx::TensorProto* t = n.attr_tensor("value")) {
    StatusOr<Tensor> v = tensor_from_proto(*t, "");
    if (!v.ok()) n.invalid(v.error().message);
    if (v->numel() != 1) n.invalid("value must hold one element, not " + v->type().to_string());
    value = std::move(*v);
  }
  const double x = value.get_double(0);
  if (value.dtype() == DType::i64 && static_cast<int64_t>(x) != value.data<int64_t>()[0]) {
    n.unsupported("an int64 value beyond 2^53");
  }
  for (int64_t d : shape) {
    if (d < 0) n.invalid("the shape has a negative entry " + std::to_string(d));
  }
  n.set_output(0, n.e().full(Shape(shape), x, value.dtype()));
}

void range(NodeContext& n) {
  n.expect_attrs({});
  const Type t = n.input_type(0);
  const double start = n.scalar_input(0, "start"), limit = n.scalar_input(1, "limit"),
               delta = n.scalar_input(2, "delta");
  if (delta == 0) n.invalid("delta is 0");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > double{int64_t{1} << 40}) n.unsupported("a range of more than 2^40 elements");
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) {
    // start + i·delta in the output's type (f32 arithmetic rounds differently from f64's).
    v[i] = t.dtype == DType::f32
               ? static_cast<float>(start) + static_cast<float>(i) * static_cast<float>(delta)
               : start + static_cast<double>(i) * delta;
  }
  n.set_constant_output(0,
                        Tensor::from_doubles(t.dtype, Shape({static_cast<int64_t>(v.size())}), v));
}

// ---- Reshaping ----------------------------------------------------------------------

void reshape(NodeContext& n) {
  n.expect_attrs({"allowzero"});
  const Shape in = n.input_type(0).shape;
  std::vector<int64_t> target = n.ints_input(1, "the shape");
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allowzero) {
      if (static_cast<int>(k) >= in.rank()) {
        n.invalid("shape entry 0 copies a dimension the input lacks");
      }
      target[k] = in[static_cast<int>(k)];
    }
    if (target[k] == -1) {
      if (infer >= 0) n.invalid("the shape has two -1 entries");
      infer = static_cast<int64_t>(k);
    } else if (target[k] < 0) {
      n.invalid("shape entry " + std::to_string(target[k]) + " is negative");
    } else {
      known *= target[k];
    }
  }
  if (infer >= 0) target[static_cast<size_t>(infer)] = known == 0 ? 0 : in.numel() / known;
  n.set_output(0, n.e().reshape(n.input(0), target));
}

void flatten(NodeContext& n) {
  n.expect_attrs({"axis"});
  const Dims d = n.input_type(0).shape.dims;
  const int rank = static_cast<int>(d.size());
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -rank || axis > rank) n.invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  const int64_t outer =
      std::accumulate(d.begin(), d.begin() + axis, int64_t{1}, std::multiplies<>());
  const int64_t inner = std::accumulate(d.begin() + axis, d.end(), int64_t{1}, std::multiplies<>());
  n.set_output(0, n.e().reshape(n.input(0), {outer, inner}));
}

/// Squeeze's and Unsqueeze's axes: an attribute before opset 13, an input from 13.
std::optional<Dims> axes_of(NodeContext& n, int input) {
  if (n.opset() < 13) {
    n.expect_attrs({"axes"});
    if (!n.has_attr("axes")) return std::nullopt;
    return n.attr_ints("axes");
  }
  n.expect_attrs({});
  if (!n.has_input(input)) return std::nullopt;
  return n.ints_input(input, "axes");
}

void squeeze(NodeContext& n) {
  const Dims d = n.input_type(0).shape.dims;
  const int rank = static_cast<int>(d.size());
  std::optional<Dims> axes = axes_of(n, 1);
  std::vector<bool> drop(d.size(), false);
  for (int k = 0; k < rank; ++k) drop[k] = !axes && d[k] == 1;
  for (int64_t a : axes.value_or(Dims{})) {
    const int k = axis_in(n, a, rank);
    if (d[k] != 1) {
      n.invalid("axis " + std::to_string(a) + " has size " + std::to_string(d[k]) + ", not 1");
    }
    drop[k] = true;
  }
  Dims out;
  for (int k = 0; k < rank; ++k) {
    if (!drop[k]) out.push_back(d[k]);
  }
  n.set_output(0, n.e().reshape(n.input(0), out));
}

void unsqueeze(NodeContext& n) {
  const Dims d = n.input_type(0).shape.dims;
  std::optional<Dims> axes = axes_of(n, 1);
  if (!axes) n.invalid("axes are required");
  const int rank = static_cast<int>(d.size() + axes->size());
  std::vector<bool> added(rank, false);
  for (int64_t a : *axes) {
    const int k = axis_in(n, a, rank);
    if (added[k]) n.invalid("axis " + std::to_string(a) + " is repeated");
    added[k] = true;
  }
  Dims out;
  size_t next = 0;
  for (int k = 0; k < rank; ++k) out.push_back(added[k] ? 1 : d[next++]);
  n.set_output(0, n.e().reshape(n.input(0), out));
}

void transpose(NodeContext& n) {
  n.expect_attrs({"perm"});
  const int rank = n.input_type(0).shape.rank();
  Dims perm(rank);
  for (int k = 0; k < rank; ++k) perm[k] = rank - 1 - k;
  perm = n.attr_ints("perm", perm);
  n.set_output(0, n.e().transpose(n.input(0), perm));
}

/// The output shape of broadcasting `a` and `b` both ways, or the node is invalid.
Shape broadcast(NodeContext& n, const Shape& a, const Shape& b) {
  std::optional<Shape> s = broadcast_shapes(a, b);
  if (!s) n.invalid("shapes " + a.to_string() + " and " + b.to_string() + " do not broadcast");
  return *s;
}

void expand(NodeContext& n) {
  n.expect_attrs({});
  const Shape in = n.input_type(0).shape;
  const Shape out = broadcast(n, in, Shape(n.ints_input(1, "the shape")));
  ValueId x = n.input(0);
  n.set_output(0, out == in ? x : n.e().op(Op::BroadcastTo, {x}, {{"shape", out.dims}}));
}

/// Each axis k of x repeated `times[k]` times, either as whole blocks (tile:
/// [a, b] -> [a, b, a, b]) or element by element (nearest upsampling: [a, a, b, b]).
ValueId repeat(Emitter& e, ValueId x, const Dims& times, bool blocks) {
  const Dims d = e.shape(x).dims;
  Dims split, wide, out;
  for (size_t k = 0; k < d.size(); ++k) {
    const Dims one = blocks ? Dims{1, d[k]} : Dims{d[k], 1};
    const Dims many = blocks ? Dims{times[k], d[k]} : Dims{d[k], times[k]};
    split.insert(split.end(), one.begin(), one.end());
    wide.insert(wide.end(), many.begin(), many.end());
    out.push_back(d[k] * times[k]);
  }
  ValueId y = e.op(Op::BroadcastTo, {e.reshape(x, split)}, {{"shape", wide}});
  return e.reshape(y, out);
}

void tile(NodeContext& n) {
  n.expect_attrs({});
  const Dims repeats = n.ints_input(1, "repeats");
  const int rank = n.input_type(0).shape.rank();
  if (static_cast<int>(repeats.size()) != rank) {
    n.invalid("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
              std::to_string(rank));
  }
  for (int64_t r : repeats) {
    if (r < 0) n.invalid("repeats has a negative entry " + std::to_string(r));
  }
  n.set_output(0, repeat(n.e(), n.input(0), repeats, /*blocks=*/true));
}

void depth_to_space(NodeContext& n) {
  n.expect_attrs({"blocksize", "mode"});
  const Dims d = n.input_type(0).shape.dims;
  const int64_t b = n.attr_int("blocksize", 0);
  const std::string mode = n.attr_string("mode", "DCR");
  if (d.size() != 4) n.invalid("the input must be 4-D [N, C, H, W]");
  if (b < 1 || d[1] % (b * b) != 0) n.invalid("blocksize² must divide the channels");
  if (mode != "DCR" && mode != "CRD") n.invalid("mode '" + mode + "' is neither DCR nor CRD");
  const int64_t c = d[1] / (b * b);
  Emitter& e = n.e();
  ValueId x =
      mode == "DCR"
          ? e.transpose(e.reshape(n.input(0), {d[0], b, b, c, d[2], d[3]}), {0, 3, 4, 1, 5, 2})
          : e.transpose(e.reshape(n.input(0), {d[0], c, b, b, d[2], d[3]}), {0, 1, 4, 2, 5, 3});
  n.set_output(0, e.reshape(x, {d[0], c, d[2] * b, d[3] * b}));
}

void space_to_depth(NodeContext& n) {
  n.expect_attrs({"blocksize"});
  const Dims d = n.input_type(0).shape.dims;
  const int64_t b = n.attr_int("blocksize", 0);
  if (d.size() != 4) n.invalid("the input must be 4-D [N, C, H, W]");
  if (b < 1 || d[2] % b != 0 || d[3] % b != 0) n.invalid("blocksize must divide H and W");
  Emitter& e = n.e();
  ValueId x = e.reshape(n.input(0), {d[0], d[1], d[2] / b, b, d[3] / b, b});
  x = e.transpose(x, {0, 3, 5, 1, 2, 4});
  n.set_output(0, e.reshape(x, {d[0], d[1] * b * b, d[2] / b, d[3] / b}));
}

// ---- Joining and splitting ----------------------------------------------------------

void concat(NodeContext& n) {
  n.expect_attrs({"axis"});
  if (n.opset() >= 4 && !n.has_attr("axis")) n.invalid("axis is required");
  std::vector<ValueId> parts;
  for (int i = 0; i < n.num_inputs(); ++i) parts.push_back(n.input(i));
  const int axis = axis_in(n, n.attr_int("axis", 1), n.e().rank(parts[0]));
  n.set_output(
      0, parts.size() == 1 ? parts[0] : n.e().op(Op::Concat, parts, {{"axis", int64_t{axis}}}));
}

void split(NodeContext& n) {
  n.expect_attrs({"axis", "split"});
  const Dims d = n.input_type(0).shape.dims;
  const int axis = axis_in(n, n.attr_int("axis", 0), static_cast<int>(d.size()));
  Dims sizes = n.attr_ints("split");
  if ((n.opset() < 2 || n.opset() >= 13) && n.has_input(1)) sizes = n.ints_input(1, "split");
  const int64_t parts = n.num_outputs();
  if (sizes.empty()) {
    if (d[axis] % parts != 0) {
      n.invalid("dim " + std::to_string(d[axis]) + " does not split into " + std::to_string(parts) +
                " equal parts");
    }
    sizes.assign(static_cast<size_t>(parts), d[axis] / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != d[axis]) {
    n.invalid("split sizes must be one per output and add up to " + std::to_string(d[axis]));
  }
  ValueId x = n.input(0);
  int64_t at = 0;
  for (int64_t k = 0; k < parts; ++k) {
    n.set_output(static_cast<int>(k), slice_axis(n.e(), x, axis, at, at + sizes[k]));
    at += sizes[k];
  }
}

/// ONNX Slice's clamping of (start, end) for a dim of size d: into [0, d] for a
/// positive step, [-1, d-1] for a negative one, negative values counting from the end.
std::pair<int64_t, int64_t> slice_bounds(int64_t start, int64_t end, int64_t step, int64_t d) {
  auto wrap = [d](int64_t v) { return v < 0 ? v + d : v; };  // no overflow: d >= 0
  const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? d : d - 1;
  return {std::clamp(wrap(start), lo, hi), std::clamp(wrap(end), lo, hi)};
}

// Positive steps are one weft slice; each axis with a negative step is then a gather of
// the indices start, start - |step|, ... (> end).
void slice(NodeContext& n) {
  Dims starts, ends, axes, steps;
  if (n.opset() < 10) {
    n.expect_attrs({"starts", "ends", "axes"});
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    n.expect_attrs({});
    starts = n.ints_input(1, "starts");
    ends = n.ints_input(2, "ends");
    if (n.has_input(3)) axes = n.ints_input(3, "axes");
    if (n.has_input(4)) steps = n.ints_input(4, "steps");
  }
  const Dims d = n.input_type(0).shape.dims;
  const int rank = static_cast<int>(d.size());
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    n.invalid("starts, ends, axes and steps must have one entry each per sliced axis");
  }
  Emitter& e = n.e();
  Dims lo(rank, 0), hi = d, step(rank, 1);
  struct Reversed {
    int axis;
    int64_t start, count, step;
  };
  std::vector<Reversed> reversed;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int a = axis_in(n, axes[k], rank);
    if (steps[k] == 0) n.invalid("a step is 0");
    auto [s, t] = slice_bounds(starts[k], ends[k], steps[k], d[a]);
    if (steps[k] > 0) {
      lo[a] = s;
      hi[a] = std::max(s, t);
      step[a] = steps[k];
    } else {
      reversed.push_back({a, s, s > t ? (s - t - 1) / -steps[k] + 1 : 0, -steps[k]});
    }
  }
  ValueId x = n.input(0);
  if (lo != Dims(rank, 0) || hi != d || step != Dims(rank, 1)) {
    x = e.op(Op::Slice, {x}, {{"start", lo}, {"stop", hi}, {"step", step}});
  }
  for (const Reversed& r : reversed) {
    ValueId idx = e.sub(i64(e, r.start), e.mul(iota(e, {r.count}, 0), i64(e, r.step)));
    x = gather1(e, x, r.axis, idx);
  }
  n.set_output(0, x);
}

// ---- Indexing -----------------------------------------------------------------------

void gather(NodeContext& n) {
  n.expect_attrs({"axis"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Dims d = e.shape(x).dims;
  const int axis = axis_in(n, n.attr_int("axis", 0), static_cast<int>(d.size()));
  ValueId idx = wrap_negative(n, 1, index_input(n, 1), d[axis]);
  const Dims idx_dims = e.shape(idx).dims;
  const int64_t count =
      std::accumulate(idx_dims.begin(), idx_dims.end(), int64_t{1}, std::multiplies<>());
  ValueId y = gather1(e, x, axis, idx_dims.size() == 1 ? idx : e.reshape(idx, {count}));
  Dims out(d.begin(), d.begin() + axis);
  out.insert(out.end(), idx_dims.begin(), idx_dims.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  n.set_output(0, idx_dims.size() == 1 ? y : e.reshape(y, out));
}

// data[..., idx[i, j, k], ...] as a 1-D gather from the flattened data at the flat index
// sum over dims of coordinate · stride, the coordinate on `axis` being idx's value.
void gather_elements(NodeContext& n) {
  n.expect_attrs({"axis"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape s = e.shape(x);
  const int rank = s.rank();
  const int axis = axis_in(n, n.attr_int("axis", 0), rank);
  ValueId idx = wrap_negative(n, 1, index_input(n, 1), s[axis]);
  const Dims idx_dims = e.shape(idx).dims;
  if (static_cast<int>(idx_dims.size()) != rank) n.invalid("indices must have the data's rank");
  const Dims strides = s.strides();
  ValueId flat = e.mul(idx, i64(e, strides[axis]));
  for (int k = 0; k < rank; ++k) {
    if (k != axis) flat = e.add(flat, e.mul(iota(e, idx_dims, k), i64(e, strides[k])));
  }
  const int64_t count = Shape(idx_dims).numel();
  ValueId y = gather1(e, e.reshape(x, {s.numel()}), 0, e.reshape(flat, {count}));
  n.set_output(0, e.reshape(y, idx_dims));
}

// one_hot(idx) puts the new axis last; ONNX's `axis` then moves it.
void one_hot(NodeContext& n) {
  n.expect_attrs({"axis"});
  Emitter& e = n.e();
  const int64_t depth = static_cast<int64_t>(n.scalar_input(1, "depth"));
  if (depth < 1) n.invalid("depth must be >= 1");
  ValueId idx = n.input(0);
  idx = cast(e, idx, DType::i64);  // ONNX casts the indices to int64
  idx = e.op(Op::Select, {e.op(Op::Lt, {idx, i64(e, 0)}), e.add(idx, i64(e, depth)), idx});
  const int rank = e.rank(idx) + 1;
  const int axis = axis_in(n, n.attr_int("axis", -1), rank);
  ValueId hot = e.op(Op::OneHot, {idx}, {{"depth", depth}, {"dtype", DType::boolean}});
  ValueId values = n.input(2);
  if (e.shape(values).numel() != 2) n.invalid("values must hold [off, on]");
  values = e.reshape(values, {2});
  ValueId off = e.reshape(slice_axis(e, values, 0, 0, 1), Dims{});
  ValueId on = e.reshape(slice_axis(e, values, 0, 1, 2), Dims{});
  ValueId y = e.op(Op::Select, {hot, on, off});
  if (axis != rank - 1) {
    Dims perm;
    for (int k = 0; k < rank - 1; ++k) {
      if (k == axis) perm.push_back(rank - 1);
      perm.push_back(k);
    }
    y = e.transpose(y, perm);
  }
  n.set_output(0, y);
}

/// column - row (i64) over the last two dims of `d`, offset by -k: >= 0 on and above
/// the k-th diagonal.
ValueId diagonal_offset(Emitter& e, int64_t rows, int64_t cols, ValueId k) {
  return e.sub(e.sub(iota(e, {rows, cols}, 1), iota(e, {rows, cols}, 0)), k);
}

void trilu(NodeContext& n) {
  n.expect_attrs({"upper"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Dims d = e.shape(x).dims;
  if (d.size() < 2) n.invalid("the input must have rank >= 2");
  ValueId k = n.has_input(1) ? e.reshape(cast(e, n.input(1), DType::i64), Dims{}) : i64(e, 0);
  ValueId off = diagonal_offset(e, d[d.size() - 2], d.back(), k);
  ValueId keep =
      n.attr_int("upper", 1) != 0 ? e.op(Op::Ge, {off, i64(e, 0)}) : e.op(Op::Le, {off, i64(e, 0)});
  n.set_output(0, e.op(Op::Select, {keep, x, e.full(Shape{}, 0, e.type(x).dtype)}));
}

void eye_like(NodeContext& n) {
  n.expect_attrs({"dtype", "k"});
  Emitter& e = n.e();
  const Type t = n.input_type(0);
  if (t.shape.rank() != 2) n.invalid("the input must be 2-D");
  DType dtype = t.dtype;
  if (n.has_attr("dtype")) {
    StatusOr<DType> dt = dtype_from_onnx(static_cast<int>(n.attr_int("dtype", 0)));
    if (!dt.ok()) n.unsupported(dt.error().message);
    dtype = *dt;
  }
  ValueId off = diagonal_offset(e, t.shape[0], t.shape[1], i64(e, n.attr_int("k", 0)));
  n.set_output(0, cast(e, e.op(Op::Eq, {off, i64(e, 0)}), dtype));
}

// ---- Padding ------------------------------------------------------------------------

/// The source index of each padded position along an axis of size d, for `reflect`
/// (periodic with period 2(d-1): 0 1 2 1 0 1 2...) or `edge` (clamped).
ValueId pad_indices(Emitter& e, int64_t d, int64_t low, int64_t high, bool reflect) {
  ValueId j = e.sub(iota(e, {low + d + high}, 0), i64(e, low));
  if (!reflect || d == 1) {
    return e.op(Op::Minimum, {e.op(Op::Maximum, {j, i64(e, 0)}), i64(e, d - 1)});
  }
  const int64_t period = 2 * (d - 1);
  ValueId shifted = e.add(j, i64(e, (low / period + 1) * period));  // >= 0
  ValueId r = e.sub(shifted, e.mul(e.div(shifted, i64(e, period)), i64(e, period)));
  return e.sub(i64(e, d - 1), e.op(Op::Abs, {e.sub(r, i64(e, d - 1))}));
}

void pad(NodeContext& n) {
  Dims pads;
  double value = 0;
  if (n.opset() < 11) {
    n.expect_attrs({"mode", "pads", "value"});
    pads = n.attr_ints("pads");
    value = n.attr_float("value", 0);
  } else {
    n.expect_attrs({"mode"});
    pads = n.ints_input(1, "pads");
    if (n.has_input(2)) value = n.scalar_input(2, "constant_value");
  }
  const std::string mode = n.attr_string("mode", "constant");
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Dims d = e.shape(x).dims;
  const size_t rank = d.size();
  if (pads.size() != 2 * rank) {
    n.invalid("pads must have 2·rank = " + std::to_string(2 * rank) + " entries");
  }
  const Dims low(pads.begin(), pads.begin() + static_cast<long>(rank)),
      high(pads.begin() + static_cast<long>(rank), pads.end());
  if (mode == "constant") {
    n.set_output(0, pad_or_crop(e, x, low, high, value));
    return;
  }
  if (mode != "reflect" && mode != "edge") {
    n.invalid("mode '" + mode + "' is not constant, reflect or edge");
  }
  for (size_t k = 0; k < rank; ++k) {
    if (low[k] == 0 && high[k] == 0) continue;
    if (low[k] < 0 || high[k] < 0) n.unsupported("negative pads in mode '" + mode + "'");
    if (d[k] == 0) n.invalid("mode '" + mode + "' pads an empty axis");
    x = gather1(e, x, static_cast<int>(k),
                pad_indices(e, d[k], low[k], high[k], mode == "reflect"));
  }
  n.set_output(0, x);
}

// ---- Scans and resizing -------------------------------------------------------------

// Inclusive prefix sums in log2(n) steps (Hillis-Steele): y += y shifted by 1, 2, 4...
// along the axis, the shift a pad with zeros that crops what falls off the end. Exact
// for integers; for floats the additions are grouped as a tree, not left to right.
void cum_sum(NodeContext& n) {
  n.expect_attrs({"exclusive", "reverse"});
  Emitter& e = n.e();
  ValueId y = n.input(0);
  const Dims d = e.shape(y).dims;
  const int axis =
      axis_in(n, static_cast<int64_t>(n.scalar_input(1, "axis")), static_cast<int>(d.size()));
  const bool reverse = n.attr_int("reverse", 0) != 0;
  auto shift = [&](ValueId v, int64_t s) {
    Dims low(d.size(), 0), high(d.size(), 0);
    low[axis] = reverse ? -s : s;
    high[axis] = reverse ? s : -s;
    return pad_or_crop(e, v, low, high, 0.0);
  };
  if (n.attr_int("exclusive", 0) != 0) y = shift(y, 1);
  for (int64_t s = 1; s < d[axis]; s *= 2) y = e.add(y, shift(y, s));
  n.set_output(0, y);
}

/// The integer factor of each axis from Resize's/Upsample's scales or sizes, or refused.
Dims integer_scales(NodeContext& n, const Dims& in, const std::vector<double>& scales,
                    const Dims& sizes) {
  Dims out;
  for (size_t k = 0; k < in.size(); ++k) {
    const double s =
        scales.empty() ? (in[k] == 0 ? 1.0 : static_cast<double>(sizes[k]) / in[k]) : scales[k];
    if (s < 1 || s != std::floor(s)) {
      n.unsupported("scale " + format_float(s) + " (only integer upsampling)");
    }
    out.push_back(static_cast<int64_t>(s));
  }
  return out;
}

std::vector<double> doubles_input(NodeContext& n, int i, std::string_view what) {
  const Tensor* t = n.constant(i);
  if (t == nullptr) n.unsupported(std::string(what) + " computed at run time");
  return t->to_doubles();
}

void upsample_nearest(NodeContext& n, const Dims& factors) {
  const Dims in = n.input_type(0).shape.dims;
  if (factors.size() != in.size()) n.invalid("scales need one entry per axis");
  n.set_output(0, repeat(n.e(), n.input(0), factors, /*blocks=*/false));
}

void upsample(NodeContext& n) {
  n.expect_attrs({"mode", "scales"});
  if (n.attr_string("mode", "nearest") != "nearest") {
    n.unsupported("mode '" + n.attr_string("mode", "") + "'");
  }
  const Dims in = n.input_type(0).shape.dims;
  std::vector<double> scales =
      n.opset() < 9 ? n.attr_floats("scales") : doubles_input(n, 1, "scales");
  if (scales.size() != in.size()) n.invalid("scales need one entry per axis");
  upsample_nearest(n, integer_scales(n, in, scales, {}));
}

// Nearest resizing by integer factors is repeating each element, for the coordinate
// transformations and rounding where every output maps back to its own input cell.
void resize(NodeContext& n) {
  n.expect_attrs({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                  "exclude_outside", "extrapolation_value"});
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest") n.unsupported("mode '" + mode + "'");
  const std::string ctm =
      n.attr_string("coordinate_transformation_mode", n.opset() < 11 ? "asymmetric" : "half_pixel");
  const std::string rounding =
      n.attr_string("nearest_mode", n.opset() < 11 ? "floor" : "round_prefer_floor");
  const bool centred = ctm == "half_pixel" || ctm == "pytorch_half_pixel";
  const bool floors = rounding == "floor" && (ctm == "asymmetric" || ctm == "tf_half_pixel_for_nn");
  if (!centred && !floors) {
    n.unsupported("coordinate_transformation_mode '" + ctm + "' with nearest_mode '" + rounding +
                  "'");
  }
  const Dims in = n.input_type(0).shape.dims;
  std::vector<double> scales;
  Dims sizes;
  const int scales_at = n.opset() < 11 ? 1 : 2;
  if (n.has_input(scales_at)) scales = doubles_input(n, scales_at, "scales");
  if (scales.empty() && n.opset() >= 11 && n.has_input(3)) sizes = n.ints_input(3, "sizes");
  if (scales.empty() && sizes.size() != in.size()) {
    n.invalid("give scales or sizes, one entry per axis");
  }
  if (!scales.empty() && scales.size() != in.size()) n.invalid("scales need one entry per axis");
  upsample_nearest(n, integer_scales(n, in, scales, sizes));
}

template <const char* kWhat>
void data_dependent(NodeContext& n) {
  n.unsupported(std::string(kWhat) +
                " (its output shape depends on the input's values; weft's "
                "shapes are static)");
}
constexpr char kNonZero[] = "NonZero", kCompress[] = "Compress", kUnique[] = "Unique";

const OpConverter kOps[] = {
    {"Constant", 1, constant},
    {"Identity", 1, identity},
    {"Shape", 1, shape},
    {"Size", 1, size},
    {"ConstantOfShape", 9, constant_of_shape},
    {"Range", 11, range},
    {"Reshape", 5, reshape},
    {"Flatten", 1, flatten},
    {"Squeeze", 1, squeeze},
    {"Unsqueeze", 1, unsqueeze},
    {"Transpose", 1, transpose},
    {"Expand", 8, expand},
    {"Tile", 6, tile},
    {"DepthToSpace", 1, depth_to_space},
    {"SpaceToDepth", 1, space_to_depth},
    {"Concat", 1, concat},
    {"Split", 1, split},
    {"Slice", 1, slice},
    {"Gather", 1, gather},
    {"GatherElements", 11, gather_elements},
    {"OneHot", 9, one_hot},
    {"Trilu", 14, trilu},
    {"EyeLike", 9, eye_like},
    {"Pad", 2, pad},
    {"CumSum", 11, cum_sum},
    {"Upsample", 7, upsample},
    {"Resize", 10, resize},
    {"NonZero", 9, data_dependent<kNonZero>},
    {"Compress", 9, data_dependent<kCompress>},
    {"Unique", 11, data_dependent<kUnique>},
};

}  // namespace

std::span<const OpConverter> tensor_converters() { return kOps; }

}  // namespace weft::onnx_io

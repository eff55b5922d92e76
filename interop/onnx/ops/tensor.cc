// Tensors as data: constants, shapes and the movement ops (reshape, squeeze, transpose,
// expand, tile, concat, split, slice). Indexing (gather, pad, one-hot, trilu, cumsum,
// resize) is ops/indexing.cc; the helpers both use are ops/tensor_util.h.
//
// weft's shapes are static: sizes, axes and repeats must be known at import time
// (ints_input refuses computed ones); the data itself may be computed. Ops whose output
// shape depends on the data (NonZero, Compress, Unique) are refused. Index arithmetic
// (reversed slices) is emitted as i64 ops on `iota`, so a converter never needs a
// constant tensor of its own.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "interop/onnx/convert.h"
#include "interop/onnx/ops/tensor_util.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {
namespace tensor {  // this file's names, apart in the importer's unity units

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
    {"NonZero", 9, data_dependent<kNonZero>},
    {"Compress", 9, data_dependent<kCompress>},
    {"Unique", 11, data_dependent<kUnique>},
};

}  // namespace tensor
}  // namespace

std::span<const OpConverter> tensor_converters() { return tensor::kOps; }

}  // namespace weft::onnx_io

// Indexing: gathers (Gather, GatherElements), tensors made from indices (OneHot, Trilu,
// EyeLike), padding, prefix sums (CumSum) and nearest resizing by integer factors
// (Resize, Upsample). The helpers shared with ops/tensor.cc are ops/tensor_util.h.
//
// Indices may be computed at run time; pads, axes and scales must be known at import
// time. Index arithmetic (negative indices, reflect padding, flat offsets) is emitted as
// i64 ops on `iota`, so a converter never needs a constant tensor of its own.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <string_view>

#include "interop/onnx/convert.h"
#include "interop/onnx/ops/tensor_util.h"
#include "interop/onnx/reader.h"
#include "ir/cast.h"

namespace weft::onnx_io {
namespace {
namespace indexing {  // this file's names, apart in the importer's unity units

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
  return cast_to(n.e(), v, DType::i64);
}

// ---- Gathering ----------------------------------------------------------------------

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
  idx = cast_to(e, idx, DType::i64);  // ONNX casts the indices to int64
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
  ValueId k = n.has_input(1) ? e.reshape(cast_to(e, n.input(1), DType::i64), Dims{}) : i64(e, 0);
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
  n.set_output(0, cast_to(e, e.op(Op::Eq, {off, i64(e, 0)}), dtype));
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
  if (t == nullptr) n.computed_at_run_time(i, std::string(what));
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
  // half_pixel maps output x to (x + 0.5) / s - 0.5, which never lies on a .5 for an
  // integer s: rounding to nearest repeats, floor and ceil do not (ceil maps 1 of 2 to 1).
  const bool centred = (ctm == "half_pixel" || ctm == "pytorch_half_pixel") &&
                       (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil");
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

const OpConverter kOps[] = {
    {"Gather", 1, gather},
    {"GatherElements", 11, gather_elements},
    {"OneHot", 9, one_hot},
    {"Trilu", 14, trilu},
    {"EyeLike", 9, eye_like},
    {"Pad", 2, pad},
    {"CumSum", 11, cum_sum},
    {"Upsample", 7, upsample},
    {"Resize", 10, resize},
};

}  // namespace indexing
}  // namespace

std::span<const OpConverter> indexing_converters() { return indexing::kOps; }

}  // namespace weft::onnx_io

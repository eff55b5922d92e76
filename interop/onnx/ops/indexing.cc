// Indexing: gathers (Gather, GatherElements), tensors made from indices (OneHot, Trilu,
// EyeLike), padding, prefix sums (CumSum) and resizing (Resize, Upsample: nearest, linear
// and cubic interpolation over static shapes). The helpers shared with ops/tensor.cc are ops/tensor_util.h.
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

/// Resize's interpolation, as the ONNX reference implementation defines it.
struct Interpolation {
  std::string mode;      ///< nearest, linear or cubic
  std::string ctm;       ///< coordinate_transformation_mode
  std::string rounding;  ///< nearest_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  /// tf_crop_and_resize's region, per axis the start and end as fractions of the input
  /// (ONNX's roi: the starts of every axis, then the ends), and the value of the output
  /// read from outside the input.
  std::vector<double> roi = {};
  double extrapolation_value = 0;
};

/// The input coordinate (f64, as the reference computes it) that each of `out` output
/// positions of axis `axis` reads, the axis resized from `in` by `scale`.
ValueId source_coordinate(NodeContext& n, const Interpolation& m, int axis, int64_t in,
                          int64_t out, double scale) {
  Emitter& e = n.e();
  auto c = [&](double v) { return e.constant(v, DType::f64); };
  ValueId x =
      e.op(Op::Iota, {}, {{"shape", Dims{out}}, {"axis", int64_t{0}}, {"dtype", DType::f64}});
  const double width = scale * static_cast<double>(in);  // the output length before rounding
  auto centred = [&] { return e.div(e.add(x, c(0.5)), c(scale)); };  // (x + 0.5) / scale
  if (m.ctm == "half_pixel") return e.sub(centred(), c(0.5));
  if (m.ctm == "pytorch_half_pixel") {
    return width == 1 ? e.full(Shape(Dims{out}), -0.5, DType::f64) : e.sub(centred(), c(0.5));
  }
  if (m.ctm == "align_corners") {
    if (width == 1) return e.full(Shape(Dims{out}), 0, DType::f64);
    return e.div(e.mul(x, c(static_cast<double>(in - 1))), c(width - 1));
  }
  if (m.ctm == "asymmetric") return e.div(x, c(scale));
  if (m.ctm == "tf_half_pixel_for_nn") return centred();
  if (m.ctm == "tf_crop_and_resize") {  // the spec's: from roi's start to its end
    const double start = m.roi[axis], end = m.roi[m.roi.size() / 2 + axis];
    const double last = static_cast<double>(in - 1);
    if (out == 1) return e.full(Shape(Dims{out}), (start + end) / 2 * last, DType::f64);
    return e.add(e.div(e.mul(x, c((end - start) * last)), c(static_cast<double>(out - 1))),
                 c(start * last));
  }
  n.unsupported("coordinate_transformation_mode '" + m.ctm + "'");
}

/// The weight of each of the taps around a coordinate whose fraction is `ratio`
/// (in (0, 1]: 1 on an input cell): linear's two, cubic's four (Keys, a = cubic_coeff_a).
std::vector<ValueId> tap_weights(Emitter& e, const Interpolation& m, ValueId ratio) {
  auto c = [&](double v) { return e.constant(v, DType::f64); };
  ValueId one_minus = e.sub(c(1), ratio);
  if (m.mode == "linear") return {one_minus, ratio};
  const double a = m.cubic_a;
  auto near = [&](ValueId r) {  // ((a + 2) r - (a + 3)) r² + 1, for |d| <= 1
    return e.add(e.mul(e.mul(e.sub(e.mul(c(a + 2), r), c(a + 3)), r), r), c(1));
  };
  auto far = [&](ValueId r) {  // ((a u - 5a) u + 8a) u - 4a with u = r + 1, for 1 < |d| < 2
    ValueId u = e.add(r, c(1));
    return e.sub(e.mul(e.add(e.mul(e.sub(e.mul(c(a), u), c(5 * a)), u), c(8 * a)), u), c(4 * a));
  };
  return {far(ratio), near(ratio), near(one_minus), far(one_minus)};
}

/// Resizes axis `axis` of y to `out` positions. Shapes are static, so every output
/// position's taps (input indices) and weights are known: nearest is one gather with
/// an index vector, linear two gathers and a weighted sum, cubic four. The taps are the
/// reference's: the `taps` indices nearest the coordinate (the lower on a tie) within the
/// input padded by taps/2 cells of its edge values; `exclude_outside` drops the padding's
/// and renormalises.
ValueId resize_axis(NodeContext& n, const Interpolation& m, ValueId y, int axis, int64_t out,
                    double scale) {
  Emitter& e = n.e();
  const Dims d = e.shape(y).dims;
  const int64_t in = d[axis];
  auto c = [&](double v) { return e.constant(v, DType::f64); };
  ValueId x = source_coordinate(n, m, axis, in, out, scale);
  ValueId below = e.op(Op::Floor, {x});
  ValueId on_cell = e.op(Op::Eq, {x, below});
  ValueId ratio = e.op(Op::Select, {on_cell, c(1), e.sub(x, below)});
  const int64_t taps = m.mode == "cubic" ? 4 : 2, pad = taps / 2;
  // The window's first tap: from x - taps/2 on a cell, else floor(x) - taps/2 + 1,
  // moved inside [-pad, in - 1 + pad].
  ValueId first = e.add(below, e.op(Op::Select, {on_cell, c(static_cast<double>(-pad)),
                                                 c(static_cast<double>(1 - pad))}));
  first = e.op(Op::Minimum, {e.op(Op::Maximum, {first, c(static_cast<double>(-pad))}),
                             c(static_cast<double>(in - 1 + pad - (taps - 1)))});
  first = cast_to(e, first, DType::i64);
  Dims along(d.size(), 1);  // a vector over the output positions, broadcast along the axis
  along[axis] = out;
  // tf_crop_and_resize gives extrapolation_value where the coordinate is off the input.
  auto extrapolated = [&](ValueId v) {
    if (m.ctm != "tf_crop_and_resize") return v;
    ValueId off = e.op(Op::Or, {e.op(Op::Lt, {x, c(0)}),
                                e.op(Op::Gt, {x, c(static_cast<double>(in - 1))})});
    return e.op(Op::Select, {e.reshape(off, along),
                             e.constant(m.extrapolation_value, e.type(v).dtype), v});
  };
  auto clamped = [&](ValueId idx) {  // the padding's cells are copies of the edge's
    return e.op(Op::Minimum, {e.op(Op::Maximum, {idx, i64(e, 0)}), i64(e, in - 1)});
  };
  if (m.mode == "nearest") {  // the second tap on a cell, else as nearest_mode rounds
    ValueId second = on_cell;
    if (m.rounding == "round_prefer_floor") {
      second = e.op(Op::Gt, {ratio, c(0.5)});
    } else if (m.rounding == "round_prefer_ceil") {
      second = e.op(Op::Ge, {ratio, c(0.5)});
    } else if (m.rounding == "ceil") {
      second = e.full(Shape(Dims{out}), 1, DType::boolean);
    } else if (m.rounding != "floor") {
      n.unsupported("nearest_mode '" + m.rounding + "'");
    }
    second = e.op(Op::Select, {on_cell, on_cell, second});
    return extrapolated(
        gather1(e, y, axis, clamped(e.add(first, cast_to(e, second, DType::i64)))));
  }
  if (!is_floating(e.type(y).dtype)) {
    n.unsupported("mode '" + m.mode + "' on " + std::string(dtype_name(e.type(y).dtype)) +
                  " data");
  }
  std::vector<ValueId> weights = tap_weights(e, m, ratio);
  std::vector<ValueId> index;
  for (int64_t t = 0; t < taps; ++t) index.push_back(e.add(first, i64(e, t)));
  if (m.exclude_outside) {
    ValueId total = c(0);
    for (int64_t t = 0; t < taps; ++t) {
      ValueId outside = e.op(Op::Ne, {index[t], clamped(index[t])});
      weights[t] = e.op(Op::Select, {outside, c(0), weights[t]});
      total = e.add(total, weights[t]);
    }
    for (ValueId& w : weights) w = e.div(w, total);
  }
  auto term = [&](int64_t t) {
    ValueId w = cast_to(e, e.reshape(weights[t], along), e.type(y).dtype);
    return e.mul(gather1(e, y, axis, clamped(index[t])), w);
  };
  ValueId sum = term(0);
  for (int64_t t = 1; t < taps; ++t) sum = e.add(sum, term(t));
  return extrapolated(sum);
}

/// Nearest resizing by integer factors is repeating each element, for the coordinate
/// transformations and rounding where every output maps back to its own input cell:
/// half_pixel maps output x to (x + 0.5) / s - 0.5, which never lies on a .5 for an
/// integer s, so rounding to nearest repeats (floor and ceil do not: ceil maps 1 of 2
/// to 1); asymmetric with floor repeats too.
bool repeats(const Interpolation& m, const Dims& in, const Dims& out,
             const std::vector<double>& scales) {
  const bool centred = (m.ctm == "half_pixel" || m.ctm == "pytorch_half_pixel") &&
                       (m.rounding == "round_prefer_floor" || m.rounding == "round_prefer_ceil");
  const bool floors =
      m.rounding == "floor" && (m.ctm == "asymmetric" || m.ctm == "tf_half_pixel_for_nn");
  if (m.mode != "nearest" || !(centred || floors)) return false;
  for (size_t k = 0; k < in.size(); ++k) {
    if (scales[k] < 1 || scales[k] != std::floor(scales[k]) ||
        out[k] != in[k] * static_cast<int64_t>(scales[k])) {
      return false;
    }
  }
  return true;
}

/// Resizes input 0 to `out` by `scales` (one of each per axis), axis by axis.
void interpolate(NodeContext& n, const Interpolation& m, const Dims& out,
                 const std::vector<double>& scales) {
  Emitter& e = n.e();
  ValueId y = n.input(0);
  const Dims in = e.shape(y).dims;
  if (repeats(m, in, out, scales)) {
    Dims times;
    for (double s : scales) times.push_back(static_cast<int64_t>(s));
    n.set_output(0, repeat(e, y, times, /*blocks=*/false));
    return;
  }
  for (size_t k = 0; k < in.size(); ++k) {
    const bool whole = m.roi.empty() || (m.roi[k] == 0 && m.roi[in.size() + k] == 1);
    if (scales[k] == 1 && out[k] == in[k] && whole) continue;
    if (out[k] < 0) n.invalid("the output size " + std::to_string(out[k]) + " is negative");
    if (in[k] == 0 && out[k] > 0) {
      n.invalid("an empty axis cannot be resized to " + std::to_string(out[k]));
    }
    y = resize_axis(n, m, y, static_cast<int>(k), out[k], scales[k]);
  }
  n.set_output(0, y);
}

std::vector<double> doubles_input(NodeContext& n, int i, std::string_view what) {
  const Tensor* t = n.constant(i);
  if (t == nullptr) n.computed_at_run_time(i, std::string(what));
  return t->to_doubles();
}

/// floor(in · scale) per axis: the output of scaling.
Dims scaled_sizes(const Dims& in, const std::vector<double>& scales) {
  Dims out;
  for (size_t k = 0; k < in.size(); ++k) {
    out.push_back(static_cast<int64_t>(static_cast<double>(in[k]) * scales[k]));
  }
  return out;
}

// Upsample is Resize with asymmetric coordinates (and floor for nearest).
void upsample(NodeContext& n) {
  n.expect_attrs({"mode", "scales"});
  const Interpolation m{n.attr_string("mode", "nearest"), "asymmetric", "floor"};
  if (m.mode != "nearest" && m.mode != "linear") n.unsupported("mode '" + m.mode + "'");
  const Dims in = n.input_type(0).shape.dims;
  std::vector<double> scales =
      n.opset() < 9 ? n.attr_floats("scales") : doubles_input(n, 1, "scales");
  if (scales.size() != in.size()) n.invalid("scales need one entry per axis");
  interpolate(n, m, scaled_sizes(in, scales), scales);
}

// Resize as of opsets 10, 11 and 13 (the importer reads opsets up to 17, so opset 18's
// axes, antialias and keep_aspect_ratio_policy never reach it). roi is read only by
// tf_crop_and_resize.
void resize(NodeContext& n) {
  n.expect_attrs({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                  "exclude_outside", "extrapolation_value"});
  const bool v10 = n.opset() < 11;
  Interpolation m{
      n.attr_string("mode", "nearest"),
      n.attr_string("coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel"),
      n.attr_string("nearest_mode", v10 ? "floor" : "round_prefer_floor"),
      n.attr_float("cubic_coeff_a", -0.75), n.attr_int("exclude_outside", 0) != 0};
  const bool crops = m.ctm == "tf_crop_and_resize";
  if (m.mode != "nearest" && m.mode != "linear" && (m.mode != "cubic" || v10)) {
    n.invalid("mode '" + m.mode + "' is not nearest" + (v10 ? " or linear" : ", linear or cubic"));
  }
  const Dims in = n.input_type(0).shape.dims;
  if (crops) {
    m.roi = doubles_input(n, 1, "roi");
    if (m.roi.size() != 2 * in.size()) {
      n.invalid("roi needs 2·rank = " + std::to_string(2 * in.size()) + " entries");
    }
    m.extrapolation_value = n.attr_float("extrapolation_value", 0);
  }
  std::vector<double> scales;
  Dims sizes;
  const int scales_at = v10 ? 1 : 2;
  if (n.has_input(scales_at)) scales = doubles_input(n, scales_at, "scales");
  if (scales.empty() && !v10 && n.has_input(3)) sizes = n.ints_input(3, "sizes");
  if (scales.empty() && sizes.size() != in.size()) {
    n.invalid("give scales or sizes, one entry per axis");
  }
  if (!scales.empty() && scales.size() != in.size()) n.invalid("scales need one entry per axis");
  if (!scales.empty()) {  // tf_crop_and_resize scales the region: floor(in · (end - start) · s)
    std::vector<double> region = scales;
    for (size_t k = 0; crops && k < in.size(); ++k) region[k] *= m.roi[in.size() + k] - m.roi[k];
    interpolate(n, m, scaled_sizes(in, region), scales);
    return;
  }
  for (size_t k = 0; k < in.size(); ++k) {  // sizes: the scale is their ratio
    scales.push_back(static_cast<double>(sizes[k]) / static_cast<double>(in[k]));
  }
  interpolate(n, m, sizes, scales);
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

// Elementwise math and logic. ONNX's multidirectional (NumPy) broadcasting is weft's;
// before opset 7 the binary ops broadcast only their right operand, and only under
// `broadcast=1`, aligned at `axis` (legacy_rhs). Ops weft lacks are composed from its
// ops: exactly where the math allows (Ceil = -floor(-x), Round halves to even from floor,
// IsNaN = x != x, Xor = a != b, integer Mod from truncating division, BitShift on u8 from
// powers of 2, QuantizeLinear and friends to and from u8), and within a few ulp, as
// weft's own transcendental ops are, for Tan = sin/cos and the hyperbolic functions
// (from exp, log and log1p, without their cancellations or early overflows).
// Refused: Mod of floats (C's fmod has no exact composition); Asin, Acos, Atan have no
// converter (weft has no inverse trigonometric op to build them from).
#include <cfloat>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <utility>

#include "interop/onnx/convert.h"
#include "interop/onnx/reader.h"
#include "ir/cast.h"

namespace weft::onnx_io {
namespace {
namespace elementwise {  // this file's names, apart in the importer's unity units

// Opset 1's versions carry `consumed_inputs`, a memory hint of the time with no meaning
// here; opset 6 removed it.
void expect_no_attrs(NodeContext& n) {
  if (n.opset() < 6) {
    n.expect_attrs({"consumed_inputs"});
  } else {
    n.expect_attrs({});
  }
}

// Opsets 1-6: `b` broadcasts to `a`'s shape only under broadcast=1, as a one-element
// tensor or with its shape equal to a's dims from `axis` on (default: a's trailing dims).
// Its dims of size 1 repeat, as PyTorch's exports of the time expect (B [2,1] on A [2,3])
// and onnxruntime allows. It is reshaped so that NumPy broadcasting lines it up the same way.
ValueId legacy_rhs(NodeContext& n, ValueId a, ValueId b) {
  Emitter& e = n.e();
  const Shape sa = e.shape(a), sb = e.shape(b);
  if (n.attr_int("broadcast", 0) == 0) {
    if (sa != sb) {
      n.invalid("without broadcast=1 the operands must have one shape, not " + sa.to_string() +
                " and " + sb.to_string());
    }
    return b;
  }
  if (sb.numel() == 1) return sb.rank() == 0 ? b : e.reshape(b, {});
  const int64_t axis = n.attr_int("axis", sa.rank() - sb.rank());
  bool fits = axis >= 0 && axis + sb.rank() <= sa.rank();
  for (int k = 0; fits && k < sb.rank(); ++k) {
    fits = sb[k] == sa[static_cast<int>(axis) + k] || sb[k] == 1;
  }
  if (!fits) {
    n.invalid("B " + sb.to_string() + " does not match the dims of A " + sa.to_string() +
              " from axis " + std::to_string(axis));
  }
  std::vector<int64_t> dims = sb.dims;
  dims.resize(static_cast<size_t>(sa.rank() - axis), 1);
  return e.reshape(b, dims);
}

// The two operands of a binary op, with opset < 7's broadcasting applied.
std::pair<ValueId, ValueId> operands(NodeContext& n) {
  if (n.opset() >= 7) {
    n.expect_attrs({});
    return {n.input(0), n.input(1)};
  }
  n.expect_attrs({"broadcast", "axis", "consumed_inputs"});
  ValueId a = n.input(0);
  return {a, legacy_rhs(n, a, n.input(1))};
}

template <Op kOp>
void unary(NodeContext& n) {
  expect_no_attrs(n);
  n.set_output(0, n.e().op(kOp, {n.input(0)}));
}

template <Op kOp>
void binary(NodeContext& n) {
  auto [a, b] = operands(n);
  n.set_output(0, n.e().op(kOp, {a, b}));
}

// ---- Unary ops composed from weft's.

void abs(NodeContext& n) {
  expect_no_attrs(n);
  ValueId x = n.input(0);
  n.set_output(0, n.e().type(x).dtype == DType::u8 ? x : n.e().op(Op::Abs, {x}));
}

void sign(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  if (e.type(x).dtype != DType::u8) {
    n.set_output(0, e.op(Op::Sign, {x}));
    return;
  }
  n.set_output(0, cast_to(e, e.op(Op::Ne, {x, e.constant(0, DType::u8)}), DType::u8));
}

void reciprocal(NodeContext& n) {
  expect_no_attrs(n);
  ValueId x = n.input(0);
  n.set_output(0, n.e().div(n.e().constant(1, n.e().type(x).dtype), x));
}

void ceil(NodeContext& n) {
  expect_no_attrs(n);
  Emitter& e = n.e();
  n.set_output(0, e.op(Op::Neg, {e.op(Op::Floor, {e.op(Op::Neg, {n.input(0)})})}));
}

// Rounds halves to even: with f = floor(x) and d = x - f, x rounds up to f + 1 when
// d > 1/2, or d = 1/2 and f is odd. d is exact (Sterbenz) except for -1/2 < x < 0, where
// it may round to 1/2 or 1 and either way gives the right answer, 0. NaN and ±inf fall
// through as f.
ValueId round_half_even(Emitter& e, ValueId x) {
  const DType dt = e.type(x).dtype;
  ValueId f = e.op(Op::Floor, {x});
  ValueId d = e.sub(x, f);
  ValueId half = e.constant(0.5, dt), two = e.constant(2, dt);
  ValueId odd = e.op(Op::Ne, {e.mul(e.op(Op::Floor, {e.div(f, two)}), two), f});
  ValueId up =
      e.op(Op::Or, {e.op(Op::Gt, {d, half}), e.op(Op::And, {e.op(Op::Eq, {d, half}), odd})});
  return e.op(Op::Select, {up, e.add(f, e.constant(1, dt)), f});
}

void round(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, round_half_even(n.e(), n.input(0)));
}

// tan = sin / cos: a quotient of two correctly rounded values, within a few ulp, as
// weft's own transcendental ops are.
void tan(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  n.set_output(0, e.div(e.op(Op::Sin, {x}), e.op(Op::Cos, {x})));
}

// ---- Hyperbolic functions, each within a few ulp over its whole range.

// Significand bits of a floating dtype.
int precision(DType dt) {
  switch (dt) {
    case DType::f64: return 53;
    case DType::f16: return 11;
    case DType::bf16: return 8;
    default: return 24;
  }
}

// Where |x| is so large that 1 + x² rounds to x² (and x² may overflow): there
// asinh(|x|) = acosh(|x|) = log(2|x|) to within the dtype's precision.
ValueId beyond_square(Emitter& e, ValueId a) {
  const DType dt = e.type(a).dtype;
  return e.op(Op::Gt, {a, e.constant(std::ldexp(1.0, precision(dt) / 2 + 1), dt)});
}

ValueId log_twice(Emitter& e, ValueId a) {
  return e.add(e.op(Op::Log, {a}), e.constant(std::numbers::ln2, e.type(a).dtype));
}

// `y` (>= 0) with the sign of x.
ValueId with_sign_of(Emitter& e, ValueId x, ValueId y) {
  ValueId negative = e.op(Op::Lt, {x, e.constant(0, e.type(x).dtype)});
  return e.op(Op::Select, {negative, e.op(Op::Neg, {y}), y});
}

// atanh(x) = (log1p(x) - log1p(-x)) / 2: the two logs have opposite signs, so nothing
// cancels.
void atanh(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  ValueId diff = e.sub(e.op(Op::Log1p, {x}), e.op(Op::Log1p, {e.op(Op::Neg, {x})}));
  n.set_output(0, e.mul(diff, e.constant(0.5, e.type(x).dtype)));
}

// cosh(x) = h·(h/2) + (1/2)/(h·h) with h = exp(|x|/2): no intermediate overflows before
// the result does (exp(|x|) would, for |x| a little below cosh's own overflow).
void cosh(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  ValueId half = e.constant(0.5, dt);
  ValueId h = e.op(Op::Exp, {e.mul(e.op(Op::Abs, {x}), half)});
  n.set_output(0, e.add(e.mul(h, e.mul(h, half)), e.div(half, e.mul(h, h))));
}

// sinh(|x|): below 1/2 its Taylor series to x^15 (the rest is under 2^-60 of the sum);
// above, h·(h/2) - (1/2)/(h·h) with h = exp(|x|/2), which cancels at most a factor
// coth(1/2) ≈ 2.2 and overflows only where the result does.
void sinh(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  ValueId a = e.op(Op::Abs, {x}), s = e.mul(a, a), half = e.constant(0.5, dt);
  ValueId series = e.constant(1, dt);  // sinh(a)/a = 1 + s/(2·3)·(1 + s/(4·5)·(1 + ...))
  for (int k = 7; k >= 1; --k) {
    series = e.add(e.constant(1, dt),
                   e.mul(s, e.mul(series, e.constant(1.0 / (2 * k * (2 * k + 1)), dt))));
  }
  ValueId h = e.op(Op::Exp, {e.mul(a, half)});
  ValueId large = e.sub(e.mul(h, e.mul(h, half)), e.div(half, e.mul(h, h)));
  ValueId y = e.op(Op::Select, {e.op(Op::Lt, {a, half}), e.mul(a, series), large});
  n.set_output(0, with_sign_of(e, x, y));
}

// asinh(|x|) = log1p(|x| + x²/(1 + sqrt(1 + x²))), which is log(|x| + sqrt(x² + 1))
// without its cancellation near 0; log(2|x|) where x² would overflow.
void asinh(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  ValueId a = e.op(Op::Abs, {x}), s = e.mul(a, a), one = e.constant(1, e.type(x).dtype);
  ValueId arg = e.add(a, e.div(s, e.add(one, e.op(Op::Sqrt, {e.add(one, s)}))));
  ValueId y = e.op(Op::Select, {beyond_square(e, a), log_twice(e, a), e.op(Op::Log1p, {arg})});
  n.set_output(0, with_sign_of(e, x, y));
}

// acosh(x) = log1p(t + sqrt(t·(x + 1))) with t = x - 1, exact near 1, where
// log(x + sqrt(x² - 1)) loses x² - 1; log(2x) where x² would overflow; NaN below 1.
void acosh(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  ValueId one = e.constant(1, e.type(x).dtype);
  ValueId t = e.sub(x, one);
  ValueId near = e.op(Op::Log1p, {e.add(t, e.op(Op::Sqrt, {e.mul(t, e.add(x, one))}))});
  n.set_output(0, e.op(Op::Select, {beyond_square(e, x), log_twice(e, x), near}));
}

// ---- Classes of floating-point values.

void is_nan(NodeContext& n) {
  n.expect_attrs({});
  ValueId x = n.input(0);
  n.set_output(0, n.e().op(Op::Ne, {x, x}));
}

void is_inf(NodeContext& n) {
  n.expect_attrs({"detect_positive", "detect_negative"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  const double inf = std::numeric_limits<double>::infinity();
  const bool pos = n.attr_int("detect_positive", 1) != 0,
             neg = n.attr_int("detect_negative", 1) != 0;
  if (pos && neg) {
    n.set_output(0, e.op(Op::Eq, {e.op(Op::Abs, {x}), e.constant(inf, dt)}));
  } else if (pos || neg) {
    n.set_output(0, e.op(Op::Eq, {x, e.constant(pos ? inf : -inf, dt)}));
  } else {
    n.set_output(0, e.full(e.shape(x), 0, DType::boolean));
  }
}

// ---- Binary ops.

void xor_op(NodeContext& n) {
  auto [a, b] = operands(n);
  n.set_output(0, n.e().op(Op::Ne, {a, b}));
}

// From opset 12 the exponent may have another dtype than the base: both are computed in
// f64 (i64 when both are integers), which holds either exactly, and the result cast to
// the base's dtype, as ONNX's reference does.
void pow(NodeContext& n) {
  auto [x, y] = operands(n);
  Emitter& e = n.e();
  const DType dx = e.type(x).dtype, dy = e.type(y).dtype;
  if (dx == dy) {
    n.set_output(0, e.op(Op::Pow, {x, y}));
    return;
  }
  const DType wide = is_floating(dx) || is_floating(dy) ? DType::f64 : DType::i64;
  ValueId r = e.op(Op::Pow, {cast_to(e, x, wide), cast_to(e, y, wide)});
  n.set_output(0, cast_to(e, r, dx));
}

// Integer Mod: r = a - (a / b)·b with weft's truncating division has a's sign (C's fmod,
// fmod=1); fmod=0 (NumPy's mod) takes b's sign, adding b where r is nonzero and its sign
// differs from b's.
void mod(NodeContext& n) {
  n.expect_attrs({"fmod"});
  Emitter& e = n.e();
  const bool fmod = n.attr_int("fmod", 0) != 0;
  ValueId a = n.input(0), b = n.input(1);
  const DType dt = e.type(a).dtype;
  if (is_floating(dt)) {
    if (!fmod) n.invalid("Mod of floating operands requires fmod=1");
    n.unsupported(std::string("Mod of ") + std::string(dtype_name(dt)) +
                  " operands (weft has no remainder op, and a - trunc(a / b) * b is not exact)");
  }
  ValueId r = e.sub(a, e.mul(e.div(a, b), b));
  if (!fmod && dt != DType::u8) {
    ValueId zero = e.constant(0, dt);
    ValueId signs_differ = e.op(Op::Ne, {e.op(Op::Lt, {r, zero}), e.op(Op::Lt, {b, zero})});
    ValueId fix = e.op(Op::And, {e.op(Op::Ne, {r, zero}), signs_differ});
    r = e.op(Op::Select, {fix, e.add(r, b), r});
  }
  n.set_output(0, r);
}

// On u8, the one unsigned dtype weft has: x << y = x·2^y (wrapping) and x >> y = x / 2^y
// (truncating), with y clamped to 7 so that 2^y stays in range; shifts of 8 or more give
// 0, as C's shifts of the promoted value do.
void bit_shift(NodeContext& n) {
  n.expect_attrs({"direction"});
  Emitter& e = n.e();
  const std::string direction = n.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    n.invalid("direction must be LEFT or RIGHT, not '" + direction + "'");
  }
  ValueId x = n.input(0), y = n.input(1);
  const DType dt = e.type(x).dtype;
  if (dt != DType::u8)
    n.invalid("BitShift takes unsigned integers, not " + std::string(dtype_name(dt)));
  ValueId seven = e.constant(7, dt);
  ValueId scale = e.op(Op::Pow, {e.constant(2, dt), e.op(Op::Minimum, {y, seven})});
  ValueId shifted = direction == "LEFT" ? e.mul(x, scale) : e.div(x, scale);
  n.set_output(0, e.op(Op::Select, {e.op(Op::Gt, {y, seven}), e.constant(0, dt), shifted}));
}

// ---- Variadic ops: Max, Min, Sum fold left to right; Mean is their Sum over the count.

template <Op kOp>
ValueId fold_inputs(NodeContext& n) {
  expect_no_attrs(n);
  if (n.num_inputs() == 0) n.invalid("it needs at least one input");
  ValueId acc = n.input(0);
  for (int i = 1; i < n.num_inputs(); ++i) acc = n.e().op(kOp, {acc, n.input(i)});
  return acc;
}

template <Op kOp>
void variadic(NodeContext& n) {
  n.set_output(0, fold_inputs<kOp>(n));
}

void mean(NodeContext& n) {
  ValueId sum = fold_inputs<Op::Add>(n);
  n.set_output(0, n.e().div(sum, n.e().constant(n.num_inputs(), n.e().type(sum).dtype)));
}

// ---- Selection and clipping.

void where(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().op(Op::Select, {n.input(0), n.input(1), n.input(2)}));
}

// Clip's optional min/max input (opset 11 on) as a rank-0 value: a constant when known
// at import time (an initializer bound is an attribute moved to an input, never a
// trained parameter).
ValueId clip_bound(NodeContext& n, int i, const char* what) {
  const Type t = n.input_type(i);
  if (t.numel() != 1)
    n.invalid(std::string(what) + " must be a scalar, not " + t.shape.to_string());
  if (const Tensor* c = n.constant(i)) return n.e().constant(c->get_double(0), t.dtype);
  ValueId v = n.input(i);
  return t.shape.rank() == 0 ? v : n.e().reshape(v, {});
}

// clip = min(max(x, lo), hi): NaN stays NaN, and lo > hi gives hi, as ONNX says. Before
// opset 11 the bounds are attributes whose defaults are float's extremes (so ±inf clip
// to ±FLT_MAX there).
void clip(NodeContext& n) {
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  std::optional<ValueId> lo, hi;
  if (n.opset() < 11) {
    n.expect_attrs({"min", "max", "consumed_inputs"});
    lo = e.constant(n.attr_float("min", -FLT_MAX), dt);
    hi = e.constant(n.attr_float("max", FLT_MAX), dt);
  } else {
    n.expect_attrs({});
    if (n.has_input(1)) lo = clip_bound(n, 1, "min");
    if (n.has_input(2)) hi = clip_bound(n, 2, "max");
  }
  if (lo) x = e.op(Op::Maximum, {x, *lo});
  if (hi) x = e.op(Op::Minimum, {x, *hi});
  n.set_output(0, x);
}

// ---- Casts.

void cast_output(NodeContext& n, int elem_type) {
  StatusOr<DType> to = dtype_from_onnx(elem_type);
  if (!to.ok()) n.e().fail(n.describe() + ": casting to " + to.error().message);
  n.set_output(0, cast_to(n.e(), n.input(0), *to));
}

// `to`: an element type number; a type name (`FLOAT`) in opset 1.
void cast(NodeContext& n) {
  n.expect_attrs({"to"});
  const onnx::AttributeProto* to = nullptr;
  for (const onnx::AttributeProto& a : n.node().attribute()) {
    if (a.name() == "to") to = &a;
  }
  if (to == nullptr) n.invalid("attribute 'to' is required");
  int elem_type = static_cast<int>(to->i());
  if (to->type() == onnx::AttributeProto::STRING) {
    onnx::TensorProto::DataType parsed;
    if (!onnx::TensorProto::DataType_Parse(to->s(), &parsed)) {
      n.invalid("'to' names no ONNX type: '" + to->s() + "'");
    }
    elem_type = parsed;
  }
  cast_output(n, elem_type);
}

void cast_like(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, cast_to(n.e(), n.input(0), n.input_type(1).dtype));
}

// ---- Linear quantization to and from u8 (int8, ONNX's other choice, is not a weft dtype).

// A scale or zero point: a scalar (per tensor), or 1-D with one entry per index of x's
// `axis` (per axis, opset 13 on), reshaped to broadcast along it. Read as state inputs:
// an initializer scale is the quantization's, never a trained parameter.
ValueId per_axis(NodeContext& n, ValueId v, const Shape& xs) {
  Emitter& e = n.e();
  const Shape s = e.shape(v);
  if (s.rank() == 0) return v;
  const int64_t raw = n.attr_int("axis", 1);
  const std::optional<int> axis = normalize_axis(raw, xs.rank());
  if (s.rank() != 1 || !axis || (s[0] != xs[*axis] && s[0] != 1)) {
    n.invalid("the scale and zero point must be scalars or 1-D along axis " + std::to_string(raw) +
              " of x " + xs.to_string() + ", not " + s.to_string());
  }
  if (s[0] == 1) return e.reshape(v, {});
  std::vector<int64_t> dims(static_cast<size_t>(xs.rank() - *axis), 1);
  dims[0] = s[0];
  return e.reshape(v, dims);
}

// y = saturate(round_half_even(x / scale) + zero_point): the cast to u8 saturates.
ValueId quantize(Emitter& e, ValueId x, ValueId scale, std::optional<ValueId> zero_point) {
  ValueId v = round_half_even(e, e.div(cast_to(e, x, DType::f32), scale));
  if (zero_point) v = e.add(v, cast_to(e, *zero_point, DType::f32));
  return cast_to(e, v, DType::u8);
}

void expect_axis_since_13(NodeContext& n) {
  if (n.opset() >= 13) {
    n.expect_attrs({"axis"});
  } else {
    n.expect_attrs({});
  }
}

void quantize_linear(NodeContext& n) {
  expect_axis_since_13(n);
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape xs = e.shape(x);
  std::optional<ValueId> zero_point;
  if (n.has_input(2)) {
    zero_point = per_axis(n, n.state_input(2), xs);
    const DType zt = e.type(*zero_point).dtype;
    if (zt != DType::u8)
      n.invalid("the zero point must be uint8 or int8, not " + std::string(dtype_name(zt)));
  }
  n.set_output(0, quantize(e, x, per_axis(n, n.state_input(1), xs), zero_point));
}

// y = (x - zero_point) · scale, the difference taken in i32 as onnxruntime does.
void dequantize_linear(NodeContext& n) {
  expect_axis_since_13(n);
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape xs = e.shape(x);
  ValueId v = cast_to(e, x, DType::i32);
  if (n.has_input(2)) v = e.sub(v, cast_to(e, per_axis(n, n.state_input(2), xs), DType::i32));
  n.set_output(0, e.mul(cast_to(e, v, DType::f32), per_axis(n, n.state_input(1), xs)));
}

// ONNX's function body: the range of x widened to hold 0, over 255 levels.
void dynamic_quantize_linear(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  ValueId zero = e.constant(0, DType::f32), top = e.constant(255, DType::f32);
  ValueId lo = e.op(Op::Minimum, {e.op(Op::Min, {x}), zero});
  ValueId hi = e.op(Op::Maximum, {e.op(Op::Max, {x}), zero});
  ValueId scale = e.div(e.sub(hi, lo), top);
  ValueId zp = e.sub(zero, e.div(lo, scale));
  zp = e.op(Op::Minimum, {e.op(Op::Maximum, {zp, zero}), top});
  ValueId zero_point = cast_to(e, round_half_even(e, zp), DType::u8);
  n.set_output(0, quantize(e, x, scale, zero_point));
  n.set_output(1, scale);
  n.set_output(2, zero_point);
}

const OpConverter kOps[] = {
    {"Abs", 1, abs},
    {"Neg", 1, unary<Op::Neg>},
    {"Exp", 1, unary<Op::Exp>},
    {"Log", 1, unary<Op::Log>},
    {"Sqrt", 1, unary<Op::Sqrt>},
    {"Reciprocal", 1, reciprocal},
    {"Tanh", 1, unary<Op::Tanh>},
    {"Sigmoid", 1, unary<Op::Sigmoid>},
    {"Relu", 1, unary<Op::Relu>},
    {"Floor", 1, unary<Op::Floor>},
    {"Ceil", 1, ceil},
    {"Not", 1, unary<Op::Not>},
    {"Sin", 7, unary<Op::Sin>},
    {"Cos", 7, unary<Op::Cos>},
    {"Tan", 7, tan},
    {"Erf", 9, unary<Op::Erf>},
    {"Sign", 9, sign},
    {"Cosh", 9, cosh},
    {"Sinh", 9, sinh},
    {"Asinh", 9, asinh},
    {"Acosh", 9, acosh},
    {"Atanh", 9, atanh},
    {"IsNaN", 9, is_nan},
    {"IsInf", 10, is_inf},
    {"Round", 11, round},
    {"Add", 1, binary<Op::Add>},
    {"Sub", 1, binary<Op::Sub>},
    {"Mul", 1, binary<Op::Mul>},
    {"Div", 1, binary<Op::Div>},
    {"Pow", 1, pow},
    {"Equal", 1, binary<Op::Eq>},
    {"Less", 1, binary<Op::Lt>},
    {"Greater", 1, binary<Op::Gt>},
    {"LessOrEqual", 12, binary<Op::Le>},
    {"GreaterOrEqual", 12, binary<Op::Ge>},
    {"And", 1, binary<Op::And>},
    {"Or", 1, binary<Op::Or>},
    {"Xor", 1, xor_op},
    {"Mod", 10, mod},
    {"BitShift", 11, bit_shift},
    {"Max", 1, variadic<Op::Maximum>},
    {"Min", 1, variadic<Op::Minimum>},
    {"Sum", 1, variadic<Op::Add>},
    {"Mean", 1, mean},
    {"Where", 9, where},
    {"Clip", 1, clip},
    {"Cast", 1, cast},
    {"CastLike", 15, cast_like},
    {"QuantizeLinear", 10, quantize_linear},
    {"DequantizeLinear", 10, dequantize_linear},
    {"DynamicQuantizeLinear", 11, dynamic_quantize_linear},
};

}  // namespace elementwise
}  // namespace

std::span<const OpConverter> elementwise_converters() { return elementwise::kOps; }

}  // namespace weft::onnx_io

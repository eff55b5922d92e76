// Elementwise math and logic. ONNX's multidirectional (NumPy) broadcasting is weft's;
// before opset 7 the binary ops broadcast only their right operand, and only under
// `broadcast=1`, aligned at `axis` (legacy_rhs). Ops weft lacks are composed exactly
// from its ops: Ceil = -floor(-x), Round halves to even from floor, IsNaN = x != x,
// Xor = a != b, integer Mod from truncating division, Tan = sin/cos. Refused: Mod of
// floats (C's fmod has no exact composition) and BitShift (its unsigned types but u8 are
// not weft dtypes).
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "interop/onnx/convert.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

// Opset 1's versions carry `consumed_inputs`, a memory hint of the time with no meaning
// here; opset 6 removed it.
void expect_no_attrs(NodeContext& n) {
  if (n.opset() < 6) {
    n.expect_attrs({"consumed_inputs"});
  } else {
    n.expect_attrs({});
  }
}

ValueId cast_to(Emitter& e, ValueId x, DType dtype) {
  return e.type(x).dtype == dtype ? x : e.op(Op::Cast, {x}, {{"dtype", dtype}});
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

// Round halves to even: with f = floor(x) and d = x - f, x rounds up to f + 1 when
// d > 1/2, or d = 1/2 and f is odd. d is exact (Sterbenz) except for -1/2 < x < 0, where
// it may round to 1/2 or 1 and either way gives the right answer, 0. NaN and ±inf fall
// through as f.
void round(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const DType dt = e.type(x).dtype;
  ValueId f = e.op(Op::Floor, {x});
  ValueId d = e.sub(x, f);
  ValueId half = e.constant(0.5, dt), two = e.constant(2, dt);
  ValueId odd = e.op(Op::Ne, {e.mul(e.op(Op::Floor, {e.div(f, two)}), two), f});
  ValueId up = e.op(Op::Or, {e.op(Op::Gt, {d, half}),
                             e.op(Op::And, {e.op(Op::Eq, {d, half}), odd})});
  n.set_output(0, e.op(Op::Select, {up, e.add(f, e.constant(1, dt)), f}));
}

// tan = sin / cos: a quotient of two correctly rounded values, within a few ulp, as
// weft's own transcendental ops are.
void tan(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  n.set_output(0, e.div(e.op(Op::Sin, {x}), e.op(Op::Cos, {x})));
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
  const bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
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

void bit_shift(NodeContext& n) { n.unsupported("BitShift (weft has no bitwise ops)"); }

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

// Clip's optional min/max input (opset 11 on) as a rank-0 value.
ValueId clip_bound(NodeContext& n, int i, const char* what) {
  ValueId v = n.input(i);
  const Shape s = n.e().shape(v);
  if (s.numel() != 1) n.invalid(std::string(what) + " must be a scalar, not " + s.to_string());
  return s.rank() == 0 ? v : n.e().reshape(v, {});
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
};

}  // namespace

std::span<const OpConverter> elementwise_converters() { return kOps; }

}  // namespace weft::onnx_io

// Activation functions, composed from weft's elementwise ops with ONNX's attribute
// defaults: Softplus is weft's op; LeakyRelu, PRelu, ThresholdedRelu, Shrink select per
// element; Elu, Selu, Celu use exp(x) - 1 as ONNX's reference does; HardSigmoid and
// HardSwish clamp; Softsign = x / (1 + |x|); Softmax, LogSoftmax and Hardmax normalize
// along an axis (or, before opset 13, over the rows of x read as a matrix).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"

namespace weft::onnx_io {
namespace {
namespace activation {  // this file's names, apart in the importer's unity units

// expect_attrs(known), where opset 1's versions also carry `consumed_inputs`, a memory
// hint of the time with no meaning here (opset 6 removed it).
void expect_attrs_since_1(NodeContext& n, std::initializer_list<std::string_view> known) {
  for (const onnx::AttributeProto& a : n.node().attribute()) {
    if (n.opset() < 6 && a.name() == "consumed_inputs") continue;
    if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
      n.unsupported("attribute '" + a.name() + "'");
    }
  }
}

// Elementwise helpers on one dtype.
struct Ew {
  Emitter& e;
  DType dt;
  ValueId c(double v) const { return e.constant(v, dt); }
  ValueId op(Op o, std::vector<ValueId> xs) const { return e.op(o, std::move(xs)); }
  ValueId select(ValueId cond, ValueId a, ValueId b) const { return op(Op::Select, {cond, a, b}); }
  ValueId exp_minus_1(ValueId x) const { return e.sub(op(Op::Exp, {x}), c(1)); }
  /// max(0, min(1, alpha·x + beta)).
  ValueId hard_sigmoid(ValueId x, double alpha, double beta) const {
    ValueId y = e.add(e.mul(x, c(alpha)), c(beta));
    return op(Op::Maximum, {op(Op::Minimum, {y, c(1)}), c(0)});
  }
};

Ew ew(NodeContext& n, ValueId x) { return Ew{n.e(), n.e().type(x).dtype}; }

void softplus(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().op(Op::Softplus, {n.input(0)}));
}

void softsign(NodeContext& n) {
  n.expect_attrs({});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  n.set_output(0, w.e.div(x, w.e.add(w.c(1), w.op(Op::Abs, {x}))));
}

// x for x >= 0, alpha·x below.
void leaky_relu(NodeContext& n) {
  expect_attrs_since_1(n, {"alpha"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double alpha = n.attr_float("alpha", 0.01);
  n.set_output(0, w.select(w.op(Op::Lt, {x, w.c(0)}), w.e.mul(x, w.c(alpha)), x));
}

// x for x >= 0, alpha·(exp(x) - 1) below.
void elu(NodeContext& n) {
  expect_attrs_since_1(n, {"alpha"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double alpha = n.attr_float("alpha", 1.0);
  n.set_output(0, w.select(w.op(Op::Lt, {x, w.c(0)}), w.e.mul(w.c(alpha), w.exp_minus_1(x)), x));
}

// gamma·x for x > 0, gamma·(alpha·exp(x) - alpha) otherwise.
void selu(NodeContext& n) {
  expect_attrs_since_1(n, {"alpha", "gamma"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double alpha = n.attr_float("alpha", 1.67326319217681884765625);
  const double gamma = n.attr_float("gamma", 1.05070102214813232421875);
  ValueId neg = w.e.sub(w.e.mul(w.c(alpha), w.op(Op::Exp, {x})), w.c(alpha));
  ValueId y = w.select(w.op(Op::Gt, {x, w.c(0)}), x, neg);
  n.set_output(0, w.e.mul(w.c(gamma), y));
}

// max(0, x) + min(0, alpha·(exp(x / alpha) - 1)).
void celu(NodeContext& n) {
  n.expect_attrs({"alpha"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double alpha = n.attr_float("alpha", 1.0);
  ValueId neg = w.e.mul(w.c(alpha), w.exp_minus_1(w.e.div(x, w.c(alpha))));
  n.set_output(0, w.e.add(w.op(Op::Maximum, {x, w.c(0)}), w.op(Op::Minimum, {neg, w.c(0)})));
}

void hard_sigmoid(NodeContext& n) {
  expect_attrs_since_1(n, {"alpha", "beta"});
  ValueId x = n.input(0);
  n.set_output(0, ew(n, x).hard_sigmoid(x, n.attr_float("alpha", 0.2), n.attr_float("beta", 0.5)));
}

void hard_swish(NodeContext& n) {
  n.expect_attrs({});
  ValueId x = n.input(0);
  n.set_output(0, n.e().mul(x, ew(n, x).hard_sigmoid(x, 1.0 / 6.0, 0.5)));
}

// x where x > alpha, else 0.
void thresholded_relu(NodeContext& n) {
  n.expect_attrs({"alpha"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double alpha = n.attr_float("alpha", 1.0);
  n.set_output(0, w.select(w.op(Op::Gt, {x, w.c(alpha)}), x, w.c(0)));
}

// x for x >= 0, slope·x below. The slope broadcasts to x's shape (opset 7 on); before,
// a 1-D slope of x's channel count holds one value per channel (axis 1), as PyTorch's
// exports of the time mean it.
void prelu(NodeContext& n) {
  expect_attrs_since_1(n, {});
  ValueId x = n.input(0), slope = n.input(1);
  const Ew w = ew(n, x);
  const Shape sx = w.e.shape(x), ss = w.e.shape(slope);
  if (n.opset() < 7 && ss.rank() == 1 && sx.rank() >= 2 && ss[0] == sx[1] && ss[0] != 1) {
    std::vector<int64_t> dims(static_cast<size_t>(sx.rank() - 1), 1);
    dims[0] = ss[0];
    slope = w.e.reshape(slope, dims);
  }
  if (broadcast_shapes(sx, w.e.shape(slope)) != sx) {
    n.invalid("the slope " + ss.to_string() + " does not broadcast to X's shape " + sx.to_string());
  }
  n.set_output(0, w.select(w.op(Op::Lt, {x, w.c(0)}), w.e.mul(x, slope), x));
}

// x + bias below -lambd, x - bias above lambd, 0 between. On integers the bounds become
// the nearest integers inside them (x < -lambd ⇔ x < ceil(-lambd)), and a fractional
// bias is refused.
void shrink(NodeContext& n) {
  n.expect_attrs({"lambd", "bias"});
  ValueId x = n.input(0);
  const Ew w = ew(n, x);
  const double lambd = n.attr_float("lambd", 0.5), bias = n.attr_float("bias", 0.0);
  const bool fl = is_floating(w.dt);
  if (!fl && bias != std::floor(bias)) {
    n.unsupported("a fractional bias (" + std::to_string(bias) + ") on " +
                  std::string(dtype_name(w.dt)) + " input");
  }
  ValueId below = w.op(Op::Lt, {x, w.c(fl ? -lambd : std::ceil(-lambd))});
  ValueId above = w.op(Op::Gt, {x, w.c(fl ? lambd : std::floor(lambd))});
  ValueId y = w.select(above, w.e.sub(x, w.c(bias)), w.c(0));
  n.set_output(0, w.select(below, w.e.add(x, w.c(bias)), y));
}

// ---- Normalizing over an axis: Softmax, LogSoftmax, Hardmax.

ValueId softmax_over(Emitter& e, ValueId x, int axis) {
  return e.op(Op::Softmax, {x}, {{"axis", int64_t{axis}}});
}

ValueId log_softmax_over(Emitter& e, ValueId x, int axis) {
  return e.op(Op::LogSoftmax, {x}, {{"axis", int64_t{axis}}});
}

// 1 at the first maximum along `axis`, 0 elsewhere: one_hot(argmax) with the new axis
// (one_hot's last) moved to `axis`.
ValueId hardmax_over(Emitter& e, ValueId x, int axis) {
  const Type t = e.type(x);
  const int rank = t.shape.rank();
  ValueId idx = e.op(Op::Argmax, {x}, {{"axis", int64_t{axis}}});
  ValueId hot = e.op(Op::OneHot, {idx}, {{"depth", t.shape[axis]}, {"dtype", t.dtype}});
  if (axis == rank - 1) return hot;
  std::vector<int64_t> perm;
  for (int d = 0; d < rank - 1; ++d) {
    if (d == axis) perm.push_back(rank - 1);
    perm.push_back(d);
  }
  return e.transpose(hot, perm);
}

// Before opset 13 these ops read x as the matrix [d0·…·d(axis-1), d(axis)·…] and
// normalize its rows (axis default 1); from 13 on they normalize along one axis
// (default -1).
template <ValueId (*kOver)(Emitter&, ValueId, int)>
void normalize(NodeContext& n) {
  n.expect_attrs({"axis"});
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape s = e.shape(x);
  const bool coerced = n.opset() < 13;
  const int64_t raw = n.attr_int("axis", coerced ? 1 : -1);
  const std::optional<int> axis = normalize_axis(raw, s.rank());
  if (!axis) n.invalid("axis " + std::to_string(raw) + " is out of range for x " + s.to_string());
  if (!coerced || *axis == s.rank() - 1) {
    n.set_output(0, kOver(e, x, *axis));
    return;
  }
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < s.rank(); ++d) (d < *axis ? rows : cols) *= s[d];
  n.set_output(0, e.reshape(kOver(e, e.reshape(x, {rows, cols}), 1), s.dims));
}

// Opset 20's Gelu. The models weft reads (up to opset 17) spell it out; the importer finds
// those spellings (fuse_gelu.h) and converts each as this node.
void gelu(NodeContext& n) {
  n.expect_attrs({"approximate"});
  const std::string mode = n.attr_string("approximate", "none");
  if (mode != "none" && mode != "tanh") n.unsupported("approximate \"" + mode + "\"");
  n.set_output(0, n.e().op(Op::Gelu, {n.input(0)}, {{"approximate", mode}}));
}

const OpConverter kOps[] = {
    {"Gelu", 20, gelu},
    {"Softplus", 1, softplus},
    {"Softsign", 1, softsign},
    {"LeakyRelu", 1, leaky_relu},
    {"Elu", 1, elu},
    {"Selu", 1, selu},
    {"Celu", 12, celu},
    {"HardSigmoid", 1, hard_sigmoid},
    {"HardSwish", 14, hard_swish},
    {"ThresholdedRelu", 10, thresholded_relu},
    {"PRelu", 1, prelu},
    {"Shrink", 9, shrink},
    {"Softmax", 1, normalize<softmax_over>},
    {"LogSoftmax", 1, normalize<log_softmax_over>},
    {"Hardmax", 1, normalize<hardmax_over>},
};

}  // namespace activation
}  // namespace

std::span<const OpConverter> activation_converters() { return activation::kOps; }

}  // namespace weft::onnx_io

// Gradient rules of the contractions and windowed ops (matmul, convolution, pooling and
// their backward ops), creation ops and assign.
//
// The backward ops are differentiable too, so a gradient graph can be differentiated
// again. With <·,·> the elementwise inner product and G the result's cotangent:
//   conv_backward_input(gy, w)  = ∂/∂x <gy, conv(x, w)>  (linear in x), so
//     <G, bi(gy, w)> = <gy, conv(G, w)>:  d/dgy = conv(G, w),
//                                           d/dw  = conv_backward_weight(G, gy);
//   conv_backward_weight(x, gy) = ∂/∂w <gy, conv(x, w)>, so
//     <G, bw(x, gy)> = <gy, conv(x, G)>:  d/dgy = conv(x, G),
//                                           d/dx  = conv_backward_input(gy, G);
//   max_pool2d_backward(x, gy) routes each window's gy to the window's first argmax, so
//     <G, mpb(x, gy)> = <gy, max_pool2d_select(x, G)>, and max_pool2d_select back;
//   avg_pool2d and avg_pool2d_backward are each other's adjoints (both linear).
// The argmax positions are piecewise constant in x: pooling's backward ops have no
// gradient w.r.t. x (zero almost everywhere; ties are measure zero).
#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

using Grads = std::vector<ValueId>;

/// `v` with its last two axes swapped.
ValueId transpose_last2(GradBuilder& b, ValueId v) {
  const int rank = b.shape(v).rank();
  IntList perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return b.op(Op::Transpose, {v}, {{"perm", perm}});
}

Grads matmul(GradBuilder& b, const Node& n, ValueId g) {
  // Full batch-broadcast gradients; the driver sums them to each operand's batch shape.
  // With transpose flags, C = A'·W' for A' = op(A), W' = op(W): the plain rule gives
  // dA' and dW', and dA = op(dA') (a transpose undoes itself).
  const bool ta = n.bool_attr("transpose_a"), tw = n.bool_attr("transpose_b");
  ValueId a = ta ? transpose_last2(b, n.operands[0]) : n.operands[0];
  ValueId w = tw ? transpose_last2(b, n.operands[1]) : n.operands[1];
  ValueId ga = b.op(Op::Matmul, {g, transpose_last2(b, w)});
  ValueId gw = b.op(Op::Matmul, {transpose_last2(b, a), g});
  return {ta ? transpose_last2(b, ga) : ga, tw ? transpose_last2(b, gw) : gw};
}

/// The node's attributes (as given: defaults stay implied) plus one more.
Attrs with(const Node& n, const char* name, Attribute value) {
  Attrs attrs = n.attrs;
  attrs[name] = std::move(value);
  return attrs;
}
/// The node's attributes less one.
Attrs without(const Node& n, const char* name) {
  Attrs attrs = n.attrs;
  attrs.erase(name);
  return attrs;
}

Grads conv(GradBuilder& b, const Node& n, ValueId g) {
  ValueId x = n.operands[0], w = n.operands[1];
  return {b.op(Op::ConvBackwardInput, {g, w}, with(n, "input_shape", b.shape(x).dims)),
          b.op(Op::ConvBackwardWeight, {x, g}, with(n, "weight_shape", b.shape(w).dims))};
}

Grads conv_backward_input(GradBuilder& b, const Node& n, ValueId g) {
  ValueId gy = n.operands[0], w = n.operands[1];
  Attrs conv = without(n, "input_shape");
  Attrs bw = conv;
  bw["weight_shape"] = b.shape(w).dims;
  return {b.op(Op::Conv, {g, w}, conv), b.op(Op::ConvBackwardWeight, {g, gy}, bw)};
}

Grads conv_backward_weight(GradBuilder& b, const Node& n, ValueId g) {
  ValueId x = n.operands[0], gy = n.operands[1];
  Attrs conv = without(n, "weight_shape");
  Attrs bi = conv;
  bi["input_shape"] = b.shape(x).dims;
  return {b.op(Op::ConvBackwardInput, {gy, g}, bi), b.op(Op::Conv, {x, g}, conv)};
}

Grads max_pool2d(GradBuilder& b, const Node& n, ValueId g) {
  // To each window's first maximum, as PyTorch (ties are not shared here).
  return {b.op(Op::MaxPool2dBackward, {n.operands[0], g}, n.attrs)};
}

Grads max_pool2d_backward(GradBuilder& b, const Node& n, ValueId g) {
  // x: piecewise constant (it only picks positions), no gradient.
  return {kNoValue, b.op(Op::MaxPool2dSelect, {n.operands[0], g}, n.attrs)};
}

Grads max_pool2d_select(GradBuilder& b, const Node& n, ValueId g) {
  // x: piecewise constant (it only picks positions), no gradient.
  return {kNoValue, b.op(Op::MaxPool2dBackward, {n.operands[0], g}, n.attrs)};
}

Grads avg_pool2d(GradBuilder& b, const Node& n, ValueId g) {
  return {b.op(Op::AvgPool2dBackward, {g}, with(n, "input_shape", b.shape(n.operands[0]).dims))};
}

Grads avg_pool2d_backward(GradBuilder& b, const Node& n, ValueId g) {
  return {b.op(Op::AvgPool2d, {g}, without(n, "input_shape"))};
}

Grads all_reduce(GradBuilder& b, const Node& n, ValueId g) {
  // Linear across ranks: y_r = Σ_s x_s (times 1/N for mean), so ∂L/∂x_s = Σ_r g_r (times
  // 1/N): the same all_reduce of the cotangent, where L is the sum of every rank's loss.
  // With a predicate (the identity where false), the same predicate; it has no gradient.
  std::vector<ValueId> operands = {g};
  if (n.operands.size() == 2) operands.push_back(n.operands[1]);
  ValueId dx = b.op(Op::AllReduce, operands, {{"reduction", n.str_attr("reduction")}});
  if (n.operands.size() == 2) return {dx, kNoValue};
  return {dx};
}

}  // namespace

void add_nn(Table& t) {
  auto rule = [&](Op op, GradRule r) { t[static_cast<int>(op)].rule = r; };
  auto none = [&](Op op, const char* why) { t[static_cast<int>(op)].not_differentiable = why; };
  rule(Op::Matmul, matmul);
  rule(Op::Conv, conv);
  rule(Op::ConvBackwardInput, conv_backward_input);
  rule(Op::ConvBackwardWeight, conv_backward_weight);
  rule(Op::MaxPool2d, max_pool2d);
  rule(Op::AvgPool2d, avg_pool2d);
  rule(Op::MaxPool2dBackward, max_pool2d_backward);  // x: piecewise constant
  rule(Op::AvgPool2dBackward, avg_pool2d_backward);
  rule(Op::MaxPool2dSelect, max_pool2d_select);  // x: piecewise constant
  none(Op::Full, "no differentiable operand");
  none(Op::Iota, "no differentiable operand");
  none(Op::RandomUniform, "random draw: not differentiable w.r.t. its key");
  none(Op::RandomBernoulli, "random draw: not differentiable w.r.t. its key");
  none(Op::Assign, "a statement (no result to differentiate)");
  none(Op::Fused, "fusion runs after autodiff: differentiate the graph before fusing it");
  // scan has several results, each with its cotangent: append_gradients differentiates
  // it itself (autodiff/scan_grad.cc); this entry is never reached.
  none(Op::Scan, "differentiated by append_gradients itself (autodiff/scan_grad.cc)");
  rule(Op::AllReduce, all_reduce);
}

}  // namespace weft::grad_rules

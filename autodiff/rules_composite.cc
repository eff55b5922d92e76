// Gradient rules of the composite ops, written with primitives (which have rules of
// their own, so second derivatives work), except attention's, which is the composite
// attention_grad (a fused kernel's backward; not differentiable again). Saved statistics
// are recomputed from the operands rather than read from the forward kernel.
#include <algorithm>

#include "autodiff/rules.h"

namespace weft::grad_rules {
namespace {

using Grads = std::vector<ValueId>;

ValueId sum_keep(GradBuilder& b, ValueId v, IntList axes) {
  return b.op(Op::Sum, {v}, {{"axes", std::move(axes)}, {"keepdims", true}});
}
ValueId mean_keep(GradBuilder& b, ValueId v, IntList axes) {
  return b.op(Op::Mean, {v}, {{"axes", std::move(axes)}, {"keepdims", true}});
}

/// The probabilities y as softmax's gradient reads them. Where the forward keeps y only
/// as one copy rounded to a half dtype (every use of y is a cast to f16 or bf16, and y is
/// no output: autocast's f32 softmax feeding a low-precision matmul), that copy widened
/// back, so that the step stores the probabilities once, in the half dtype, as PyTorch's
/// CPU autocast does (its softmax gives bf16, which its backward reads); the gradient
/// still computes in y's dtype. Otherwise y itself.
ValueId kept_probabilities(GradBuilder& b, ValueId y) {
  const Graph& g = b.graph();
  if (std::find(g.outputs().begin(), g.outputs().end(), y) != g.outputs().end()) return y;
  ValueId kept = kNoValue;
  for (const Node& user : g.nodes()) {
    if (std::find(user.operands.begin(), user.operands.end(), y) == user.operands.end()) continue;
    const bool to_half = user.op == Op::Cast && (user.dtype_attr("dtype") == DType::bf16 ||
                                                 user.dtype_attr("dtype") == DType::f16);
    if (!to_half) return y;
    if (kept == kNoValue) kept = user.result();
    else if (b.type(kept).dtype != user.dtype_attr("dtype")) return y;
  }
  if (kept == kNoValue) return y;
  return b.op(Op::Cast, {kept}, {{"dtype", b.type(y).dtype}});
}

Grads softmax(GradBuilder& b, const Node& n, ValueId g) {
  // dx = y (g - sum(g y))
  ValueId y = kept_probabilities(b, n.result());
  ValueId dot = sum_keep(b, b.mul(g, y), {n.int_attr("axis")});
  return {b.mul(y, b.sub(g, dot))};
}

Grads log_softmax(GradBuilder& b, const Node& n, ValueId g) {
  // dx = g - softmax(x) sum(g), with softmax(x) = exp(y)
  ValueId p = b.op(Op::Exp, {n.result()});
  return {b.sub(g, b.mul(p, sum_keep(b, g, {n.int_attr("axis")})))};
}

Grads layer_norm(GradBuilder& b, const Node& n, ValueId g) {
  // x̂ = (x - mean) rstd, y = x̂ γ + β, statistics over the trailing `axes`:
  //   dβ = g, dγ = g x̂ (summed over the leading axes by the driver),
  //   dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) with dx̂ = g γ.
  ValueId x = n.operands[0], gamma = n.operands[1];
  const IntList& axes = n.ints_attr("axes");
  ValueId xc = b.sub(x, mean_keep(b, x, axes));
  ValueId var = mean_keep(b, b.mul(xc, xc), axes);
  ValueId rstd = b.op(Op::Rsqrt, {b.add(var, c(b, n.float_attr("eps"), x))});
  ValueId xhat = b.mul(xc, rstd);
  ValueId dxhat = b.mul(g, gamma);
  ValueId inner = b.sub(b.sub(dxhat, mean_keep(b, dxhat, axes)),
                        b.mul(xhat, mean_keep(b, b.mul(dxhat, xhat), axes)));
  return {b.mul(rstd, inner), b.mul(g, xhat), g};
}

Grads cross_entropy(GradBuilder& b, const Node& n, ValueId g) {
  // d logits = (softmax(logits) - one_hot(labels)) g, g per row for "none" and divided
  // by N for "mean". Labels are class indices: no gradient.
  ValueId logits = n.operands[0], labels = n.operands[1];
  const Type t = b.type(logits);
  ValueId p = b.op(Op::Softmax, {logits}, {{"axis", int64_t{1}}});
  ValueId hot = b.op(Op::OneHot, {labels}, {{"depth", t.shape[1]}, {"dtype", t.dtype}});
  ValueId d = b.sub(p, hot);
  const std::string& reduction = n.str_attr("reduction");
  if (reduction == "none") {
    return {b.mul(d, b.op(Op::Reshape, {g}, {{"shape", IntList{t.shape[0], 1}}})), kNoValue};
  }
  if (reduction == "mean") g = b.div(g, c(b, static_cast<double>(t.shape[0]), g));
  return {b.mul(d, g), kNoValue};
}

Grads mse(GradBuilder& b, const Node& n, ValueId g) {
  // d pred = 2 (pred - target) g (/ numel for "mean"); d target = -d pred.
  ValueId diff = b.sub(n.operands[0], n.operands[1]);
  double scale = 2;
  if (n.str_attr("reduction") == "mean") {
    scale /= static_cast<double>(b.shape(diff).numel());
  }
  ValueId d = b.mul(b.mul(diff, c(b, scale, diff)), g);
  return {d, b.neg(d)};
}

Grads attention(GradBuilder& b, const Node& n, ValueId g) {
  // One attention_grad giving dq, dk and dv (FlashAttention-2's backward: one pass over
  // the key tiles, the probabilities recomputed from q and k, rowsum(dy∘y) from the
  // forward's result); the mask is a bool: no gradient.
  std::vector<ValueId> operands = {n.operands[0], n.operands[1], n.operands[2], n.result(), g};
  if (n.operands.size() > 3) operands.push_back(n.operands[3]);
  ValueId dq = b.op(Op::AttentionGrad, operands, n.attrs);
  Grads out = b.graph().node(b.graph().value(dq).node).results;  // dq, dk, dv
  if (n.operands.size() > 3) out.push_back(kNoValue);
  return out;
}

}  // namespace

void add_composite(Table& t) {
  auto rule = [&](Op op, GradRule r) { t[static_cast<int>(op)].rule = r; };
  rule(Op::Softmax, softmax);
  rule(Op::LogSoftmax, log_softmax);
  rule(Op::LayerNorm, layer_norm);
  rule(Op::CrossEntropy, cross_entropy);  // labels: class indices, no gradient
  rule(Op::Mse, mse);
  rule(Op::Attention, attention);  // mask: bool, no gradient
  t[static_cast<int>(Op::AttentionGrad)].not_differentiable =
      "attention's gradient is not differentiated again: a second derivative of attention "
      "needs its primitives (build it without passes/fuse_attention.h)";
}

}  // namespace weft::grad_rules

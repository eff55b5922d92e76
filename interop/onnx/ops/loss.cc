// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax over the
// classes, then the same), over input [N, C] or [N, C, d1...] with targets [N] or
// [N, d1...], an optional per-class weight (a graph value: it may be trained or fed),
// ignore_index, and reduction none / sum / mean (mean divides by the picked weights'
// sum, which is the count of targets kept when there is no weight).
#include <optional>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {
namespace loss {  // this file's names, apart in the importer's unity units

/// The NLL of log-probabilities `x` [N, C, d...] at `target` [N, d...] with input
/// `weight_input` (-1: none) and the node's reduction and ignore_index.
ValueId nll(NodeContext& n, ValueId x, ValueId target, int weight_input) {
  Emitter& e = n.e();
  const Type t = e.type(x), tt = e.type(target);
  const int rank = t.shape.rank();
  if (rank < 2) n.invalid("the input must be [N, C, ...], got " + t.to_string());
  if (!is_integer(tt.dtype)) n.invalid("the target must hold class indices, got " + tt.to_string());
  Shape expected = t.shape;
  expected.dims.erase(expected.dims.begin() + 1);
  if (tt.shape != expected) {
    n.invalid("the target " + tt.to_string() + " must be the input's shape without the class axis, " +
              expected.to_string());
  }
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    n.invalid("reduction '" + reduction + "' is not none, sum or mean");
  }
  const int64_t classes = t.shape[1];
  // Classes last: [N, d..., C], against the one-hot target [N, d..., C].
  IntList perm = {0};
  for (int i = 2; i < rank; ++i) perm.push_back(i);
  perm.push_back(1);
  ValueId picked_at = e.op(Op::OneHot, {target}, {{"depth", classes}, {"dtype", DType::boolean}});
  ValueId zero = e.constant(0.0, t.dtype);
  auto pick = [&](ValueId per_class) {
    return e.sum(e.op(Op::Select, {picked_at, per_class, zero}), {-1});
  };
  ValueId loss = e.op(Op::Neg, {pick(rank == 2 ? x : e.transpose(x, perm))});
  std::optional<ValueId> weight;  // the picked weights [N, d...], when not all 1
  if (weight_input >= 0 && n.has_input(weight_input)) {
    ValueId w = n.input(weight_input);
    if (e.type(w) != Type{t.dtype, {classes}}) {
      n.invalid("the weight must be " + Type{t.dtype, {classes}}.to_string() + ", got " + e.type(w).to_string());
    }
    weight = pick(w);
  }
  if (n.has_attr("ignore_index")) {
    ValueId keep = e.op(Op::Ne, {target, e.constant(static_cast<double>(n.attr_int("ignore_index", 0)), tt.dtype)});
    weight = e.op(Op::Select, {keep, weight ? *weight : e.constant(1.0, t.dtype), zero});
  }
  if (weight) loss = e.mul(loss, *weight);
  if (reduction == "none") return loss;
  auto total = [&](ValueId v) { return e.op(Op::Sum, {v}); };  // over every axis
  if (reduction == "sum") return total(loss);
  if (!weight) return e.op(Op::Mean, {loss});
  return e.div(total(loss), total(*weight));
}

void nll_loss(NodeContext& n) {
  n.expect_attrs({"ignore_index", "reduction"});
  n.set_output(0, nll(n, n.input(0), n.input(1), 2));
}

void softmax_cross_entropy_loss(NodeContext& n) {
  n.expect_attrs({"ignore_index", "reduction"});
  ValueId log_prob = n.e().op(Op::LogSoftmax, {n.input(0)}, {{"axis", int64_t{1}}});
  n.set_output(0, nll(n, log_prob, n.input(1), 2));
  if (n.wants_output(1)) n.set_output(1, log_prob);
}

const OpConverter kOps[] = {
    {"NegativeLogLikelihoodLoss", 12, nll_loss},
    {"SoftmaxCrossEntropyLoss", 12, softmax_cross_entropy_loss},
};

}  // namespace loss
}  // namespace

std::span<const OpConverter> loss_converters() { return loss::kOps; }

}  // namespace weft::onnx_io

// The three-input losses (frontend/losses.h): margin_ranking, cosine_embedding and
// triplet_margin, each a short composition of primitives matching torch.nn.functional,
// plus a module taking the stream and two values from uses({...}).
#include <functional>
#include <string>
#include <vector>

#include "frontend/losses.h"
#include "frontend/modules/loss_detail.h"

namespace weft {
namespace loss {

namespace {

using detail::check_not_batchmean;
using detail::reduce;

/// The three-input losses take values of one float type; `names` are their roles.
void check_all_same(Emitter& e, const char* name, const std::vector<const char*>& names,
                    const std::vector<ValueId>& values) {
  const Type& first = e.type(values[0]);
  if (!is_floating(first.dtype)) {
    e.fail(std::string(name) + ": the " + names[0] + " must be a float tensor, got " +
           first.to_string());
  }
  for (size_t i = 1; i < values.size(); ++i) {
    const Type& t = e.type(values[i]);
    if (t != first) {
      e.fail(std::string(name) + ": the " + names[i] + " " + t.to_string() + " must have the " +
             names[0] + "'s type " + first.to_string() + " (weft does not broadcast losses)");
    }
  }
}

/// ||x1 - x2 + eps||_p over the last axis, as PyTorch's pairwise_distance.
ValueId pairwise_distance(Emitter& e, ValueId x1, ValueId x2, double p, double eps) {
  DType dtype = e.type(x1).dtype;
  int64_t last = e.shape(x1).rank() - 1;
  ValueId d = e.add(e.sub(x1, x2), e.constant(eps, dtype));
  if (p == 2) return e.op(Op::Sqrt, {e.sum(e.mul(d, d), {last})});
  ValueId powered = e.op(Op::Pow, {e.op(Op::Abs, {d}), e.constant(p, dtype)});
  return e.op(Op::Pow, {e.sum(powered, {last}), e.constant(1 / p, dtype)});
}

}  // namespace

ValueId margin_ranking(Emitter& e, ValueId x1, ValueId x2, ValueId y, Reduction reduction,
                       double margin) {
  check_not_batchmean(e, "margin_ranking", reduction);
  check_all_same(e, "margin_ranking", {"x1", "x2", "target"}, {x1, x2, y});
  DType dtype = e.type(x1).dtype;
  // max(0, -y·(x1 - x2) + margin).
  ValueId raw = e.sub(e.constant(margin, dtype), e.mul(y, e.sub(x1, x2)));
  return reduce(e, e.op(Op::Maximum, {raw, e.constant(0, dtype)}), reduction);
}

ValueId cosine_embedding(Emitter& e, ValueId x1, ValueId x2, ValueId y, Reduction reduction,
                         double margin) {
  check_not_batchmean(e, "cosine_embedding", reduction);
  check_all_same(e, "cosine_embedding", {"x1", "x2"}, {x1, x2});
  const Type& tx = e.type(x1);
  if (tx.shape.rank() != 2) {
    e.fail("cosine_embedding: x1 and x2 must be [batch, features], got " + tx.to_string());
  }
  Type want{tx.dtype, Shape({tx.shape[0]})};
  if (e.type(y) != want) {
    e.fail("cosine_embedding: the target must be " + want.to_string() +
           " (1 or -1 per row of x1 " + tx.to_string() + "), got " + e.type(y).to_string());
  }
  DType dtype = tx.dtype;
  // PyTorch 1.13: cos = Σx1·x2 / sqrt((Σx1² + 1e-12)·(Σx2² + 1e-12)).
  ValueId tiny = e.constant(1e-12, dtype);
  ValueId dot = e.sum(e.mul(x1, x2), {1});
  ValueId sq1 = e.add(e.sum(e.mul(x1, x1), {1}), tiny);
  ValueId sq2 = e.add(e.sum(e.mul(x2, x2), {1}), tiny);
  ValueId cos = e.div(dot, e.op(Op::Sqrt, {e.mul(sq1, sq2)}));
  ValueId zero = e.constant(0, dtype);
  ValueId pos = e.sub(e.constant(1, dtype), cos);
  ValueId neg = e.op(Op::Maximum, {e.sub(cos, e.constant(margin, dtype)), zero});
  ValueId is_pos = e.op(Op::Eq, {y, e.constant(1, dtype)});
  ValueId is_neg = e.op(Op::Eq, {y, e.constant(-1, dtype)});
  ValueId loss = e.add(e.op(Op::Select, {is_pos, pos, zero}), e.op(Op::Select, {is_neg, neg, zero}));
  return reduce(e, loss, reduction);
}

ValueId triplet_margin(Emitter& e, ValueId anchor, ValueId positive, ValueId negative,
                       TripletOptions options) {
  check_not_batchmean(e, "triplet_margin", options.reduction);
  check_all_same(e, "triplet_margin", {"anchor", "positive", "negative"},
                 {anchor, positive, negative});
  if (e.shape(anchor).rank() < 1) {
    e.fail("triplet_margin: the anchor must have at least one axis, got " +
           e.type(anchor).to_string());
  }
  if (!(options.p > 0)) e.fail("triplet_margin: p must be > 0, got " + format_float(options.p));
  DType dtype = e.type(anchor).dtype;
  ValueId d_pos = pairwise_distance(e, anchor, positive, options.p, options.eps);
  ValueId d_neg = pairwise_distance(e, anchor, negative, options.p, options.eps);
  if (options.swap) {
    d_neg = e.op(Op::Minimum,
                 {d_neg, pairwise_distance(e, positive, negative, options.p, options.eps)});
  }
  ValueId raw = e.sub(e.add(d_pos, e.constant(options.margin, dtype)), d_neg);
  return reduce(e, e.op(Op::Maximum, {raw, e.constant(0, dtype)}), options.reduction);
}

}  // namespace loss

namespace {

using loss::detail::named;

/// A loss of three inputs: the stream and two tagged values from uses({...}).
ModulePtr ternary(std::string name, std::string roles,
                  std::function<ValueId(Emitter&, ValueId, ValueId, ValueId)> body) {
  return std::make_shared<loss::detail::MultiInputLoss>(
      std::move(name), 3, std::move(roles),
      [body = std::move(body)](Emitter& e, const std::vector<ValueId>& in) {
        return body(e, in[0], in[1], in[2]);
      });
}

}  // namespace

ModulePtr MarginRankingLoss(Reduction r, double margin) {
  return ternary(
      named("MarginRankingLoss", r, ", margin=" + format_float(margin)),
      "x1 (the stream), then x2 and the target from uses({...})",
      [r, margin](Emitter& e, ValueId x1, ValueId x2, ValueId y) {
        return loss::margin_ranking(e, x1, x2, y, r, margin);
      });
}

ModulePtr CosineEmbeddingLoss(Reduction r, double margin) {
  return ternary(
      named("CosineEmbeddingLoss", r, ", margin=" + format_float(margin)),
      "x1 (the stream), then x2 and the target from uses({...})",
      [r, margin](Emitter& e, ValueId x1, ValueId x2, ValueId y) {
        return loss::cosine_embedding(e, x1, x2, y, r, margin);
      });
}

ModulePtr TripletMarginLoss(loss::TripletOptions options) {
  std::string extra = ", margin=" + format_float(options.margin) +
                      ", p=" + format_float(options.p) + (options.swap ? ", swap" : "");
  return ternary(
      named("TripletMarginLoss", options.reduction, extra),
      "the anchor (the stream), then the positive and the negative from uses({...})",
      [options](Emitter& e, ValueId a, ValueId p, ValueId n) {
        return loss::triplet_margin(e, a, p, n, options);
      });
}

}  // namespace weft

// Losses (frontend/losses.h): each one a short composition of primitives matching
// torch.nn.functional, plus a module wrapper taking (prediction, target).
#include <cmath>
#include <functional>
#include <vector>

#include "frontend/losses.h"
#include "frontend/modules/loss_detail.h"

namespace weft {

const char* to_string(Reduction reduction) {
  switch (reduction) {
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::None:
      return "none";
    case Reduction::BatchMean:
      return "batchmean";
  }
  return "?";
}

namespace loss {
namespace detail {

void check_not_batchmean(Emitter& e, const char* name, Reduction r) {
  if (r == Reduction::BatchMean) {
    e.fail(std::string(name) +
           ": reduction 'batchmean' is only defined for kl_div; use "
           "mean, sum or none");
  }
}

/// Mean or sum over every element, or nothing.
ValueId reduce(Emitter& e, ValueId x, Reduction r) {
  switch (r) {
    case Reduction::None:
      return x;
    case Reduction::Sum:
      return e.op(Op::Sum, {x});
    case Reduction::Mean:
      return e.op(Op::Mean, {x});
    case Reduction::BatchMean: {
      const Shape& s = e.shape(x);
      double batch = s.rank() == 0 ? 1.0 : static_cast<double>(s[0]);
      return e.div(e.op(Op::Sum, {x}), e.constant(batch, e.type(x).dtype));
    }
  }
  return x;
}

std::string named(const char* name, Reduction r, const std::string& extra) {
  return std::string(name) + "(" + to_string(r) + extra + ")";
}

ValueId MultiInputLoss::forward(Emitter& e, const std::vector<ValueId>& inputs) {
  static const char* const kCounts[] = {"zero", "one", "two", "three", "four", "five"};
  if (inputs.size() != arity_) {
    const std::string count = arity_ < 6 ? kCounts[arity_] : std::to_string(arity_);
    e.fail(name_ + " takes " + count + " inputs, " + roles_ + ", but " +
           std::to_string(inputs.size()) + " were given");
  }
  return body_(e, inputs);
}

}  // namespace detail

namespace {

using detail::check_not_batchmean;
using detail::reduce;

/// The elementwise losses take two values of one float type.
void check_same(Emitter& e, const char* name, const char* what, ValueId a, ValueId b) {
  const Type& ta = e.type(a);
  const Type& tb = e.type(b);
  if (!is_floating(ta.dtype)) {
    e.fail(std::string(name) + ": the " + what + " must be a float tensor, got " + ta.to_string());
  }
  if (ta != tb) {
    e.fail(std::string(name) + ": the " + what + " " + ta.to_string() + " and the target " +
           tb.to_string() + " must have the same type (weft does not broadcast losses)");
  }
}

/// Checks scores [N, C] (float) and labels [N] (i64); returns C.
int64_t check_classes(Emitter& e, const char* name, const char* what, ValueId scores,
                      ValueId labels) {
  const Type& ts = e.type(scores);
  const Type& tl = e.type(labels);
  if (ts.shape.rank() != 2 || !is_floating(ts.dtype)) {
    e.fail(std::string(name) + ": " + what + " must be a float [batch, classes] tensor, got " +
           ts.to_string());
  }
  if (tl.dtype != DType::i64 || tl.shape != Shape({ts.shape[0]})) {
    e.fail(std::string(name) + ": labels must be i64 class indices " +
           Type{DType::i64, Shape({ts.shape[0]})}.to_string() + " (one per row of the " + what +
           " " + ts.to_string() + "), got " + tl.to_string());
  }
  return ts.shape[1];
}

/// -sum(one_hot(labels)·log_probs, classes): [N].
ValueId picked_nll(Emitter& e, ValueId log_probs, ValueId labels, int64_t classes) {
  DType dtype = e.type(log_probs).dtype;
  ValueId hot = e.op(Op::OneHot, {labels}, {{"depth", classes}, {"dtype", dtype}});
  return e.op(Op::Neg, {e.sum(e.mul(hot, log_probs), {1})});
}

/// The class weights as a [classes] constant, after checking there is one per class.
ValueId class_weights(Emitter& e, const char* name, const std::vector<double>& weight,
                      int64_t classes, DType dtype) {
  if (static_cast<int64_t>(weight.size()) != classes) {
    e.fail(std::string(name) + ": weight must hold one value per class (" +
           std::to_string(classes) + "), got " + std::to_string(weight.size()) +
           " (PyTorch: weight tensor should be defined either for all " +
           std::to_string(classes) + " classes or no classes but got weight tensor of shape: [" +
           std::to_string(weight.size()) + "])");
  }
  // weft has no non-uniform constant (fold_constants folds only uniform fills), and a
  // state() would become a checkpointed graph input: one full() per run of equal
  // weights, concatenated (a single full() when all are equal).
  std::vector<ValueId> parts;
  for (size_t begin = 0, end; begin < weight.size(); begin = end) {
    for (end = begin + 1; end < weight.size() && weight[end] == weight[begin];) ++end;
    parts.push_back(e.full(Shape({static_cast<int64_t>(end - begin)}), weight[begin], dtype));
  }
  return parts.size() == 1 ? parts[0] : e.op(Op::Concat, parts, {{"axis", int64_t{0}}});
}

/// PyTorch's weighted nll: per sample -weight[label]·log_probs[label] (plus, with
/// label smoothing ε, the smoothing term -(ε/C)·Σ_c weight[c]·log_probs[c] scaled by 1
/// and the nll term by 1 - ε); the mean divides the sum by Σ_n weight[label[n]], not N.
ValueId weighted_nll(Emitter& e, const char* name, ValueId log_probs, ValueId labels,
                     int64_t classes, const std::vector<double>& weight, Reduction reduction,
                     double label_smoothing = 0) {
  DType dtype = e.type(log_probs).dtype;
  ValueId w = class_weights(e, name, weight, classes, dtype);
  ValueId hot = e.op(Op::OneHot, {labels}, {{"depth", classes}, {"dtype", dtype}});
  ValueId picked_weight = e.sum(e.mul(hot, w), {1});  // [N]
  ValueId weighted = e.mul(log_probs, w);             // [N, C]
  ValueId per_sample = e.op(Op::Neg, {e.sum(e.mul(hot, weighted), {1})});
  if (label_smoothing != 0) {
    ValueId smooth = e.op(Op::Neg, {e.sum(weighted, {1})});
    per_sample = e.add(e.mul(per_sample, e.constant(1 - label_smoothing, dtype)),
                       e.mul(smooth, e.constant(label_smoothing / classes, dtype)));
  }
  if (reduction != Reduction::Mean) return reduce(e, per_sample, reduction);
  return e.div(e.op(Op::Sum, {per_sample}), e.op(Op::Sum, {picked_weight}));
}

}  // namespace

ValueId mse(Emitter& e, ValueId prediction, ValueId target, Reduction reduction) {
  check_not_batchmean(e, "mse", reduction);
  check_same(e, "mse", "prediction", prediction, target);
  return e.op(Op::Mse, {prediction, target}, {{"reduction", std::string(to_string(reduction))}});
}

ValueId l1(Emitter& e, ValueId prediction, ValueId target, Reduction reduction) {
  check_not_batchmean(e, "l1", reduction);
  check_same(e, "l1", "prediction", prediction, target);
  return reduce(e, e.op(Op::Abs, {e.sub(prediction, target)}), reduction);
}

ValueId smooth_l1(Emitter& e, ValueId prediction, ValueId target, Reduction reduction,
                  double beta) {
  check_not_batchmean(e, "smooth_l1", reduction);
  check_same(e, "smooth_l1", "prediction", prediction, target);
  if (!(beta >= 0)) e.fail("smooth_l1: beta must be >= 0, got " + format_float(beta));
  DType dtype = e.type(prediction).dtype;
  ValueId d = e.op(Op::Abs, {e.sub(prediction, target)});
  if (beta == 0) return reduce(e, d, reduction);
  ValueId quadratic = e.mul(e.mul(d, d), e.constant(0.5 / beta, dtype));
  ValueId linear = e.sub(d, e.constant(0.5 * beta, dtype));
  ValueId small = e.op(Op::Lt, {d, e.constant(beta, dtype)});
  return reduce(e, e.op(Op::Select, {small, quadratic, linear}), reduction);
}

ValueId huber(Emitter& e, ValueId prediction, ValueId target, Reduction reduction, double delta) {
  check_not_batchmean(e, "huber", reduction);
  check_same(e, "huber", "prediction", prediction, target);
  if (!(delta > 0)) {
    e.fail("huber: delta must be > 0, got " + format_float(delta) +
           " (PyTorch: huber_loss does not support non-positive values for delta.)");
  }
  // delta·smooth_l1 with beta = delta: 0.5·d² where |d| < delta, else delta·(|d| - 0.5·delta).
  // Scaling after the reduction is exact for mean, sum and none alike.
  ValueId smooth = smooth_l1(e, prediction, target, reduction, /*beta=*/delta);
  return e.mul(smooth, e.constant(delta, e.type(prediction).dtype));
}

ValueId cross_entropy(Emitter& e, ValueId logits, ValueId labels, CrossEntropyOptions options) {
  check_not_batchmean(e, "cross_entropy", options.reduction);
  int64_t classes = check_classes(e, "cross_entropy", "logits", logits, labels);
  const double eps = options.label_smoothing;
  if (!(eps >= 0 && eps <= 1)) {
    e.fail("cross_entropy: label_smoothing must be in [0, 1], got " + format_float(eps));
  }
  if (!options.weight.empty()) {
    ValueId log_probs = e.op(Op::LogSoftmax, {logits}, {{"axis", int64_t{1}}});
    return weighted_nll(e, "cross_entropy", log_probs, labels, classes, options.weight,
                        options.reduction, eps);
  }
  if (eps == 0) {
    return e.op(Op::CrossEntropy, {logits, labels},
                {{"reduction", std::string(to_string(options.reduction))}});
  }
  // PyTorch: (1 - ε)·nll + ε·(-mean_c log_softmax), per sample, then reduced.
  DType dtype = e.type(logits).dtype;
  ValueId log_probs = e.op(Op::LogSoftmax, {logits}, {{"axis", int64_t{1}}});
  ValueId nll_term = picked_nll(e, log_probs, labels, classes);
  ValueId smooth_term = e.op(Op::Neg, {e.mean(log_probs, {1})});
  ValueId per_sample = e.add(e.mul(nll_term, e.constant(1 - eps, dtype)),
                             e.mul(smooth_term, e.constant(eps, dtype)));
  return reduce(e, per_sample, options.reduction);
}

ValueId nll(Emitter& e, ValueId log_probs, ValueId labels, Reduction reduction,
            const std::vector<double>& weight) {
  check_not_batchmean(e, "nll", reduction);
  int64_t classes = check_classes(e, "nll", "log-probabilities", log_probs, labels);
  if (!weight.empty()) {
    return weighted_nll(e, "nll", log_probs, labels, classes, weight, reduction);
  }
  return reduce(e, picked_nll(e, log_probs, labels, classes), reduction);
}

ValueId poisson_nll(Emitter& e, ValueId input, ValueId target, PoissonNllOptions options) {
  check_not_batchmean(e, "poisson_nll", options.reduction);
  check_same(e, "poisson_nll", "input", input, target);
  DType dtype = e.type(input).dtype;
  ValueId loss = options.log_input
                     ? e.sub(e.op(Op::Exp, {input}), e.mul(target, input))
                     : e.sub(input, e.mul(target, e.op(Op::Log, {e.add(input, e.constant(options.eps, dtype))})));
  if (options.full) {
    // Stirling's approximation of log(target!), only where target > 1 (log of 1
    // elsewhere keeps the unused branch finite).
    ValueId above_one = e.op(Op::Gt, {target, e.constant(1, dtype)});
    ValueId safe = e.op(Op::Select, {above_one, target, e.constant(1, dtype)});
    ValueId stirling =
        e.add(e.sub(e.mul(safe, e.op(Op::Log, {safe})), safe),
              e.mul(e.op(Op::Log, {e.mul(safe, e.constant(2 * M_PI, dtype))}), e.constant(0.5, dtype)));
    loss = e.add(loss, e.op(Op::Select, {above_one, stirling, e.constant(0, dtype)}));
  }
  return reduce(e, loss, options.reduction);
}

ValueId bce(Emitter& e, ValueId probabilities, ValueId target, Reduction reduction) {
  check_not_batchmean(e, "bce", reduction);
  check_same(e, "bce", "probabilities", probabilities, target);
  DType dtype = e.type(probabilities).dtype;
  ValueId floor = e.constant(-100, dtype);
  ValueId log_p = e.op(Op::Maximum, {e.op(Op::Log, {probabilities}), floor});
  ValueId log_q = e.op(Op::Maximum, {e.op(Op::Log1p, {e.op(Op::Neg, {probabilities})}), floor});
  // -(y·log p + (1 - y)·log(1 - p)) = (y - 1)·log(1 - p) - y·log p.
  ValueId one = e.constant(1, dtype);
  ValueId loss = e.sub(e.mul(e.sub(target, one), log_q), e.mul(target, log_p));
  return reduce(e, loss, reduction);
}

ValueId bce_with_logits(Emitter& e, ValueId logits, ValueId target, Reduction reduction) {
  check_not_batchmean(e, "bce_with_logits", reduction);
  check_same(e, "bce_with_logits", "logits", logits, target);
  DType dtype = e.type(logits).dtype;
  ValueId relu = e.op(Op::Maximum, {logits, e.constant(0, dtype)});
  ValueId softplus_tail =
      e.op(Op::Log1p, {e.op(Op::Exp, {e.op(Op::Neg, {e.op(Op::Abs, {logits})})})});
  ValueId loss = e.add(e.sub(relu, e.mul(logits, target)), softplus_tail);
  return reduce(e, loss, reduction);
}

ValueId kl_div(Emitter& e, ValueId log_probs, ValueId target, Reduction reduction,
               bool log_target) {
  check_same(e, "kl_div", "input (log-probabilities)", log_probs, target);
  DType dtype = e.type(log_probs).dtype;
  ValueId pointwise;
  if (log_target) {
    pointwise = e.mul(e.op(Op::Exp, {target}), e.sub(target, log_probs));
  } else {
    // xlogy(t, t) - t·input; log of 1 where t <= 0 keeps 0·log 0 = 0 and the gradient
    // finite.
    ValueId positive = e.op(Op::Gt, {target, e.constant(0, dtype)});
    ValueId safe = e.op(Op::Select, {positive, target, e.constant(1, dtype)});
    pointwise = e.mul(target, e.sub(e.op(Op::Log, {safe}), log_probs));
  }
  return reduce(e, pointwise, reduction);
}


ValueId sigmoid_focal(Emitter& e, ValueId logits, ValueId target, FocalOptions options) {
  check_not_batchmean(e, "sigmoid_focal", options.reduction);
  check_same(e, "sigmoid_focal", "logits", logits, target);
  if (!(options.gamma >= 0)) {
    e.fail("sigmoid_focal: gamma must be >= 0, got " + format_float(options.gamma));
  }
  if (options.alpha > 1) {
    e.fail("sigmoid_focal: alpha must be in [0, 1] (or negative for no weighting), got " +
           format_float(options.alpha));
  }
  DType dtype = e.type(logits).dtype;
  ValueId ce = bce_with_logits(e, logits, target, Reduction::None);
  // 1 - p_t = 1 - (p·y + (1 - p)·(1 - y)) = p + y - 2·p·y.
  ValueId p = e.op(Op::Sigmoid, {logits});
  ValueId miss = e.sub(e.add(p, target), e.mul(e.mul(p, target), e.constant(2, dtype)));
  ValueId loss = ce;
  if (options.gamma != 0) {
    loss = e.mul(loss, e.op(Op::Pow, {miss, e.constant(options.gamma, dtype)}));
  }
  if (options.alpha >= 0) {
    // alpha·y + (1 - alpha)·(1 - y).
    ValueId alpha_t = e.add(e.mul(target, e.constant(2 * options.alpha - 1, dtype)),
                            e.constant(1 - options.alpha, dtype));
    loss = e.mul(alpha_t, loss);
  }
  return reduce(e, loss, options.reduction);
}

ValueId hinge_embedding(Emitter& e, ValueId input, ValueId target, Reduction reduction,
                        double margin) {
  check_not_batchmean(e, "hinge_embedding", reduction);
  check_same(e, "hinge_embedding", "input", input, target);
  DType dtype = e.type(input).dtype;
  // PyTorch: where(y != 1, max(0, margin - x), 0) + where(y != -1, x, 0).
  ValueId zero = e.constant(0, dtype);
  ValueId clamped = e.op(Op::Maximum, {e.sub(e.constant(margin, dtype), input), zero});
  ValueId not_similar = e.op(Op::Ne, {target, e.constant(1, dtype)});
  ValueId not_dissimilar = e.op(Op::Ne, {target, e.constant(-1, dtype)});
  ValueId loss = e.add(e.op(Op::Select, {not_similar, clamped, zero}),
                       e.op(Op::Select, {not_dissimilar, input, zero}));
  return reduce(e, loss, reduction);
}

}  // namespace loss

namespace {

/// A loss as a module: the stream is the prediction, uses(...) supplies the target.
class LossModule : public Module {
 public:
  using Body = std::function<ValueId(Emitter&, ValueId, ValueId)>;
  LossModule(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}

  std::string describe() const override { return name_; }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (inputs.size() != 2) {
      e.fail(name_ +
             " takes two inputs, the prediction (the stream) and the target from "
             "uses({...}), but " +
             std::to_string(inputs.size()) + " were given");
    }
    return body_(e, inputs[0], inputs[1]);
  }

 private:
  std::string name_;
  Body body_;
};

using loss::detail::named;

}  // namespace

ModulePtr MSELoss(Reduction r) {
  return std::make_shared<LossModule>(
      named("MSELoss", r), [r](Emitter& e, ValueId p, ValueId t) { return loss::mse(e, p, t, r); });
}

ModulePtr L1Loss(Reduction r) {
  return std::make_shared<LossModule>(
      named("L1Loss", r), [r](Emitter& e, ValueId p, ValueId t) { return loss::l1(e, p, t, r); });
}

ModulePtr SmoothL1Loss(Reduction r, double beta) {
  return std::make_shared<LossModule>(
      named("SmoothL1Loss", r, ", beta=" + format_float(beta)),
      [r, beta](Emitter& e, ValueId p, ValueId t) { return loss::smooth_l1(e, p, t, r, beta); });
}

ModulePtr HuberLoss(Reduction r, double delta) {
  return std::make_shared<LossModule>(
      named("HuberLoss", r, ", delta=" + format_float(delta)),
      [r, delta](Emitter& e, ValueId p, ValueId t) { return loss::huber(e, p, t, r, delta); });
}

/// ", weight=[w0, w1, ...]", or nothing without weights.
std::string weight_suffix(const std::vector<double>& weight) {
  if (weight.empty()) return "";
  std::string s = ", weight=[";
  for (size_t i = 0; i < weight.size(); ++i) s += (i ? ", " : "") + format_float(weight[i]);
  return s + "]";
}

ModulePtr CrossEntropyLoss(loss::CrossEntropyOptions options) {
  std::string extra = options.label_smoothing != 0
                          ? ", label_smoothing=" + format_float(options.label_smoothing)
                          : "";
  extra += weight_suffix(options.weight);
  return std::make_shared<LossModule>(named("CrossEntropyLoss", options.reduction, extra),
                                      [options](Emitter& e, ValueId p, ValueId t) {
                                        return loss::cross_entropy(e, p, t, options);
                                      });
}

ModulePtr NLLLoss(Reduction r, std::vector<double> weight) {
  return std::make_shared<LossModule>(
      named("NLLLoss", r, weight_suffix(weight)),
      [r, weight](Emitter& e, ValueId p, ValueId t) { return loss::nll(e, p, t, r, weight); });
}

ModulePtr PoissonNLLLoss(loss::PoissonNllOptions options) {
  std::string extra = std::string(options.log_input ? "" : ", log_input=false") +
                      (options.full ? ", full" : "") +
                      (options.eps != 1e-8 ? ", eps=" + format_float(options.eps) : "");
  return std::make_shared<LossModule>(named("PoissonNLLLoss", options.reduction, extra),
                                      [options](Emitter& e, ValueId p, ValueId t) {
                                        return loss::poisson_nll(e, p, t, options);
                                      });
}

ModulePtr SigmoidFocalLoss(loss::FocalOptions options) {
  std::string extra =
      ", alpha=" + format_float(options.alpha) + ", gamma=" + format_float(options.gamma);
  return std::make_shared<LossModule>(named("SigmoidFocalLoss", options.reduction, extra),
                                      [options](Emitter& e, ValueId p, ValueId t) {
                                        return loss::sigmoid_focal(e, p, t, options);
                                      });
}

ModulePtr HingeEmbeddingLoss(Reduction r, double margin) {
  return std::make_shared<LossModule>(
      named("HingeEmbeddingLoss", r, ", margin=" + format_float(margin)),
      [r, margin](Emitter& e, ValueId p, ValueId t) {
        return loss::hinge_embedding(e, p, t, r, margin);
      });
}

ModulePtr BCELoss(Reduction r) {
  return std::make_shared<LossModule>(
      named("BCELoss", r), [r](Emitter& e, ValueId p, ValueId t) { return loss::bce(e, p, t, r); });
}

ModulePtr BCEWithLogitsLoss(Reduction r) {
  return std::make_shared<LossModule>(
      named("BCEWithLogitsLoss", r),
      [r](Emitter& e, ValueId p, ValueId t) { return loss::bce_with_logits(e, p, t, r); });
}

ModulePtr KLDivLoss(Reduction r, bool log_target) {
  return std::make_shared<LossModule>(named("KLDivLoss", r, log_target ? ", log_target" : ""),
                                      [r, log_target](Emitter& e, ValueId p, ValueId t) {
                                        return loss::kl_div(e, p, t, r, log_target);
                                      });
}

}  // namespace weft

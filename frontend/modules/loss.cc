// Losses (frontend/losses.h): each one a short composition of primitives matching
// torch.nn.functional, plus a module wrapper taking (prediction, target).
#include <functional>

#include "frontend/losses.h"

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
namespace {

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

ValueId cross_entropy(Emitter& e, ValueId logits, ValueId labels, CrossEntropyOptions options) {
  check_not_batchmean(e, "cross_entropy", options.reduction);
  int64_t classes = check_classes(e, "cross_entropy", "logits", logits, labels);
  const double eps = options.label_smoothing;
  if (!(eps >= 0 && eps <= 1)) {
    e.fail("cross_entropy: label_smoothing must be in [0, 1], got " + format_float(eps));
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

ValueId nll(Emitter& e, ValueId log_probs, ValueId labels, Reduction reduction) {
  check_not_batchmean(e, "nll", reduction);
  int64_t classes = check_classes(e, "nll", "log-probabilities", log_probs, labels);
  return reduce(e, picked_nll(e, log_probs, labels, classes), reduction);
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

std::string named(const char* name, Reduction r, const std::string& extra = "") {
  return std::string(name) + "(" + to_string(r) + extra + ")";
}

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

ModulePtr CrossEntropyLoss(loss::CrossEntropyOptions options) {
  std::string extra = options.label_smoothing != 0
                          ? ", label_smoothing=" + format_float(options.label_smoothing)
                          : "";
  return std::make_shared<LossModule>(named("CrossEntropyLoss", options.reduction, extra),
                                      [options](Emitter& e, ValueId p, ValueId t) {
                                        return loss::cross_entropy(e, p, t, options);
                                      });
}

ModulePtr NLLLoss(Reduction r) {
  return std::make_shared<LossModule>(
      named("NLLLoss", r), [r](Emitter& e, ValueId p, ValueId t) { return loss::nll(e, p, t, r); });
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

// LossSpec (frontend/training.h): its factories, and the loss it emits into a Trainer's
// step graph.
#include "frontend/training.h"

namespace weft {
namespace {

// A spec of `kind` with every other field at its default.
LossSpec spec_of(LossSpec::Kind kind) {
  LossSpec s;
  s.kind = kind;
  return s;
}

}  // namespace

LossSpec LossSpec::cross_entropy(double label_smoothing, std::vector<double> weight) {
  LossSpec s;
  s.kind = Kind::CrossEntropy;
  s.label_smoothing = label_smoothing;
  s.weight = std::move(weight);
  return s;
}
LossSpec LossSpec::nll(std::vector<double> weight) {
  LossSpec s = spec_of(Kind::Nll);
  s.weight = std::move(weight);
  return s;
}
LossSpec LossSpec::mse() { return spec_of(Kind::Mse); }
LossSpec LossSpec::l1() { return spec_of(Kind::L1); }
LossSpec LossSpec::smooth_l1(double beta) {
  LossSpec s = spec_of(Kind::SmoothL1);
  s.beta = beta;
  return s;
}
LossSpec LossSpec::huber(double delta) {
  LossSpec s = spec_of(Kind::Huber);
  s.delta = delta;
  return s;
}
LossSpec LossSpec::poisson_nll(bool log_input, bool full, double eps) {
  LossSpec s = spec_of(Kind::PoissonNll);
  s.poisson = {.log_input = log_input, .full = full, .eps = eps};
  return s;
}
LossSpec LossSpec::bce() { return spec_of(Kind::Bce); }
LossSpec LossSpec::bce_with_logits() { return spec_of(Kind::BceWithLogits); }
LossSpec LossSpec::kl_div() { return spec_of(Kind::KlDiv); }
LossSpec LossSpec::sigmoid_focal(double alpha, double gamma) {
  LossSpec s = spec_of(Kind::SigmoidFocal);
  s.focal = {.alpha = alpha, .gamma = gamma};
  return s;
}
LossSpec LossSpec::hinge_embedding(double margin) {
  LossSpec s = spec_of(Kind::HingeEmbedding);
  s.margin = margin;
  return s;
}

LossSpec LossSpec::network_output() { return spec_of(Kind::NetworkOutput); }

ValueId LossSpec::emit(Emitter& e, ValueId out, ValueId target) const {
  const LossSpec& spec = *this;
  switch (spec.kind) {
    case LossSpec::Kind::NetworkOutput: return out;  // the network computed its own loss
    case LossSpec::Kind::CrossEntropy:
      return loss::cross_entropy(e, out, target,
                                 {spec.reduction, spec.label_smoothing, spec.weight});
    case LossSpec::Kind::Nll: return loss::nll(e, out, target, spec.reduction, spec.weight);
    case LossSpec::Kind::Mse: return loss::mse(e, out, target, spec.reduction);
    case LossSpec::Kind::L1: return loss::l1(e, out, target, spec.reduction);
    case LossSpec::Kind::SmoothL1: return loss::smooth_l1(e, out, target, spec.reduction, spec.beta);
    case LossSpec::Kind::Huber: return loss::huber(e, out, target, spec.reduction, spec.delta);
    case LossSpec::Kind::PoissonNll: {
      loss::PoissonNllOptions options = spec.poisson;
      options.reduction = spec.reduction;
      return loss::poisson_nll(e, out, target, options);
    }
    case LossSpec::Kind::Bce: return loss::bce(e, out, target, spec.reduction);
    case LossSpec::Kind::BceWithLogits: return loss::bce_with_logits(e, out, target, spec.reduction);
    case LossSpec::Kind::KlDiv: return loss::kl_div(e, out, target, spec.reduction);
    case LossSpec::Kind::SigmoidFocal: {
      loss::FocalOptions options = spec.focal;
      options.reduction = spec.reduction;
      return loss::sigmoid_focal(e, out, target, options);
    }
    case LossSpec::Kind::HingeEmbedding:
      return loss::hinge_embedding(e, out, target, spec.reduction, spec.margin);
  }
  return kNoValue;
}

}  // namespace weft

// OptimizerSpec: constructors, PyTorch's checks, describe() and the slot names.
#include "autodiff/optimizer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "autodiff/grad.h"
#include "ir/text_util.h"

namespace weft {

// ---- OptimizerSpec ----

OptimizerSpec OptimizerSpec::sgd(double lr, double momentum, double dampening,
                                 double weight_decay, bool nesterov) {
  OptimizerSpec s;
  s.kind = Kind::SGD;
  s.lr = lr;
  s.momentum = momentum;
  s.dampening = dampening;
  s.weight_decay = weight_decay;
  s.nesterov = nesterov;
  return s;
}

OptimizerSpec OptimizerSpec::adam(double lr, std::array<double, 2> betas, double eps,
                                  double weight_decay, bool amsgrad) {
  OptimizerSpec s;
  s.kind = Kind::Adam;
  s.lr = lr;
  s.betas = betas;
  s.eps = eps;
  s.weight_decay = weight_decay;
  s.amsgrad = amsgrad;
  return s;
}

OptimizerSpec OptimizerSpec::adamw(double lr, std::array<double, 2> betas, double eps,
                                   double weight_decay, bool amsgrad) {
  OptimizerSpec s = adam(lr, betas, eps, weight_decay, amsgrad);
  s.kind = Kind::AdamW;
  return s;
}

OptimizerSpec OptimizerSpec::rmsprop(double lr, double alpha, double eps, double weight_decay,
                                     double momentum, bool centered) {
  OptimizerSpec s;
  s.kind = Kind::RMSprop;
  s.lr = lr;
  s.alpha = alpha;
  s.eps = eps;
  s.weight_decay = weight_decay;
  s.momentum = momentum;
  s.centered = centered;
  return s;
}

OptimizerSpec OptimizerSpec::adagrad(double lr, double lr_decay, double weight_decay,
                                     double initial_accumulator_value, double eps) {
  OptimizerSpec s;
  s.kind = Kind::Adagrad;
  s.lr = lr;
  s.lr_decay = lr_decay;
  s.weight_decay = weight_decay;
  s.initial_accumulator_value = initial_accumulator_value;
  s.eps = eps;
  return s;
}

OptimizerSpec OptimizerSpec::radam(double lr, std::array<double, 2> betas, double eps,
                                   double weight_decay) {
  OptimizerSpec s = adam(lr, betas, eps, weight_decay);
  s.kind = Kind::RAdam;
  return s;
}

OptimizerSpec OptimizerSpec::nadam(double lr, std::array<double, 2> betas, double eps,
                                   double weight_decay, double momentum_decay) {
  OptimizerSpec s = adam(lr, betas, eps, weight_decay);
  s.kind = Kind::NAdam;
  s.momentum_decay = momentum_decay;
  return s;
}

const char* optimizer_kind_name(OptimizerSpec::Kind kind) {
  switch (kind) {
    case OptimizerSpec::Kind::SGD: return "SGD";
    case OptimizerSpec::Kind::Adam: return "Adam";
    case OptimizerSpec::Kind::AdamW: return "AdamW";
    case OptimizerSpec::Kind::RMSprop: return "RMSprop";
    case OptimizerSpec::Kind::Adagrad: return "Adagrad";
    case OptimizerSpec::Kind::RAdam: return "RAdam";
    case OptimizerSpec::Kind::NAdam: return "NAdam";
  }
  return "?";
}

Status OptimizerSpec::validate() const {
  // PyTorch 1.13's constructor checks, in its order and with its messages. `!(0 <= x)`
  // also rejects NaN, as PyTorch's `not 0.0 <= x` does.
  auto check = [](double x, bool ok, const char* what) -> Status {
    if (ok) return Status();
    return Error{std::string("Invalid ") + what + ": " + python_float_repr(x)};
  };
  auto nonneg = [&](double x, const char* what) { return check(x, 0.0 <= x, what); };
  WEFT_RETURN_IF_ERROR(nonneg(lr, "learning rate"));
  switch (kind) {
    case Kind::SGD:
      WEFT_RETURN_IF_ERROR(nonneg(momentum, "momentum value"));
      WEFT_RETURN_IF_ERROR(nonneg(weight_decay, "weight_decay value"));
      if (nesterov && (momentum <= 0 || dampening != 0)) {
        return Error{"Nesterov momentum requires a momentum and zero dampening"};
      }
      break;
    case Kind::Adam:
    case Kind::AdamW:
    case Kind::RAdam:
    case Kind::NAdam:
      WEFT_RETURN_IF_ERROR(nonneg(eps, "epsilon value"));
      WEFT_RETURN_IF_ERROR(check(betas[0], 0.0 <= betas[0] && betas[0] < 1.0,
                                 "beta parameter at index 0"));
      WEFT_RETURN_IF_ERROR(check(betas[1], 0.0 <= betas[1] && betas[1] < 1.0,
                                 "beta parameter at index 1"));
      WEFT_RETURN_IF_ERROR(nonneg(weight_decay, "weight_decay value"));
      if (kind == Kind::NAdam) {
        WEFT_RETURN_IF_ERROR(nonneg(momentum_decay, "momentum_decay value"));
      }
      break;
    case Kind::RMSprop:
      WEFT_RETURN_IF_ERROR(nonneg(eps, "epsilon value"));
      WEFT_RETURN_IF_ERROR(nonneg(momentum, "momentum value"));
      WEFT_RETURN_IF_ERROR(nonneg(weight_decay, "weight_decay value"));
      WEFT_RETURN_IF_ERROR(nonneg(alpha, "alpha value"));
      break;
    case Kind::Adagrad:
      WEFT_RETURN_IF_ERROR(nonneg(lr_decay, "lr_decay value"));
      WEFT_RETURN_IF_ERROR(nonneg(weight_decay, "weight_decay value"));
      WEFT_RETURN_IF_ERROR(nonneg(initial_accumulator_value, "initial_accumulator_value value"));
      WEFT_RETURN_IF_ERROR(nonneg(eps, "epsilon value"));
      break;
  }
  if (!(0.0 <= max_grad_norm) || std::isinf(max_grad_norm)) {
    return Error{"Invalid max_grad_norm value: " + python_float_repr(max_grad_norm) +
                 " (a finite norm > 0 clips the gradients; 0 turns clipping off)"};
  }
  if (scheduled_momentum && (kind == Kind::Adagrad || kind == Kind::NAdam)) {
    return Error{std::string("scheduled_momentum: ") + optimizer_kind_name(kind) +
                 (kind == Kind::NAdam ? " reads β1 through its own mu schedule" : " has no momentum") +
                 "; SGD and RMSprop take a scheduled momentum, Adam, AdamW and RAdam a scheduled β1"};
  }
  if (accumulate_steps < 1) {
    return Error{"Invalid accumulate_steps value: " + std::to_string(accumulate_steps) +
                 " (the update is taken every accumulate_steps steps; 1 takes it every step)"};
  }
  std::set<std::string> paths;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string& path = groups[i].path;
    if (path.empty()) {
      return Error{"parameter group " + std::to_string(i) + " has an empty path (a group is "
                   "the parameters under a label path such as \"encoder\"; the parameters "
                   "under no group already form the default group)"};
    }
    if (!paths.insert(path).second) {
      return Error{"parameter group '" + path + "' is given twice"};
    }
    Status s = group_spec(i).validate();
    if (!s.ok()) return Error{"parameter group '" + path + "': " + s.error().message};
  }
  return Status();
}

OptimizerSpec OptimizerSpec::group_spec(size_t i) const {
  OptimizerSpec s = *this;
  s.groups.clear();
  const GroupOptions& o = groups.at(i).options;
  if (o.lr) s.lr = *o.lr;
  if (o.weight_decay) s.weight_decay = *o.weight_decay;
  return s;
}

std::string OptimizerSpec::describe() const {
  auto f = [](double x) { return python_float_repr(x); };
  auto b = [](bool x) { return std::string(x ? "True" : "False"); };
  std::string s = std::string(optimizer_kind_name(kind)) + "(lr=" + f(lr);
  switch (kind) {
    case Kind::SGD:
      s += ", momentum=" + f(momentum) + ", dampening=" + f(dampening) +
           ", weight_decay=" + f(weight_decay) + ", nesterov=" + b(nesterov);
      break;
    case Kind::Adam:
    case Kind::AdamW:
    case Kind::RAdam:
    case Kind::NAdam:
      s += ", betas=(" + f(betas[0]) + ", " + f(betas[1]) + "), eps=" + f(eps) +
           ", weight_decay=" + f(weight_decay);
      if (kind == Kind::NAdam) s += ", momentum_decay=" + f(momentum_decay);
      if (kind == Kind::Adam || kind == Kind::AdamW) s += ", amsgrad=" + b(amsgrad);
      break;
    case Kind::RMSprop:
      s += ", alpha=" + f(alpha) + ", eps=" + f(eps) + ", weight_decay=" + f(weight_decay) +
           ", momentum=" + f(momentum) + ", centered=" + b(centered);
      break;
    case Kind::Adagrad:
      s += ", lr_decay=" + f(lr_decay) + ", weight_decay=" + f(weight_decay) +
           ", initial_accumulator_value=" + f(initial_accumulator_value) + ", eps=" + f(eps);
      break;
  }
  if (maximize) s += ", maximize=True";
  if (max_grad_norm > 0) s += ", max_grad_norm=" + f(max_grad_norm);
  if (accumulate_steps != 1) s += ", accumulate_steps=" + std::to_string(accumulate_steps);
  if (scheduled_momentum) s += ", scheduled_momentum=True";
  if (!groups.empty()) {
    s += ", groups=[";
    for (size_t i = 0; i < groups.size(); ++i) {
      const GroupOptions& o = groups[i].options;
      std::string opts;
      if (o.lr) opts += "lr=" + f(*o.lr);
      if (o.weight_decay) opts += (opts.empty() ? "" : ", ") + ("weight_decay=" + f(*o.weight_decay));
      s += (i ? ", " : "") + groups[i].path + "(" + opts + ")";
    }
    s += "]";
  }
  return s + ")";
}

double OptimizerSpec::first_momentum() const {
  return kind == Kind::SGD || kind == Kind::RMSprop ? momentum : betas[0];
}

std::vector<std::string> OptimizerSpec::slot_names() const {
  switch (kind) {
    case Kind::SGD:
      if (momentum != 0 || scheduled_momentum) return {"momentum_buffer"};
      return {};
    case Kind::Adam:
    case Kind::AdamW:
      if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
      return {"exp_avg", "exp_avg_sq"};
    case Kind::RMSprop: {
      std::vector<std::string> names = {"square_avg"};
      if (momentum > 0 || scheduled_momentum) names.push_back("momentum_buffer");
      if (centered) names.push_back("grad_avg");
      return names;
    }
    case Kind::Adagrad:
      return {"sum"};
    case Kind::RAdam:
      return {"exp_avg", "exp_avg_sq"};
    case Kind::NAdam:
      return {"mu_product", "exp_avg", "exp_avg_sq"};
  }
  return {};
}

}  // namespace weft

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
  return Status();
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
  return s + ")";
}

std::vector<std::string> OptimizerSpec::slot_names() const {
  switch (kind) {
    case Kind::SGD:
      if (momentum != 0) return {"momentum_buffer"};
      return {};
    case Kind::Adam:
    case Kind::AdamW:
      if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
      return {"exp_avg", "exp_avg_sq"};
    case Kind::RMSprop: {
      std::vector<std::string> names = {"square_avg"};
      if (momentum > 0) names.push_back("momentum_buffer");
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

// ---- append_optimizer ----

namespace {

// GradBuilder (typed nodes at one location) plus what the updates need besides.
class Emitter : public GradBuilder {
 public:
  using GradBuilder::GradBuilder;

  ValueId sqrt(ValueId a) { return op(Op::Sqrt, {a}); }
  ValueId cast(ValueId a, DType dtype) {
    if (type(a).dtype == dtype) return a;
    return op(Op::Cast, {a}, {{"dtype", dtype}});
  }
  /// `x · c` with the host constant `c` in x's dtype.
  ValueId scale(ValueId x, double c) { return mul(x, constant(c, type(x).dtype)); }
  void assign(ValueId target, ValueId value) { op(Op::Assign, {target, value}); }
};

// The f64 scalars of one step, each cast once per parameter dtype on first use.
class Scalars {
 public:
  explicit Scalars(Emitter& e) : e_(e) {}
  void set(const std::string& name, ValueId f64_value) { f64_[name] = f64_value; }
  ValueId in(const std::string& name, DType dtype) {
    auto key = std::make_pair(name, dtype);
    auto it = cast_.find(key);
    if (it != cast_.end()) return it->second;
    WEFT_CHECK(f64_.count(name), "append_optimizer: no scalar " + name);
    return cast_[key] = e_.cast(f64_.at(name), dtype);
  }

 private:
  Emitter& e_;
  std::map<std::string, ValueId> f64_;
  std::map<std::pair<std::string, DType>, ValueId> cast_;
};

// NAdam's per-parameter product of the momentum coefficients: a scalar, f32 whatever the
// parameter's dtype, as PyTorch's `torch.tensor(1.)`.
constexpr char kMuProduct[] = "mu_product";
const Type kMuProductType{DType::f32, Shape{}};

std::string value_name(const Graph& g, ValueId v) { return "%" + g.value(v).name; }

Status check_inputs(const Graph& g, const std::vector<std::pair<ValueId, ValueId>>& pairs,
                    ValueId lr, ValueId step, const std::vector<std::string>& slot_names) {
  auto typed = [&](ValueId v) { return v >= 0 && v < g.num_values() && g.value(v).type; };
  if (!typed(lr) || g.type(lr).shape.rank() != 0 || !is_floating(g.type(lr).dtype)) {
    return Error{"append_optimizer: the learning rate must be a float scalar (f32[])" +
                 (typed(lr) ? ", not " + value_name(g, lr) + ": " + g.type(lr).to_string()
                            : std::string())};
  }
  if (!typed(step) || g.type(step) != Type{DType::i64, Shape{}}) {
    return Error{"append_optimizer: the step number must be an i64[] scalar (1 on the first "
                 "step)" + (typed(step) ? ", not " + value_name(g, step) + ": " +
                                              g.type(step).to_string()
                                        : std::string())};
  }
  std::set<ValueId> seen;
  for (auto [p, grad] : pairs) {
    WEFT_CHECK(typed(p) && typed(grad), "append_optimizer: untyped parameter or gradient");
    int index = g.input_index(p);
    if (index < 0 || g.inputs()[index].kind != InputKind::param) {
      return Error{"append_optimizer: " + value_name(g, p) + " is not a param input; only "
                   "inputs declared with InputKind::param are updated by an optimizer"};
    }
    const Location& loc = g.inputs()[index].loc;
    const Type& pt = g.type(p);
    if (pt.dtype != DType::f32 && pt.dtype != DType::f64) {
      return Error{"append_optimizer: parameter " + value_name(g, p) + " is " + pt.to_string() +
                       "; optimizers update f32 or f64 parameters (keep f32 master weights "
                       "and cast them for the forward pass)",
                   loc};
    }
    if (g.type(grad) != pt) {
      return Error{"append_optimizer: the gradient " + value_name(g, grad) + " of parameter " +
                       value_name(g, p) + " is " + g.type(grad).to_string() + ", not " +
                       pt.to_string(),
                   loc};
    }
    if (!seen.insert(p).second) {
      return Error{"append_optimizer: parameter " + value_name(g, p) + " is listed twice", loc};
    }
    for (const std::string& slot : slot_names) {
      std::string name = "optimizer." + g.value(p).name + "." + slot;
      if (g.find_value(name)) {
        return Error{"append_optimizer: the slot name %" + name + " is already taken (was "
                     "an optimizer appended twice?)",
                     loc};
      }
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::vector<OptimizerSlot>> append_optimizer(
    Graph& g, const OptimizerSpec& spec,
    const std::vector<std::pair<ValueId, ValueId>>& params_and_grads, ValueId lr, ValueId step) {
  using Kind = OptimizerSpec::Kind;
  WEFT_RETURN_IF_ERROR(spec.validate());
  const std::vector<std::string> slot_names = spec.slot_names();
  WEFT_RETURN_IF_ERROR(check_inputs(g, params_and_grads, lr, step, slot_names));
  std::vector<OptimizerSlot> slots;
  if (params_and_grads.empty()) return slots;

  // Step-wide scalars, in f64 as PyTorch computes them in Python floats.
  Emitter e(g, Location{});
  Scalars s(e);
  const DType f64 = DType::f64;
  ValueId lr64 = e.cast(lr, f64);
  ValueId step64 = e.cast(step, f64);
  auto c64 = [&](double v) { return e.constant(v, f64); };
  s.set("lr", lr64);
  ValueId first_step = kNoValue;  // SGD's momentum buffer starts as the gradient.
  if (spec.kind == Kind::SGD && spec.momentum != 0) {
    first_step = e.op(Op::Eq, {step, e.constant(1, DType::i64)});
  }
  ValueId rectified = kNoValue;  // RAdam: whether this step's rho_t > 5.
  const bool adam_family = spec.kind == Kind::Adam || spec.kind == Kind::AdamW ||
                           spec.kind == Kind::RAdam || spec.kind == Kind::NAdam;
  if (adam_family) {
    ValueId beta2_pow = e.op(Op::Pow, {c64(spec.betas[1]), step64});
    ValueId bc2 = e.sub(c64(1), beta2_pow);
    if (spec.kind != Kind::NAdam) {
      ValueId bc1 = e.sub(c64(1), e.op(Op::Pow, {c64(spec.betas[0]), step64}));
      s.set("step_size", e.div(lr64, bc1));
    }
    s.set("bias_correction2", bc2);
    if (spec.kind == Kind::Adam || spec.kind == Kind::AdamW) {
      s.set("bias_correction2_sqrt", e.sqrt(bc2));
    }
    if (spec.kind == Kind::AdamW) {
      s.set("decay", e.sub(c64(1), e.mul(lr64, c64(spec.weight_decay))));
    }
    if (spec.kind == Kind::RAdam) {
      // The length of the approximated SMA, a function of the step alone. Where rho_t <= 5
      // the rectification term may be NaN; the select below never picks it there.
      const double rho_inf = 2 / (1 - spec.betas[1]) - 1;
      ValueId rho_t = e.sub(c64(rho_inf), e.div(e.mul(e.mul(c64(2), step64), beta2_pow), bc2));
      ValueId num = e.mul(e.mul(e.sub(rho_t, c64(4)), e.sub(rho_t, c64(2))), c64(rho_inf));
      ValueId den = e.mul(c64((rho_inf - 4) * (rho_inf - 2)), rho_t);
      s.set("rect_bias_correction2_sqrt", e.mul(e.sqrt(e.div(num, den)), e.sqrt(bc2)));
      rectified = e.op(Op::Gt, {rho_t, c64(5)});
    }
    if (spec.kind == Kind::NAdam) {
      // mu = β1·(1 - 0.5·0.96^(step·momentum_decay)), and mu_next at step + 1.
      auto mu_at = [&](ValueId t) {
        ValueId decay = e.op(Op::Pow, {c64(0.96), e.mul(t, c64(spec.momentum_decay))});
        return e.mul(c64(spec.betas[0]), e.sub(c64(1), e.mul(c64(0.5), decay)));
      };
      s.set("mu", mu_at(step64));
      s.set("mu_next", mu_at(e.add(step64, c64(1))));
    }
  }
  if (spec.kind == Kind::Adagrad) {
    // clr = lr / (1 + (step - 1) * lr_decay)
    ValueId decayed = e.mul(e.sub(step64, c64(1)), c64(spec.lr_decay));
    s.set("clr", e.div(lr64, e.add(c64(1), decayed)));
  }

  std::vector<ValueId> grads;
  for (auto [p, grad] : params_and_grads) grads.push_back(grad);
  if (spec.max_grad_norm > 0) {
    // torch.nn.utils.clip_grad_norm_: coef = max_norm / (total_norm + 1e-6), clamped to 1.
    ValueId total_sq = kNoValue;
    for (ValueId grad : grads) {
      ValueId sq = e.cast(e.op(Op::Sum, {e.mul(grad, grad)}), f64);
      total_sq = total_sq == kNoValue ? sq : e.add(total_sq, sq);
    }
    ValueId coef = e.div(c64(spec.max_grad_norm), e.add(e.sqrt(total_sq), c64(1e-6)));
    s.set("clip", e.op(Op::Minimum, {coef, c64(1)}));
    for (ValueId& grad : grads) grad = e.mul(grad, s.in("clip", g.type(grad).dtype));
  }

  for (size_t i = 0; i < params_and_grads.size(); ++i) {
    const ValueId p = params_and_grads[i].first;
    const int input_index = g.input_index(p);
    const Location loc = g.inputs()[input_index].loc;
    const Type type = g.type(p);
    const DType dt = type.dtype;
    e.set_loc(loc);

    std::map<std::string, ValueId> slot;
    for (const std::string& name : slot_names) {
      OptimizerSlot sl;
      sl.name = "optimizer." + g.value(p).name + "." + name;
      sl.init = spec.kind == Kind::Adagrad ? Initializer::constant(spec.initial_accumulator_value)
                : name == kMuProduct           ? Initializer::constant(1)
                                               : Initializer::zeros();
      sl.param = p;
      sl.value = g.add_input(sl.name, name == kMuProduct ? kMuProductType : type,
                             InputKind::state, loc);
      slot[name] = sl.value;
      slots.push_back(sl);
    }
    auto update = [&](const std::string& name, ValueId value) { e.assign(slot.at(name), value); };
    // Adam's moments, shared by its family: updates exp_avg and exp_avg_sq, returns them.
    auto moments = [&](ValueId grad) {
      ValueId m = e.add(e.scale(slot.at("exp_avg"), spec.betas[0]),
                        e.scale(grad, 1 - spec.betas[0]));
      ValueId v = e.add(e.scale(slot.at("exp_avg_sq"), spec.betas[1]),
                        e.mul(e.scale(grad, 1 - spec.betas[1]), grad));
      update("exp_avg", m);
      update("exp_avg_sq", v);
      return std::make_pair(m, v);
    };

    ValueId d = grads[i];
    if (spec.maximize) d = e.neg(d);
    // L2 weight decay added to the gradient (AdamW decays the parameter instead).
    if (spec.weight_decay != 0 && spec.kind != Kind::AdamW) {
      d = e.add(d, e.scale(p, spec.weight_decay));
    }
    ValueId new_p = kNoValue;
    switch (spec.kind) {
      case Kind::SGD: {
        if (spec.momentum != 0) {
          ValueId buf = e.scale(slot.at("momentum_buffer"), spec.momentum);
          ValueId damped = spec.dampening == 0 ? d : e.scale(d, 1 - spec.dampening);
          buf = e.op(Op::Select, {first_step, d, e.add(buf, damped)});
          update("momentum_buffer", buf);
          d = spec.nesterov ? e.add(d, e.scale(buf, spec.momentum)) : buf;
        }
        new_p = e.sub(p, e.mul(s.in("lr", dt), d));
        break;
      }
      case Kind::Adam:
      case Kind::AdamW: {
        ValueId p0 = p;
        if (spec.kind == Kind::AdamW && spec.weight_decay != 0) p0 = e.mul(p, s.in("decay", dt));
        auto [m, v] = moments(d);
        ValueId v_hat = v;
        if (spec.amsgrad) {
          v_hat = e.op(Op::Maximum, {slot.at("max_exp_avg_sq"), v});
          update("max_exp_avg_sq", v_hat);
        }
        ValueId denom = e.add(e.div(e.sqrt(v_hat), s.in("bias_correction2_sqrt", dt)),
                              e.constant(spec.eps, dt));
        new_p = e.sub(p0, e.mul(s.in("step_size", dt), e.div(m, denom)));
        break;
      }
      case Kind::RMSprop: {
        ValueId sq = e.add(e.scale(slot.at("square_avg"), spec.alpha),
                           e.mul(e.scale(d, 1 - spec.alpha), d));
        update("square_avg", sq);
        ValueId avg;
        if (spec.centered) {
          ValueId ga = e.add(e.scale(slot.at("grad_avg"), spec.alpha), e.scale(d, 1 - spec.alpha));
          update("grad_avg", ga);
          avg = e.sqrt(e.sub(sq, e.mul(ga, ga)));
        } else {
          avg = e.sqrt(sq);
        }
        avg = e.add(avg, e.constant(spec.eps, dt));
        ValueId step_dir = e.div(d, avg);
        if (spec.momentum > 0) {
          step_dir = e.add(e.scale(slot.at("momentum_buffer"), spec.momentum), step_dir);
          update("momentum_buffer", step_dir);
        }
        new_p = e.sub(p, e.mul(s.in("lr", dt), step_dir));
        break;
      }
      case Kind::Adagrad: {
        ValueId sum = e.add(slot.at("sum"), e.mul(d, d));
        update("sum", sum);
        ValueId std_dev = e.add(e.sqrt(sum), e.constant(spec.eps, dt));
        new_p = e.sub(p, e.mul(s.in("clr", dt), e.div(d, std_dev)));
        break;
      }
      case Kind::RAdam: {
        auto [m, v] = moments(d);
        ValueId corrected = e.mul(m, s.in("step_size", dt));  // m / bc1 · lr
        ValueId adaptive = e.div(s.in("rect_bias_correction2_sqrt", dt),
                                 e.add(e.sqrt(v), e.constant(spec.eps, dt)));
        new_p = e.sub(p, e.op(Op::Select, {rectified, e.mul(corrected, adaptive), corrected}));
        break;
      }
      case Kind::NAdam: {
        // mu_product is an f32 scalar, as in PyTorch; its products are f32 arithmetic.
        const DType mu_dt = kMuProductType.dtype;
        ValueId mu_product = e.mul(slot.at(kMuProduct), s.in("mu", mu_dt));
        update(kMuProduct, mu_product);
        ValueId mu_product_next =
            e.mul(e.mul(mu_product, s.in("mu", mu_dt)), s.in("mu_next", mu_dt));
        auto one_minus = [&](ValueId x) { return e.sub(c64(1), e.cast(x, f64)); };
        ValueId grad_size = e.div(e.mul(lr64, e.sub(c64(1), s.in("mu", f64))), one_minus(mu_product));
        ValueId avg_size = e.div(e.mul(lr64, s.in("mu_next", f64)), one_minus(mu_product_next));
        auto [m, v] = moments(d);
        ValueId denom = e.add(e.sqrt(e.div(v, s.in("bias_correction2", dt))),
                              e.constant(spec.eps, dt));
        new_p = e.sub(p, e.mul(e.cast(grad_size, dt), e.div(d, denom)));
        new_p = e.sub(new_p, e.mul(e.cast(avg_size, dt), e.div(m, denom)));
        break;
      }
    }
    e.assign(p, new_p);
  }
  return slots;
}

StatusOr<std::vector<std::pair<ValueId, ValueId>>> append_gradient_all_reduce(
    Graph& g, const std::vector<std::pair<ValueId, ValueId>>& params_and_grads) {
  auto typed = [&](ValueId v) { return v >= 0 && v < g.num_values() && g.value(v).type; };
  for (const auto& [p, grad] : params_and_grads) {
    if (!typed(p) || !typed(grad) || g.type(p) != g.type(grad) ||
        !is_floating(g.type(grad).dtype)) {
      return Error{"append_gradient_all_reduce: the gradient of " +
                   (typed(p) ? value_name(g, p) + ": " + g.type(p).to_string()
                             : std::string("a parameter")) +
                   " must be a float tensor of the parameter's type" +
                   (typed(grad) ? ", not " + value_name(g, grad) + ": " +
                                      g.type(grad).to_string()
                                : std::string())};
    }
  }
  std::vector<std::pair<ValueId, ValueId>> out;
  for (const auto& [p, grad] : params_and_grads) {
    const int index = g.input_index(p);
    const Location loc = index >= 0 ? g.inputs()[index].loc : Location{};
    std::string name = g.value(grad).name + ".all_reduce";
    if (g.find_value(name)) name.clear();  // taken: a fresh name
    const ValueId reduced = g.add_node(Op::AllReduce, {grad}, {{"reduction", std::string("mean")}},
                                       loc, g.type(grad), std::move(name));
    out.emplace_back(p, reduced);
  }
  return out;
}

}  // namespace weft

// append_optimizer and append_gradient_all_reduce (autodiff/optimizer.h): the update of
// every parameter appended to the training-step graph.
#include "autodiff/optimizer.h"

#include <cmath>
#include <map>
#include <set>

#include "autodiff/grad.h"
#include "ir/cast.h"

namespace weft {

// ---- append_optimizer ----

namespace {

// GradBuilder (typed nodes at one location) plus what the updates need besides.
class Emitter : public GradBuilder {
 public:
  using GradBuilder::GradBuilder;

  ValueId sqrt(ValueId a) { return op(Op::Sqrt, {a}); }
  ValueId cast(ValueId a, DType dtype) { return cast_to(*this, a, dtype); }
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

namespace {

/// The step number the optimizer sees (f64, 1-based) and, when accumulating gradients,
/// whether this step takes the update (bool[]; kNoValue: every step does).
struct StepCount {
  ValueId t64 = kNoValue;
  ValueId apply = kNoValue;
};

StepCount step_count(Emitter& e, ValueId step, int64_t accumulate, ValueId skipped) {
  const DType f64 = DType::f64;
  ValueId s64 = e.cast(step, f64);
  // Updates skipped by loss scaling do not count (ScaledUpdate).
  auto taken = [&](ValueId t) { return skipped == kNoValue ? t : e.sub(t, e.cast(skipped, f64)); };
  if (accumulate == 1) return {taken(s64), kNoValue};
  // t = ceil(step / K) = floor((step + K - 1) / K): exact in f64 below 2^53 steps.
  ValueId k = e.constant(static_cast<double>(accumulate), f64);
  ValueId t = e.op(Op::Floor,
                   {e.div(e.add(s64, e.constant(static_cast<double>(accumulate - 1), f64)), k)});
  return {taken(t), e.op(Op::Eq, {s64, e.mul(t, k)})};
}

/// Dynamic loss scaling's inputs: an f32[] inverse scale and an i64[] skipped count.
Status check_scaled(const Graph& g, const ScaledUpdate& scaled) {
  auto is = [&](ValueId v, const Type& type) {
    return v >= 0 && v < g.num_values() && g.value(v).type && g.type(v) == type;
  };
  if (!is(scaled.inv_scale, Type{DType::f32, Shape{}}) ||
      !is(scaled.skipped_steps, Type{DType::i64, Shape{}})) {
    return Error{"append_optimizer: loss scaling needs the inverse scale as an f32[] scalar and "
                 "the skipped-update count as an i64[] scalar"};
  }
  return Status();
}

/// Whether some element of the gradients is an inf or a NaN: g - g is 0 for a finite
/// element and NaN otherwise, so the sum over every gradient is 0 or NaN (one reduction
/// per gradient, fused with its subtraction).
ValueId any_non_finite(Emitter& e, const std::vector<ValueId>& grads) {
  const DType f64 = DType::f64;
  ValueId total = kNoValue;
  for (ValueId grad : grads) {
    ValueId nan_or_zero = e.cast(e.op(Op::Sum, {e.sub(grad, grad)}), f64);
    total = total == kNoValue ? nan_or_zero : e.add(total, nan_or_zero);
  }
  return e.op(Op::Ne, {total, e.constant(0, f64)});
}

/// The step-wide scalars of one group (in f64, as PyTorch computes them in Python floats):
/// those that depend on the group's lr and options are emitted per group; the others
/// repeat and are merged by CSE.
struct GroupScalars {
  explicit GroupScalars(Emitter& e) : s(e) {}
  Scalars s;
  ValueId first_step = kNoValue;  ///< SGD: the momentum buffer starts as the gradient.
  bool scheduled = false;         ///< The momentum / β1 is the runtime scalar "momentum".
  ValueId rectified = kNoValue;   ///< RAdam: whether this step's rho_t > 5.
  ValueId lr64 = kNoValue;
};

void set_group_scalars(Emitter& e, const OptimizerSpec& spec, ValueId lr, ValueId momentum,
                       ValueId step64, GroupScalars& out) {
  using Kind = OptimizerSpec::Kind;
  const DType f64 = DType::f64;
  Scalars& s = out.s;
  auto c64 = [&](double v) { return e.constant(v, f64); };
  ValueId lr64 = out.lr64 = e.cast(lr, f64);
  s.set("lr", lr64);
  // The momentum or β1: the runtime scalar (f64, as PyTorch's Python floats), or the
  // spec's constant.
  out.scheduled = momentum != kNoValue;
  ValueId momentum64 = kNoValue;
  if (out.scheduled) {
    momentum64 = e.cast(momentum, f64);
    s.set("momentum", momentum64);
    s.set("one_minus_momentum", e.sub(c64(1), momentum64));
  }
  if (spec.kind == Kind::SGD && (spec.momentum != 0 || out.scheduled)) {
    out.first_step = e.op(Op::Eq, {step64, c64(1)});
  }
  const bool adam_family = spec.kind == Kind::Adam || spec.kind == Kind::AdamW ||
                           spec.kind == Kind::RAdam || spec.kind == Kind::NAdam;
  if (adam_family) {
    ValueId beta2_pow = e.op(Op::Pow, {c64(spec.betas[1]), step64});
    ValueId bc2 = e.sub(c64(1), beta2_pow);
    if (spec.kind != Kind::NAdam) {
      ValueId beta1 = out.scheduled ? momentum64 : c64(spec.betas[0]);
      ValueId bc1 = e.sub(c64(1), e.op(Op::Pow, {beta1, step64}));
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
      out.rectified = e.op(Op::Gt, {rho_t, c64(5)});
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
}

/// The new value of parameter `p` from its (clipped, accumulated) gradient `grad`,
/// committing each slot's new value through `update`, which returns the value committed
/// (the old one on a step that takes no update). The parameter's formula reads that
/// value: the same where the parameter changes, and it keeps each slot's new value and
/// the parameter's in one fused kernel (merge-updates then merges them across
/// parameters).
template <typename Update>
ValueId updated_parameter(Emitter& e, const OptimizerSpec& spec, GroupScalars& gs, ValueId p,
                          ValueId grad, const std::map<std::string, ValueId>& slot,
                          Update update) {
  using Kind = OptimizerSpec::Kind;
  const DType f64 = DType::f64;
  const DType dt = e.type(p).dtype;
  Scalars& s = gs.s;
  auto c64 = [&](double v) { return e.constant(v, f64); };
  // x·momentum (or x·β1) and x·(1 - β1): the runtime scalar's, or the spec's constant.
  auto times_momentum = [&](ValueId x, double compiled) {
    return gs.scheduled ? e.mul(x, s.in("momentum", e.type(x).dtype)) : e.scale(x, compiled);
  };
  auto times_one_minus_beta1 = [&](ValueId x) {
    return gs.scheduled ? e.mul(x, s.in("one_minus_momentum", e.type(x).dtype))
                        : e.scale(x, 1 - spec.betas[0]);
  };
  // Adam's moments, shared by its family: updates exp_avg and exp_avg_sq, returns them.
  auto moments = [&](ValueId g) {
    ValueId m = e.add(times_momentum(slot.at("exp_avg"), spec.betas[0]), times_one_minus_beta1(g));
    ValueId v = e.add(e.scale(slot.at("exp_avg_sq"), spec.betas[1]),
                      e.mul(e.scale(g, 1 - spec.betas[1]), g));
    ValueId m_kept = update("exp_avg", m);  // before exp_avg_sq's, a fixed node order
    return std::make_pair(m_kept, update("exp_avg_sq", v));
  };

  ValueId d = grad;
  if (spec.maximize) d = e.neg(d);
  // L2 weight decay added to the gradient (AdamW decays the parameter instead).
  if (spec.weight_decay != 0 && spec.kind != Kind::AdamW) d = e.add(d, e.scale(p, spec.weight_decay));
  switch (spec.kind) {
    case Kind::SGD: {
      if (spec.momentum != 0 || gs.scheduled) {
        ValueId buf = times_momentum(slot.at("momentum_buffer"), spec.momentum);
        ValueId damped = spec.dampening == 0 ? d : e.scale(d, 1 - spec.dampening);
        buf = e.op(Op::Select, {gs.first_step, d, e.add(buf, damped)});
        buf = update("momentum_buffer", buf);
        d = spec.nesterov ? e.add(d, times_momentum(buf, spec.momentum)) : buf;
      }
      return e.sub(p, e.mul(s.in("lr", dt), d));
    }
    case Kind::Adam:
    case Kind::AdamW: {
      ValueId p0 = p;
      if (spec.kind == Kind::AdamW && spec.weight_decay != 0) p0 = e.mul(p, s.in("decay", dt));
      auto [m, v] = moments(d);
      ValueId v_hat = v;
      if (spec.amsgrad) {
        v_hat = e.op(Op::Maximum, {slot.at("max_exp_avg_sq"), v});
        v_hat = update("max_exp_avg_sq", v_hat);
      }
      ValueId denom = e.add(e.div(e.sqrt(v_hat), s.in("bias_correction2_sqrt", dt)),
                            e.constant(spec.eps, dt));
      return e.sub(p0, e.mul(s.in("step_size", dt), e.div(m, denom)));
    }
    case Kind::RMSprop: {
      ValueId sq = e.add(e.scale(slot.at("square_avg"), spec.alpha),
                         e.mul(e.scale(d, 1 - spec.alpha), d));
      sq = update("square_avg", sq);
      ValueId avg;
      if (spec.centered) {
        ValueId ga = e.add(e.scale(slot.at("grad_avg"), spec.alpha), e.scale(d, 1 - spec.alpha));
        ga = update("grad_avg", ga);
        avg = e.sqrt(e.sub(sq, e.mul(ga, ga)));
      } else {
        avg = e.sqrt(sq);
      }
      avg = e.add(avg, e.constant(spec.eps, dt));
      ValueId step_dir = e.div(d, avg);
      if (spec.momentum > 0 || gs.scheduled) {
        step_dir = e.add(times_momentum(slot.at("momentum_buffer"), spec.momentum), step_dir);
        step_dir = update("momentum_buffer", step_dir);
      }
      return e.sub(p, e.mul(s.in("lr", dt), step_dir));
    }
    case Kind::Adagrad: {
      ValueId sum = e.add(slot.at("sum"), e.mul(d, d));
      sum = update("sum", sum);
      ValueId std_dev = e.add(e.sqrt(sum), e.constant(spec.eps, dt));
      return e.sub(p, e.mul(s.in("clr", dt), e.div(d, std_dev)));
    }
    case Kind::RAdam: {
      auto [m, v] = moments(d);
      ValueId corrected = e.mul(m, s.in("step_size", dt));  // m / bc1 · lr
      ValueId adaptive = e.div(s.in("rect_bias_correction2_sqrt", dt),
                               e.add(e.sqrt(v), e.constant(spec.eps, dt)));
      return e.sub(p, e.op(Op::Select, {gs.rectified, e.mul(corrected, adaptive), corrected}));
    }
    case Kind::NAdam: {
      // mu_product is an f32 scalar, as in PyTorch; its products are f32 arithmetic.
      const DType mu_dt = kMuProductType.dtype;
      ValueId mu_product = e.mul(slot.at(kMuProduct), s.in("mu", mu_dt));
      mu_product = update(kMuProduct, mu_product);
      ValueId mu_product_next = e.mul(e.mul(mu_product, s.in("mu", mu_dt)), s.in("mu_next", mu_dt));
      auto one_minus = [&](ValueId x) { return e.sub(c64(1), e.cast(x, f64)); };
      ValueId grad_size =
          e.div(e.mul(gs.lr64, e.sub(c64(1), s.in("mu", f64))), one_minus(mu_product));
      ValueId avg_size = e.div(e.mul(gs.lr64, s.in("mu_next", f64)), one_minus(mu_product_next));
      auto [m, v] = moments(d);
      ValueId denom = e.add(e.sqrt(e.div(v, s.in("bias_correction2", dt))), e.constant(spec.eps, dt));
      ValueId new_p = e.sub(p, e.mul(e.cast(grad_size, dt), e.div(d, denom)));
      return e.sub(new_p, e.mul(e.cast(avg_size, dt), e.div(m, denom)));
    }
  }
  return kNoValue;
}

constexpr char kGradAccumulator[] = "grad_accumulator";

/// A group's momentum input: given exactly when its spec schedules the momentum, a float
/// scalar.
Status check_momentum(const Graph& g, const OptimizerGroup& group) {
  const ValueId m = group.momentum;
  if (group.spec.scheduled_momentum != (m != kNoValue)) {
    return Error{group.spec.scheduled_momentum
                     ? "append_optimizer: the spec schedules the momentum (scheduled_momentum) "
                       "but no momentum input was given"
                     : "append_optimizer: a momentum input was given for a spec that compiles its "
                       "momentum in; set OptimizerSpec::with_scheduled_momentum()"};
  }
  if (m != kNoValue && (m < 0 || m >= g.num_values() || !g.value(m).type ||
                        g.type(m).shape.rank() != 0 || !is_floating(g.type(m).dtype))) {
    return Error{"append_optimizer: the momentum must be a float scalar (f32[])"};
  }
  return Status();
}

/// The groups' common settings, with an error naming the first group that differs.
Status check_groups(const std::vector<OptimizerGroup>& groups) {
  for (const OptimizerGroup& group : groups) WEFT_RETURN_IF_ERROR(group.spec.validate());
  const OptimizerSpec& first = groups[0].spec;
  for (size_t i = 1; i < groups.size(); ++i) {
    const OptimizerSpec& spec = groups[i].spec;
    const char* what = spec.kind != first.kind                         ? "the optimizer kind"
                       : spec.max_grad_norm != first.max_grad_norm       ? "max_grad_norm"
                       : spec.accumulate_steps != first.accumulate_steps ? "accumulate_steps"
                                                                         : nullptr;
    if (what != nullptr) {
      return Error{"append_optimizer: group " + std::to_string(i) + " differs from group 0 in " +
                   what + "; every parameter group shares it"};
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::vector<OptimizerSlot>> append_optimizer(
    Graph& g, const OptimizerSpec& spec,
    const std::vector<std::pair<ValueId, ValueId>>& params_and_grads, ValueId lr, ValueId step,
    ValueId momentum) {
  return append_optimizer(g, {OptimizerGroup{params_and_grads, lr, spec, momentum}}, step);
}

namespace {

/// `%<grad>.all_reduce = all_reduce(value[, predicate]) {reduction="mean"}`, located at
/// parameter `p`'s input: the mean over the ranks of `value` (`grad` or its accumulated
/// sum), named after the gradient `grad`.
ValueId all_reduce_mean(Graph& g, ValueId p, ValueId grad, ValueId value, ValueId predicate) {
  const int index = g.input_index(p);
  const Location loc = index >= 0 ? g.inputs()[index].loc : Location{};
  std::string name = g.value(grad).name + ".all_reduce";
  if (g.value(grad).name.empty() || g.find_value(name)) name.clear();  // a fresh name
  std::vector<ValueId> operands = {value};
  if (predicate != kNoValue) operands.push_back(predicate);
  return g.add_node(Op::AllReduce, operands, {{"reduction", std::string("mean")}}, loc, g.type(value),
                    std::move(name));
}


using ParamsAndGrads = std::vector<std::pair<ValueId, ValueId>>;

/// Every group's (parameter, gradient) pairs, in order, each group's and all of them
/// checked (no parameter twice; the slots' names free).
StatusOr<ParamsAndGrads> checked_params_and_grads(const Graph& g, const std::vector<OptimizerGroup>& groups,
                                                  ValueId step) {
  ParamsAndGrads all;
  for (const OptimizerGroup& group : groups) {
    WEFT_RETURN_IF_ERROR(check_momentum(g, group));
    std::vector<std::string> names = group.spec.slot_names();
    if (groups[0].spec.accumulate_steps > 1) names.push_back(kGradAccumulator);
    WEFT_RETURN_IF_ERROR(check_inputs(g, group.params_and_grads, group.lr, step, names));
    all.insert(all.end(), group.params_and_grads.begin(), group.params_and_grads.end());
  }
  WEFT_RETURN_IF_ERROR(check_inputs(g, all, groups[0].lr, step, {}));
  return all;
}

/// Parameter `p`'s optimizer slot `name`: a new state input located at `p`'s.
OptimizerSlot new_slot(Graph& g, ValueId p, const std::string& name, Initializer init, Type type) {
  OptimizerSlot sl;
  sl.name = "optimizer." + g.value(p).name + "." + name;
  sl.init = std::move(init);
  sl.param = p;
  sl.value = g.add_input(sl.name, std::move(type), InputKind::state, g.inputs()[g.input_index(p)].loc);
  return sl;
}

/// The gradients an update reads, one per pair, and the accumulators they are summed in.
struct WindowGradients {
  std::vector<ValueId> values;
  std::vector<OptimizerSlot> accumulators;  ///< One per pair when accumulating (K > 1).
};

/// The gradients: accumulated (their window's mean) and averaged over the ranks (only
/// when the update is taken: the all_reduce's predicate).
WindowGradients window_gradients(Emitter& e, const ParamsAndGrads& all, int64_t accumulate,
                                 const StepCount& count, bool all_reduce_gradients) {
  Graph& g = e.graph();
  WindowGradients out;
  auto reduced = [&](ValueId p, ValueId grad, ValueId value) {
    return all_reduce_gradients ? all_reduce_mean(g, p, grad, value, count.apply) : value;
  };
  for (auto [p, grad] : all) {
    if (accumulate == 1) {
      out.values.push_back(reduced(p, grad, grad));
      continue;
    }
    e.set_loc(g.inputs()[g.input_index(p)].loc);
    OptimizerSlot acc = new_slot(g, p, kGradAccumulator, Initializer::zeros(), g.type(p));
    ValueId sum = e.add(acc.value, grad);
    e.assign(acc.value, e.op(Op::Select, {count.apply, e.constant(0, g.type(p).dtype), sum}));
    out.values.push_back(e.scale(reduced(p, grad, sum), 1.0 / static_cast<double>(accumulate)));
    out.accumulators.push_back(acc);
  }
  return out;
}

/// Loss scaling: the gradients divided by the scale, and whether any holds an inf or a
/// NaN (`scaled`'s found_inf and update are set).
ValueId unscale(Emitter& e, ScaledUpdate& scaled, const StepCount& count, std::vector<ValueId>& grads) {
  scaled.found_inf = any_non_finite(e, grads);
  scaled.update = count.apply;
  for (size_t i = 0; i < grads.size(); ++i) {
    grads[i] = e.mul(grads[i], e.cast(scaled.inv_scale, e.type(grads[i]).dtype));
  }
  return scaled.found_inf;
}

/// torch.nn.utils.clip_grad_norm_ over every gradient: coef = max_norm / (total_norm +
/// 1e-6), clamped to 1 (f64).
ValueId clip_coefficient(Emitter& e, double max_grad_norm, const std::vector<ValueId>& grads) {
  const DType f64 = DType::f64;
  ValueId total_sq = kNoValue;
  for (ValueId grad : grads) {
    ValueId sq = e.cast(e.op(Op::Sum, {e.mul(grad, grad)}), f64);
    total_sq = total_sq == kNoValue ? sq : e.add(total_sq, sq);
  }
  ValueId coef = e.div(e.constant(max_grad_norm, f64), e.add(e.sqrt(total_sq), e.constant(1e-6, f64)));
  return e.op(Op::Minimum, {coef, e.constant(1, f64)});
}

/// Every assign of an update: when accumulating, only the window's last step changes
/// anything (`apply`); with loss scaling, nothing changes when a gradient holds an inf or
/// a NaN (`found_inf`).
struct Commit {
  ValueId apply = kNoValue;
  ValueId found_inf = kNoValue;

  ValueId operator()(Emitter& e, ValueId target, ValueId value) const {
    if (apply != kNoValue) value = e.op(Op::Select, {apply, value, target});
    if (found_inf != kNoValue) value = e.op(Op::Select, {found_inf, target, value});
    e.assign(target, value);
    return value;
  }
};

/// One group's updates: its step-wide scalars, then each parameter's slots (appended to
/// `slots`, its accumulator after them) and update, reading `grads` from index `k` on.
void update_group(Emitter& e, const OptimizerGroup& group, const StepCount& count, ValueId clip,
                  const Commit& commit, const WindowGradients& grads, size_t& k,
                  std::vector<OptimizerSlot>& slots) {
  Graph& g = e.graph();
  const OptimizerSpec& spec = group.spec;
  GroupScalars gs(e);
  e.set_loc(Location{});
  set_group_scalars(e, spec, group.lr, group.momentum, count.t64, gs);
  if (clip != kNoValue) gs.s.set("clip", clip);
  const std::vector<std::string> slot_names = spec.slot_names();
  for (auto [p, unused] : group.params_and_grads) {
    const Type type = g.type(p);
    e.set_loc(g.inputs()[g.input_index(p)].loc);
    std::map<std::string, ValueId> slot;
    for (const std::string& name : slot_names) {
      Initializer init = spec.kind == OptimizerSpec::Kind::Adagrad
                             ? Initializer::constant(spec.initial_accumulator_value)
                         : name == kMuProduct ? Initializer::constant(1)
                                              : Initializer::zeros();
      OptimizerSlot sl = new_slot(g, p, name, init, name == kMuProduct ? kMuProductType : type);
      slot[name] = sl.value;
      slots.push_back(sl);
    }
    if (spec.accumulate_steps > 1) slots.push_back(grads.accumulators[k]);
    ValueId grad = grads.values[k++];
    if (clip != kNoValue) grad = e.mul(grad, gs.s.in("clip", type.dtype));
    auto update = [&](const std::string& name, ValueId value) { return commit(e, slot.at(name), value); };
    commit(e, p, updated_parameter(e, spec, gs, p, grad, slot, update));
  }
}

}  // namespace

StatusOr<std::vector<OptimizerSlot>> append_optimizer(Graph& g,
                                                      const std::vector<OptimizerGroup>& groups,
                                                      ValueId step, ScaledUpdate* scaled,
                                                      bool all_reduce_gradients) {
  if (groups.empty()) return std::vector<OptimizerSlot>{};
  WEFT_RETURN_IF_ERROR(check_groups(groups));
  if (scaled != nullptr) WEFT_RETURN_IF_ERROR(check_scaled(g, *scaled));
  const OptimizerSpec& common = groups[0].spec;
  WEFT_ASSIGN_OR_RETURN(const ParamsAndGrads all, checked_params_and_grads(g, groups, step));
  std::vector<OptimizerSlot> slots;
  if (all.empty()) return slots;

  Emitter e(g, Location{});
  const StepCount count =
      step_count(e, step, common.accumulate_steps, scaled ? scaled->skipped_steps : kNoValue);
  WindowGradients grads = window_gradients(e, all, common.accumulate_steps, count, all_reduce_gradients);
  e.set_loc(Location{});
  Commit commit{.apply = count.apply};
  if (scaled != nullptr) commit.found_inf = unscale(e, *scaled, count, grads.values);
  const ValueId clip = common.max_grad_norm > 0 ? clip_coefficient(e, common.max_grad_norm, grads.values)
                                                : kNoValue;
  size_t k = 0;  // index into `all` and `grads`
  for (const OptimizerGroup& group : groups) {
    update_group(e, group, count, clip, commit, grads, k, slots);
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
  for (const auto& [p, grad] : params_and_grads) out.emplace_back(p, all_reduce_mean(g, p, grad, grad, kNoValue));
  return out;
}

}  // namespace weft

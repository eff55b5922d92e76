#include "training/schedule.h"

#include "ir/text_util.h"
#include "training/learning_rate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

namespace weft {

namespace {

int64_t clamp_t(int64_t t) { return std::max<int64_t>(t, 0); }

// PyTorch's LinearLR from start_factor to 1 over `steps` steps, at step t < steps.
double linear_warmup(double peak, double start_factor, int64_t t, int64_t steps) {
  return peak * (start_factor +
                 (1 - start_factor) * static_cast<double>(t) / static_cast<double>(steps));
}

// LinearLR's and ConstantLR's check of their factor, with PyTorch's message.
Status check_warmup_factor(double factor, const char* which) {
  if (!(factor >= 0 && factor <= 1)) {
    return Error{std::string(which) + " multiplicative factor expected to be between 0 and 1."};
  }
  return Status();
}

// A rate the schedule starts from, ends at or passes through, checked as every rate is
// (training/learning_rate.h): "StepLR's base_lr=-0.1: the learning rate must be >= 0 ...".
Status check_rate(const char* schedule, const std::string& name, double lr) {
  return check_learning_rate(lr, std::string(schedule) + "'s " + name + "=" + python_float_repr(lr));
}

// A factor whose powers multiply the rate (StepLR's gamma...): a negative one makes every
// other rate negative, an infinite one the rates infinite.
Status check_factor(const char* schedule, const char* name, double factor) {
  if (std::isfinite(factor) && factor >= 0) return Status();
  return Error{std::string(schedule) + ": " + name + " must be a finite number >= 0, not " +
               python_float_repr(factor) + " (the learning rate is multiplied by its powers)"};
}

// (1 + cos(π·x / period)) / 2 scaled between eta_min and base_lr: PyTorch's closed form.
double cosine(double base_lr, double eta_min, double x, double period) {
  return eta_min + (base_lr - eta_min) * (1 + std::cos(std::numbers::pi * x / period)) / 2;
}

}  // namespace

// ---- StepLR ----

double StepLR::lr_at(int64_t t) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(clamp_t(t) / step_size_));
}

Status StepLR::validate() const {
  if (step_size_ < 1) {
    return Error{"StepLR: step_size must be at least 1, not " + std::to_string(step_size_)};
  }
  WEFT_RETURN_IF_ERROR(check_rate("StepLR", "base_lr", base_lr_));
  return check_factor("StepLR", "gamma", gamma_);
}

std::string StepLR::describe() const {
  return "StepLR(base_lr=" + python_float_repr(base_lr_) + ", step_size=" + std::to_string(step_size_) +
         ", gamma=" + python_float_repr(gamma_) + ")";
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(double base_lr, std::vector<int64_t> milestones, double gamma)
    : base_lr_(base_lr), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
}

double MultiStepLR::lr_at(int64_t t) const {
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), clamp_t(t)) -
                milestones_.begin();
  return base_lr_ * std::pow(gamma_, static_cast<double>(passed));
}

Status MultiStepLR::validate() const {
  WEFT_RETURN_IF_ERROR(check_rate("MultiStepLR", "base_lr", base_lr_));
  return check_factor("MultiStepLR", "gamma", gamma_);
}

std::string MultiStepLR::describe() const {
  std::string ms;
  for (size_t i = 0; i < milestones_.size(); ++i) {
    ms += (i ? ", " : "") + std::to_string(milestones_[i]);
  }
  return "MultiStepLR(base_lr=" + python_float_repr(base_lr_) + ", milestones=[" + ms +
         "], gamma=" + python_float_repr(gamma_) + ")";
}

// ---- ExponentialLR ----

double ExponentialLR::lr_at(int64_t t) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(clamp_t(t)));
}

Status ExponentialLR::validate() const {
  WEFT_RETURN_IF_ERROR(check_rate("ExponentialLR", "base_lr", base_lr_));
  return check_factor("ExponentialLR", "gamma", gamma_);
}

std::string ExponentialLR::describe() const {
  return "ExponentialLR(base_lr=" + python_float_repr(base_lr_) + ", gamma=" + python_float_repr(gamma_) + ")";
}

// ---- CosineAnnealingLR ----

double CosineAnnealingLR::lr_at(int64_t t) const {
  return cosine(base_lr_, eta_min_, static_cast<double>(clamp_t(t)),
                static_cast<double>(t_max_));
}

Status CosineAnnealingLR::validate() const {
  if (t_max_ < 1) {
    return Error{"CosineAnnealingLR: T_max must be at least 1, not " + std::to_string(t_max_)};
  }
  WEFT_RETURN_IF_ERROR(check_rate("CosineAnnealingLR", "base_lr", base_lr_));
  return check_rate("CosineAnnealingLR", "eta_min", eta_min_);
}

std::string CosineAnnealingLR::describe() const {
  return "CosineAnnealingLR(base_lr=" + python_float_repr(base_lr_) + ", T_max=" +
         std::to_string(t_max_) + ", eta_min=" + python_float_repr(eta_min_) + ")";
}

// ---- WarmupCosineLR ----

double WarmupCosineLR::lr_at(int64_t t) const {
  t = clamp_t(t);
  if (t < warmup_steps_) return linear_warmup(base_lr_, start_factor_, t, warmup_steps_);
  if (t > total_steps_) return eta_min_;
  return cosine(base_lr_, eta_min_, static_cast<double>(t - warmup_steps_),
                static_cast<double>(total_steps_ - warmup_steps_));
}

Status WarmupCosineLR::validate() const {
  if (warmup_steps_ < 0) {
    return Error{"WarmupCosineLR: warmup_steps must be >= 0, not " +
                 std::to_string(warmup_steps_)};
  }
  if (total_steps_ <= warmup_steps_) {
    return Error{"WarmupCosineLR: total_steps (" + std::to_string(total_steps_) +
                 ") must exceed warmup_steps (" + std::to_string(warmup_steps_) +
                 "): the cosine phase needs at least one step"};
  }
  WEFT_RETURN_IF_ERROR(check_warmup_factor(start_factor_, "Starting"));
  WEFT_RETURN_IF_ERROR(check_rate("WarmupCosineLR", "base_lr", base_lr_));
  return check_rate("WarmupCosineLR", "eta_min", eta_min_);
}

std::string WarmupCosineLR::describe() const {
  return "WarmupCosineLR(base_lr=" + python_float_repr(base_lr_) + ", warmup_steps=" +
         std::to_string(warmup_steps_) + ", total_steps=" + std::to_string(total_steps_) +
         ", warmup_start_factor=" + python_float_repr(start_factor_) + ", eta_min=" + python_float_repr(eta_min_) +
         ")";
}

// ---- OneCycleLR ----

double OneCycleLR::lr_at(int64_t t) const { return annealed(t, /*momentum=*/false); }

std::optional<double> OneCycleLR::momentum_at(int64_t t) const {
  if (!options_.cycle_momentum) return std::nullopt;
  return annealed(t, /*momentum=*/true);
}

double OneCycleLR::annealed(int64_t t, bool momentum) const {
  t = clamp_t(t);
  const OneCycleOptions& o = options_;
  const double initial_lr = max_lr_ / o.div_factor;
  const double min_lr = initial_lr / o.final_div_factor;
  const double base_m = o.base_momentum, max_m = o.max_momentum;
  if (t > total_steps_) return momentum ? max_m : min_lr;
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  // PyTorch's _schedule_phases, with its arithmetic order.
  const double total = static_cast<double>(total_steps_);
  std::vector<Phase> phases;
  if (o.three_phase) {
    phases = {{o.pct_start * total - 1, initial_lr, max_lr_, max_m, base_m},
              {2 * o.pct_start * total - 2, max_lr_, initial_lr, base_m, max_m},
              {total - 1, initial_lr, min_lr, max_m, max_m}};
  } else {
    phases = {{o.pct_start * total - 1, initial_lr, max_lr_, max_m, base_m},
              {total - 1, max_lr_, min_lr, base_m, max_m}};
  }
  const double step = static_cast<double>(t);
  double start_step = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    if (step <= p.end_step || i + 1 == phases.size()) {
      // A phase of zero length (PyTorch divides by zero there) is taken as finished.
      double span = p.end_step - start_step;
      double pct = span == 0 ? 1.0 : (step - start_step) / span;
      const double start = momentum ? p.start_momentum : p.start_lr;
      const double end = momentum ? p.end_momentum : p.end_lr;
      if (o.anneal_strategy == OneCycleOptions::Anneal::cos) {
        double cos_out = std::cos(std::numbers::pi * pct) + 1;
        return end + (start - end) / 2.0 * cos_out;
      }
      return (end - start) * pct + start;
    }
    start_step = p.end_step;
  }
  return momentum ? max_m : min_lr;  // unreachable: the last phase always matches
}

Status OneCycleLR::validate() const {
  if (total_steps_ <= 0) {
    return Error{"Expected positive integer total_steps, but got " +
                 std::to_string(total_steps_)};
  }
  if (!(options_.pct_start >= 0 && options_.pct_start <= 1)) {
    return Error{"Expected float between 0 and 1 pct_start, but got " +
                 python_float_repr(options_.pct_start)};
  }
  // The lr anneals between these three, so it never leaves them.
  const double initial_lr = max_lr_ / options_.div_factor;
  WEFT_RETURN_IF_ERROR(check_rate("OneCycleLR", "max_lr", max_lr_));
  WEFT_RETURN_IF_ERROR(check_rate("OneCycleLR", "initial_lr (max_lr / div_factor)", initial_lr));
  return check_rate("OneCycleLR", "min_lr (initial_lr / final_div_factor)", initial_lr / options_.final_div_factor);
}

std::string OneCycleLR::describe() const {
  const OneCycleOptions& o = options_;
  return "OneCycleLR(max_lr=" + python_float_repr(max_lr_) + ", total_steps=" +
         std::to_string(total_steps_) + ", pct_start=" + python_float_repr(o.pct_start) +
         ", anneal_strategy='" +
         (o.anneal_strategy == OneCycleOptions::Anneal::cos ? "cos" : "linear") +
         "', div_factor=" + python_float_repr(o.div_factor) + ", final_div_factor=" +
         python_float_repr(o.final_div_factor) + ", three_phase=" + (o.three_phase ? "True" : "False") +
         (o.cycle_momentum ? ", base_momentum=" + python_float_repr(o.base_momentum) +
                                 ", max_momentum=" + python_float_repr(o.max_momentum)
                           : std::string(", cycle_momentum=False")) +
         ")";
}

// ---- CyclicLR ----

double CyclicLR::height(int64_t t) const {
  t = clamp_t(t);
  using Mode = CyclicOptions::Mode;
  // PyTorch's get_lr, with its arithmetic order.
  const double up = static_cast<double>(options_.step_size_up);
  const double total_size = up + static_cast<double>(step_size_down());
  const double step_ratio = up / total_size;
  const double epoch = static_cast<double>(t);
  const double cycle = std::floor(1 + epoch / total_size);
  const double x = 1. + epoch / total_size - cycle;
  const double scale_factor = x <= step_ratio ? x / step_ratio : (x - 1) / (step_ratio - 1);
  switch (options_.mode) {
    case Mode::triangular: return scale_factor;
    case Mode::triangular2: return scale_factor * (1 / std::pow(2., cycle - 1));
    case Mode::exp_range: return scale_factor * std::pow(options_.gamma, epoch);
  }
  return 0;
}

double CyclicLR::lr_at(int64_t t) const { return base_lr_ + (max_lr_ - base_lr_) * height(t); }

std::optional<double> CyclicLR::momentum_at(int64_t t) const {
  if (!options_.cycle_momentum) return std::nullopt;
  return options_.max_momentum - (options_.max_momentum - options_.base_momentum) * height(t);
}

Status CyclicLR::validate() const {
  if (options_.step_size_up < 1) {
    return Error{"CyclicLR: step_size_up must be at least 1, not " +
                 std::to_string(options_.step_size_up)};
  }
  if (step_size_down() < 0) {
    return Error{"CyclicLR: step_size_down must be >= 0, not " +
                 std::to_string(step_size_down())};
  }
  WEFT_RETURN_IF_ERROR(check_rate("CyclicLR", "base_lr", base_lr_));
  WEFT_RETURN_IF_ERROR(check_rate("CyclicLR", "max_lr", max_lr_));
  return check_factor("CyclicLR", "gamma", options_.gamma);
}

std::string CyclicLR::describe() const {
  using Mode = CyclicOptions::Mode;
  const char* mode = options_.mode == Mode::triangular    ? "triangular"
                     : options_.mode == Mode::triangular2 ? "triangular2"
                                                          : "exp_range";
  return "CyclicLR(base_lr=" + python_float_repr(base_lr_) + ", max_lr=" +
         python_float_repr(max_lr_) + ", step_size_up=" + std::to_string(options_.step_size_up) +
         ", step_size_down=" + std::to_string(step_size_down()) + ", mode='" + mode +
         "', gamma=" + python_float_repr(options_.gamma) +
         (options_.cycle_momentum ? ", base_momentum=" + python_float_repr(options_.base_momentum) +
                                        ", max_momentum=" + python_float_repr(options_.max_momentum)
                                  : std::string(", cycle_momentum=False")) +
         ")";
}

// ---- WarmupLR ----

double WarmupLR::lr_at(int64_t t) const {
  t = clamp_t(t);
  if (t >= warmup_steps_) return after_->lr_at(t - warmup_steps_);
  const double peak = after_->lr_at(0);
  if (kind_ == WarmupKind::constant) return peak * start_factor_;
  return linear_warmup(peak, start_factor_, t, warmup_steps_);
}

std::optional<double> WarmupLR::momentum_at(int64_t t) const {
  return after_->momentum_at(std::max<int64_t>(clamp_t(t) - warmup_steps_, 0));
}

Status WarmupLR::validate() const {
  if (!after_) return Error{"WarmupLR: no schedule to warm up into (after is null)"};
  if (warmup_steps_ < 0) {
    return Error{"WarmupLR: warmup_steps must be >= 0, not " + std::to_string(warmup_steps_)};
  }
  WEFT_RETURN_IF_ERROR(
      check_warmup_factor(start_factor_, kind_ == WarmupKind::linear ? "Starting" : "Constant"));
  return after_->validate();
}

std::string WarmupLR::describe() const {
  return std::string("WarmupLR(warmup='") + (kind_ == WarmupKind::linear ? "linear" : "constant") +
         "', warmup_steps=" + std::to_string(warmup_steps_) +
         ", start_factor=" + python_float_repr(start_factor_) +
         ", after=" + (after_ ? after_->describe() : std::string("None")) + ")";
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(double lr, PlateauOptions options)
    : lr_(lr), options_(options) {
  best_ = options_.mode == PlateauOptions::Mode::min ? std::numeric_limits<double>::infinity()
                                                     : -std::numeric_limits<double>::infinity();
}

Status ReduceLROnPlateau::validate() const {
  if (!(options_.factor < 1.0)) return Error{"Factor should be < 1.0."};
  WEFT_RETURN_IF_ERROR(check_rate("ReduceLROnPlateau", "lr", lr_));
  return check_rate("ReduceLROnPlateau", "min_lr", options_.min_lr);
}

bool ReduceLROnPlateau::is_better(double a) const {
  using M = PlateauOptions::Mode;
  using T = PlateauOptions::ThresholdMode;
  const double th = options_.threshold;
  if (options_.mode == M::min) {
    return options_.threshold_mode == T::rel ? a < best_ * (1. - th) : a < best_ - th;
  }
  return options_.threshold_mode == T::rel ? a > best_ * (th + 1.) : a > best_ + th;
}

double ReduceLROnPlateau::observe(double metric) {
  ++epochs_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs during the cooldown are ignored
  }
  if (num_bad_epochs_ > options_.patience) {
    double new_lr = std::max(lr_ * options_.factor, options_.min_lr);
    if (lr_ - new_lr > options_.eps) lr_ = new_lr;
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  return lr_;
}

std::string ReduceLROnPlateau::describe() const {
  const PlateauOptions& o = options_;
  return std::string("ReduceLROnPlateau(lr=") + python_float_repr(lr_) + ", mode='" +
         (o.mode == PlateauOptions::Mode::min ? "min" : "max") +
         "', factor=" + python_float_repr(o.factor) + ", patience=" + std::to_string(o.patience) +
         ", threshold=" + python_float_repr(o.threshold) + ", threshold_mode='" +
         (o.threshold_mode == PlateauOptions::ThresholdMode::rel ? "rel" : "abs") +
         "', cooldown=" + std::to_string(o.cooldown) + ", min_lr=" + python_float_repr(o.min_lr) +
         ", eps=" + python_float_repr(o.eps) + ")";
}

}  // namespace weft

#pragma once
// Learning-rate schedules, computed on the host. The learning rate is a runtime input of
// the training-step graph (DESIGN.md, decision 5; autodiff/optimizer.h), so a schedule
// is plain C++ that picks the value fed to `lr` before each step: nothing recompiles.
//
//   weft::WarmupCosineLR sched(/*base_lr=*/3e-4, /*warmup_steps=*/500,
//                              /*total_steps=*/10000, /*warmup_start_factor=*/0.01);
//   for (int64_t t = 0; t < 10000; ++t) step.run(batch, /*lr=*/sched.lr_at(t), /*step=*/t + 1);
//
// `t` counts scheduler steps taken so far, PyTorch's `last_epoch`: `lr_at(0)` is the
// learning rate before any `scheduler.step()`, `lr_at(t)` the one after t of them —
// epochs or iterations, whichever the caller steps the schedule by. Negative t is
// treated as 0.
//
// The stateless schedules are closed forms that reproduce the values of PyTorch 1.13's
// torch.optim.lr_scheduler (its chainable, step-by-step updates) to ~1e-15 relative;
// training/schedule_test.cc pins them to 1e-9 against fixtures made by
// training/testdata/make_schedule_fixtures.py. ReduceLROnPlateau depends on the metrics
// it has seen, so it is a stateful object fed once per epoch. WarmupLR composes: it puts
// a warmup in front of any stateless schedule (PyTorch's SequentialLR with a LinearLR or
// ConstantLR first). OneCycleLR and CyclicLR also give the momentum of each step
// (`momentum_at`, PyTorch's cycle_momentum), fed to a step built with
// OptimizerSpec::with_scheduled_momentum as its `weft.momentum` input (Trainer::set_momentum).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"

namespace weft {

/// The lr of a parameter group whose first lr is `group_first_lr` when the optimizer's
/// base lr `base_lr` is scheduled to `lr`: scaled by the same factor, as a PyTorch
/// scheduler scales each group's initial lr (the first lr itself when `base_lr` is 0).
/// The Trainer and the AOT CompiledModel feed their groups' lr inputs with it.
inline double group_lr(double group_first_lr, double lr, double base_lr) {
  return base_lr != 0 ? group_first_lr * (lr / base_lr) : group_first_lr;
}

/// A schedule whose learning rate is a function of the step count alone.
class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  /// The learning rate after `t` scheduler steps (see the header comment).
  virtual double lr_at(int64_t t) const = 0;
  /// The momentum after `t` steps — SGD's and RMSprop's momentum, or β1 of Adam, AdamW and
  /// RAdam — for a schedule that cycles it (PyTorch's cycle_momentum: OneCycleLR,
  /// CyclicLR); nullopt for the others, whose optimizer keeps its own. A compiled step
  /// takes it as a runtime input only when built for it
  /// (OptimizerSpec::with_scheduled_momentum, training/step_inputs.h's weft.momentum).
  virtual std::optional<double> momentum_at(int64_t /*t*/) const { return std::nullopt; }
  /// The constructor arguments checked, with PyTorch's message where it has one; beyond
  /// PyTorch's, each rate it is built with is checked as training/learning_rate.h checks
  /// a rate, and each factor whose powers scale the rate must be a finite number >= 0, so
  /// that no step is given a negative or non-finite rate by a schedule.
  virtual Status validate() const { return Status(); }
  /// `StepLR(base_lr=0.1, step_size=30, gamma=0.1)`, for logs.
  virtual std::string describe() const = 0;
};

/// base_lr · gamma^floor(t / step_size). Errors: step_size < 1, and (as every schedule's)
/// a bad rate or factor (LrSchedule::validate).
class StepLR final : public LrSchedule {
 public:
  StepLR(double base_lr, int64_t step_size, double gamma = 0.1)
      : base_lr_(base_lr), step_size_(step_size), gamma_(gamma) {}
  double lr_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  double base_lr_;
  int64_t step_size_;
  double gamma_;
};

/// base_lr · gamma^(number of milestones <= t); a milestone listed twice counts twice,
/// as in PyTorch. Milestones need not be sorted.
class MultiStepLR final : public LrSchedule {
 public:
  MultiStepLR(double base_lr, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  double base_lr_;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/// base_lr · gamma^t.
class ExponentialLR final : public LrSchedule {
 public:
  ExponentialLR(double base_lr, double gamma) : base_lr_(base_lr), gamma_(gamma) {}
  double lr_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  double base_lr_;
  double gamma_;
};

/// eta_min + (base_lr - eta_min) · (1 + cos(π·t / T_max)) / 2. Like PyTorch's, it does
/// not stop at T_max: past it the cosine rises again (period 2·T_max); use
/// WarmupCosineLR to stay at eta_min. Errors: T_max < 1.
class CosineAnnealingLR final : public LrSchedule {
 public:
  CosineAnnealingLR(double base_lr, int64_t T_max, double eta_min = 0)
      : base_lr_(base_lr), t_max_(T_max), eta_min_(eta_min) {}
  double lr_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  double base_lr_;
  int64_t t_max_;
  double eta_min_;
};

/// Linear warmup, then cosine annealing:
///   t <  warmup_steps:  base_lr · (f + (1 - f) · t / warmup_steps), f = warmup_start_factor
///   t <= total_steps:   eta_min + (base_lr - eta_min) · (1 + cos(π·(t - warmup_steps) /
///                       (total_steps - warmup_steps))) / 2
///   t >  total_steps:   eta_min (the cosine does not rise again).
/// Up to total_steps this is PyTorch's SequentialLR([LinearLR(start_factor=f,
/// total_iters=warmup_steps), CosineAnnealingLR(T_max=total_steps - warmup_steps,
/// eta_min)], milestones=[warmup_steps]). f = 0 (warm up from zero) is allowed here; it
/// makes PyTorch's chainable LinearLR divide by zero. warmup_steps = 0 is plain cosine.
/// Errors: warmup_steps < 0, total_steps <= warmup_steps, f outside [0, 1].
class WarmupCosineLR final : public LrSchedule {
 public:
  WarmupCosineLR(double base_lr, int64_t warmup_steps, int64_t total_steps,
                 double warmup_start_factor = 0, double eta_min = 0)
      : base_lr_(base_lr),
        warmup_steps_(warmup_steps),
        total_steps_(total_steps),
        start_factor_(warmup_start_factor),
        eta_min_(eta_min) {}
  double lr_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  double base_lr_;
  int64_t warmup_steps_;
  int64_t total_steps_;
  double start_factor_;
  double eta_min_;
};

/// OneCycleLR's options, with PyTorch's names and defaults.
struct OneCycleOptions {
  enum class Anneal { cos, linear };
  double pct_start = 0.3;         ///< Fraction of the cycle spent increasing the lr.
  Anneal anneal_strategy = Anneal::cos;
  double div_factor = 25;         ///< initial_lr = max_lr / div_factor.
  double final_div_factor = 1e4;  ///< min_lr = initial_lr / final_div_factor.
  bool three_phase = false;       ///< Anneal back to initial_lr, then down to min_lr.
  /// Cycle the momentum (β1 for the Adam family) inversely to the lr, between
  /// base_momentum and max_momentum.
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
};

/// PyTorch's OneCycleLR (Smith & Topin, super-convergence). Phases (two, or three with
/// three_phase) end at steps pct_start·total_steps - 1, [2·pct_start·total_steps - 2,]
/// total_steps - 1 and anneal between initial_lr, max_lr and min_lr exactly as PyTorch's
/// get_lr does; with cycle_momentum the momentum anneals the other way in the same
/// phases, max_momentum → base_momentum → max_momentum (three_phase: max → base → max →
/// max). Valid for 0 <= t <= total_steps (PyTorch raises after that); later t give
/// min_lr and max_momentum. Errors: PyTorch's, for total_steps and pct_start.
class OneCycleLR final : public LrSchedule {
 public:
  OneCycleLR(double max_lr, int64_t total_steps, OneCycleOptions options = {})
      : max_lr_(max_lr), total_steps_(total_steps), options_(options) {}
  double lr_at(int64_t t) const override;
  std::optional<double> momentum_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  /// The lr (false) or the momentum (true) after t steps.
  double annealed(int64_t t, bool momentum) const;

  double max_lr_;
  int64_t total_steps_;
  OneCycleOptions options_;
};

/// CyclicLR's options, with PyTorch's names and defaults. The scale function is the
/// mode's own (PyTorch's scale_mode default for it): triangular and triangular2 scale
/// per cycle, exp_range per step; a custom scale_fn is not offered.
struct CyclicOptions {
  enum class Mode { triangular, triangular2, exp_range };
  int64_t step_size_up = 2000;  ///< Steps from base_lr up to max_lr.
  /// Steps from max_lr back down to base_lr; unset: step_size_up. 0 gives a sawtooth.
  std::optional<int64_t> step_size_down = std::nullopt;
  Mode mode = Mode::triangular;
  double gamma = 1.0;  ///< exp_range: the amplitude shrinks by gamma^t.
  /// Cycle the momentum inversely to the lr, between base_momentum and max_momentum.
  bool cycle_momentum = true;
  double base_momentum = 0.8;
  double max_momentum = 0.9;
};

/// PyTorch's CyclicLR (Smith, "Cyclical Learning Rates"). With T = step_size_up +
/// step_size_down and r = step_size_up / T:
///   cycle = floor(1 + t/T), x = 1 + t/T - cycle,
///   scale = x / r while x <= r (rising), else (x - 1) / (r - 1) (falling),
///   lr = base_lr + (max_lr - base_lr) · scale · s, s = 1 (triangular),
///   1 / 2^(cycle - 1) (triangular2), gamma^t (exp_range);
///   with cycle_momentum, momentum = max_momentum - (max_momentum - base_momentum) · scale · s.
/// lr_at(0) is base_lr (PyTorch's CyclicLR overrides the optimizer's lr with it), and
/// momentum_at(0) max_momentum. PyTorch 1.13 cycles only an optimizer with a `momentum`
/// (SGD, RMSprop; later versions β1 too); weft feeds the value as β1 to the Adam family,
/// as PyTorch 2 does. Errors: step_size_up < 1, step_size_down < 0.
class CyclicLR final : public LrSchedule {
 public:
  CyclicLR(double base_lr, double max_lr, CyclicOptions options = {})
      : base_lr_(base_lr), max_lr_(max_lr), options_(options) {}
  double lr_at(int64_t t) const override;
  std::optional<double> momentum_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  /// PyTorch's scale_factor · scale_fn after t steps.
  double height(int64_t t) const;

  int64_t step_size_down() const {
    return options_.step_size_down.value_or(options_.step_size_up);
  }

  double base_lr_;
  double max_lr_;
  CyclicOptions options_;
};

/// How WarmupLR warms up: PyTorch's LinearLR (from start_factor up to 1) or ConstantLR
/// (start_factor throughout).
enum class WarmupKind { linear, constant };

/// Composable warmup: `warmup_steps` steps of warmup towards peak = after.lr_at(0), then
/// the schedule `after`, started afresh:
///   t <  warmup_steps:  linear: peak · (f + (1 - f) · t / warmup_steps); constant: peak · f
///   t >= warmup_steps:  after.lr_at(t - warmup_steps)
/// with f = start_factor. This is PyTorch's SequentialLR([LinearLR(start_factor=f,
/// total_iters=warmup_steps) or ConstantLR(factor=f, total_iters=warmup_steps), after],
/// milestones=[warmup_steps]). PyTorch warms up to the optimizer's lr; weft to where
/// `after` starts, which is the same thing except for CyclicLR and OneCycleLR when the
/// optimizer's lr is not theirs (CyclicLR starts at its base_lr). f = 0 (linear warmup
/// from zero) is allowed; PyTorch's chainable LinearLR divides by zero there.
/// warmup_steps = 0 is `after` alone.
///
///   auto sched = std::make_shared<WarmupLR>(std::make_shared<StepLR>(0.1, 30), /*warmup_steps=*/5,
///                                           /*start_factor=*/0.1);
///
/// Errors: no `after`, warmup_steps < 0, f outside [0, 1] (PyTorch's messages), and
/// `after`'s own.
class WarmupLR final : public LrSchedule {
 public:
  WarmupLR(std::shared_ptr<const LrSchedule> after, int64_t warmup_steps,
           double start_factor = 1.0 / 3, WarmupKind kind = WarmupKind::linear)
      : after_(std::move(after)),
        warmup_steps_(warmup_steps),
        start_factor_(start_factor),
        kind_(kind) {}
  double lr_at(int64_t t) const override;
  /// `after`'s: its first value during the warmup (where OneCycleLR and CyclicLR start).
  std::optional<double> momentum_at(int64_t t) const override;
  Status validate() const override;
  std::string describe() const override;

 private:
  std::shared_ptr<const LrSchedule> after_;
  int64_t warmup_steps_;
  double start_factor_;
  WarmupKind kind_;
};

/// ReduceLROnPlateau's options, with PyTorch's names and defaults.
struct PlateauOptions {
  enum class Mode { min, max };
  enum class ThresholdMode { rel, abs };
  Mode mode = Mode::min;          ///< min: the metric should fall (a loss); max: rise.
  double factor = 0.1;            ///< new_lr = lr · factor.
  int64_t patience = 10;          ///< Bad epochs tolerated before reducing.
  double threshold = 1e-4;        ///< How much better counts as better.
  ThresholdMode threshold_mode = ThresholdMode::rel;
  int64_t cooldown = 0;           ///< Epochs to wait after a reduction.
  double min_lr = 0;              ///< Lower bound on the lr.
  double eps = 1e-8;              ///< Reductions smaller than this are skipped.
};

/// PyTorch's ReduceLROnPlateau: reduces the lr by `factor` once the metric has not
/// improved for more than `patience` epochs. Better means, for mode min, metric < best ·
/// (1 - threshold) (rel) or metric < best - threshold (abs); for max, metric > best ·
/// (1 + threshold) or metric > best + threshold. During `cooldown` epochs after a
/// reduction bad epochs are not counted. Errors: factor >= 1 ("Factor should be < 1.0.").
///
///   ReduceLROnPlateau plateau(/*lr=*/0.1, {.factor = 0.5, .patience = 2});
///   for (int epoch = 0; ...; ++epoch) { train_epoch(plateau.lr()); plateau.observe(val_loss); }
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(double lr, PlateauOptions options = {});
  Status validate() const;
  /// Records the metric of the epoch just finished (PyTorch's `step(metric)`) and
  /// returns the learning rate for the next one.
  double observe(double metric);
  /// The current learning rate.
  double lr() const { return lr_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t epochs_observed() const { return epochs_; }
  std::string describe() const;

 private:
  bool is_better(double a) const;

  double lr_;
  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t epochs_ = 0;
};

}  // namespace weft

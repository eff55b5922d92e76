#pragma once
// Optimizers as graph ops: the update of every parameter, appended to the training-step
// graph after the backward pass (DESIGN.md, decision 5). Parameters and optimizer state
// are `param`/`state` inputs written back by `assign`; the learning rate and the step
// number are runtime scalars, so a schedule (training/schedule.h) needs no recompile.
//
// The arithmetic is PyTorch 1.13's `torch.optim.*` single-tensor implementation
// (foreach=False), operation for operation, with PyTorch's names and defaults. For
// `adam(/*lr=*/1e-3)` and a parameter %w: f32[2,3] with gradient %gw the graph gains
//
//   %optimizer.w.exp_avg: f32[2,3] {state}        # Initializer::zeros()
//   %optimizer.w.exp_avg_sq: f32[2,3] {state}     # Initializer::zeros()
//   m  = exp_avg·β1 + gw·(1-β1)
//   v  = exp_avg_sq·β2 + gw·gw·(1-β2)
//   w' = w - (lr / (1-β1^step)) · m / (sqrt(v) / sqrt(1-β2^step) + eps)
//   assign(%w, w'), assign(%optimizer.w.exp_avg, m), assign(%optimizer.w.exp_avg_sq, v)
//
// Runtime scalars:
//  - `lr`: a float scalar (f32[] by convention), the learning rate of this step.
//  - `step`: i64[], the 1-based number of the step being taken (1 on the first step;
//    PyTorch's `state['step']` after its increment). i64 rather than f32 because a count
//    must stay exact: f32 stops counting at 2^24 steps. It drives Adam's bias
//    corrections, Adagrad's lr decay and SGD's first-step momentum buffer, so it is the
//    global count (restored with the state when resuming from a checkpoint), never reset
//    per epoch.
// Scalar hyper-parameter arithmetic (bias corrections, step sizes, the clipping
// coefficient) is done in f64 on scalars, as PyTorch does it in Python floats, and cast
// to the parameter's dtype once; tensor arithmetic is in the parameter's dtype (f32 or
// f64; f16/bf16 parameters are rejected: keep f32 master weights).
//
// Semantics pinned by autodiff/optimizer_test.cc against PyTorch 1.13 fixtures:
//  - SGD: g += wd·p; buf = g on the first step, else momentum·buf + (1-dampening)·g;
//    nesterov uses g + momentum·buf; p -= lr·(buf or g).
//  - Adam: L2 weight decay added to the gradient; AdamW: decoupled, p *= 1 - lr·wd
//    before the update. amsgrad keeps max_exp_avg_sq = max(max_exp_avg_sq, v) and
//    normalizes by it.
//  - RMSprop: square_avg = α·sq + (1-α)·g²; centered subtracts grad_avg²; with momentum
//    buf = momentum·buf + g/avg, p -= lr·buf; otherwise p -= lr·g/avg (avg includes eps).
//  - Adagrad: clr = lr / (1 + (step-1)·lr_decay); sum += g²; p -= clr·g/(sqrt(sum)+eps);
//    `sum` starts at initial_accumulator_value.
//  - RAdam: L2 weight decay; m, v as Adam; rho_inf = 2/(1-β2) - 1, rho_t = rho_inf -
//    2·step·β2^step/(1-β2^step). rho_t depends on the step alone, so both branches are
//    emitted and a select on `rho_t > 5` picks one: rectified, p -= (m/bc1)·lr·rect ·
//    sqrt(bc2)/(sqrt(v)+eps) with rect = sqrt((rho_t-4)(rho_t-2)rho_inf /
//    ((rho_inf-4)(rho_inf-2)rho_t)); otherwise p -= (m/bc1)·lr.
//  - NAdam: L2 weight decay; mu = β1·(1 - 0.5·0.96^(step·momentum_decay)), mu_next the same
//    at step+1; the per-parameter state mu_product (f32[], starts at 1, as PyTorch's
//    `torch.tensor(1.)`) *= mu; m, v as Adam; denom = sqrt(v/bc2) + eps;
//    p -= lr(1-mu)/(1-mu_product)·g/denom + lr·mu_next/(1-mu_product·mu·mu_next)·m/denom.
//    The second product counts mu twice: that is PyTorch 1.13's single-tensor code (its
//    foreach code uses mu_product·mu_next), kept for parity.
//  - maximize negates the gradient (after clipping); weft offers it for every kind (PyTorch
//    1.13's RAdam and NAdam have no such argument).
//  - max_grad_norm > 0 clips first, as torch.nn.utils.clip_grad_norm_ does: total_norm =
//    sqrt(Σ over all gradients of Σ g²), every gradient scaled by
//    min(max_grad_norm / (total_norm + 1e-6), 1). The norm is over every group's
//    gradients together, as clip_grad_norm_(model.parameters()) is.
//
// Scheduled momentum (`with_scheduled_momentum()`, for PyTorch's cycle_momentum in
// OneCycleLR and CyclicLR, training/schedule.h): the momentum of SGD and RMSprop, or β1 of
// Adam, AdamW and RAdam, is read from a runtime scalar input (`momentum`, a float scalar;
// training/step_inputs.h names it weft.momentum) instead of being compiled in, so a
// schedule sets it every step as it sets the lr. Everything that depends on it follows
// PyTorch, which reads the group's current value each step: SGD's buf·momentum (and
// nesterov's), RMSprop's buf·momentum, Adam's exp_avg·β1 + g·(1-β1) and its bias
// correction 1-β1^step. SGD and RMSprop then always keep a momentum buffer. A spec
// without it compiles exactly as before.
//
// Parameter groups (torch.optim's param_groups): each group has its own `lr` input and
// its own hyper-parameters (OptimizerSpec::Group: lr, weight_decay); the step-wide
// scalars that depend on them (Adam's step size, AdamW's decay, Adagrad's clr, NAdam's
// step sizes) are emitted once per group. Slot names do not depend on the groups, so a
// checkpoint loads whatever the grouping.
//
// Gradient accumulation (`accumulate_steps` = K > 1): `step` then counts micro-batches.
// Each parameter gains a slot `optimizer.<param>.grad_accumulator` (zeros); every step
// adds its gradient to it, and the K-th step of each window (step a multiple of K) takes
// the update with the mean of the K gradients — the gradient of the mean loss over the
// K micro-batches, what PyTorch computes when each micro-batch's loss is divided by K —
// then zeroes the accumulator. The optimizer's own step count is ceil(step / K), so
// bias corrections count updates. The other steps leave the parameters and slots as they
// were (every assign is `select(apply, new, old)`): one compiled step serves every micro-
// batch, and the runtime inputs stay `lr` and `step`.
//
//   %apply = eq(step, ceil(step / K)·K)
//   %acc'  = %optimizer.w.grad_accumulator + gw
//   assign(%optimizer.w.grad_accumulator, select(%apply, 0, %acc'))
//   %grad.w.all_reduce = all_reduce(%acc', %apply)   # data parallel only (see below)
//   ... the update above with gw := %acc' / K (or the reduced sum / K) ...
//   assign(%w, select(%apply, w', %w))

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/initializer.h"
#include "ir/status.h"

namespace weft {

/// What a parameter group may set differently from its optimizer (PyTorch's per-group
/// options); unset fields take the optimizer's. (OptimizerSpec::GroupOptions.)
struct ParamGroupOptions {
  std::optional<double> lr = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
};

/// An optimizer and its hyper-parameters, with PyTorch 1.13's names and defaults. Fields
/// that the kind does not use are ignored. Build one with the static constructors, whose
/// arguments follow the order of PyTorch's constructors:
///
///   auto opt = OptimizerSpec::adamw(/*lr=*/3e-4, /*betas=*/{0.9, 0.95}, /*eps=*/1e-8,
///                                   /*weight_decay=*/0.1).with_max_grad_norm(1.0);
struct OptimizerSpec {
  enum class Kind { SGD, Adam, AdamW, RMSprop, Adagrad, RAdam, NAdam };

  Kind kind = Kind::SGD;
  /// The base learning rate. It is not part of the graph (`lr` is a runtime input): it
  /// is what a training loop feeds, or what a schedule starts from.
  double lr = 1e-3;
  double momentum = 0;            ///< SGD, RMSprop.
  double dampening = 0;           ///< SGD.
  bool nesterov = false;          ///< SGD.
  double weight_decay = 0;        ///< All; decoupled for AdamW (default 1e-2 there).
  std::array<double, 2> betas = {0.9, 0.999};  ///< Adam, AdamW, RAdam, NAdam.
  /// Adam, AdamW, RAdam, NAdam, RMSprop (1e-8); Adagrad (1e-10).
  double eps = 1e-8;
  bool amsgrad = false;           ///< Adam, AdamW.
  double alpha = 0.99;            ///< RMSprop: smoothing constant.
  bool centered = false;          ///< RMSprop.
  double lr_decay = 0;            ///< Adagrad.
  double initial_accumulator_value = 0;  ///< Adagrad.
  double momentum_decay = 4e-3;   ///< NAdam: how fast mu approaches β1.
  bool maximize = false;          ///< All: ascend instead of descend.
  /// Clip the gradients to this global L2 norm before the update; 0 turns clipping off.
  double max_grad_norm = 0;
  /// Gradient accumulation: the update is taken every this many steps, with the mean of
  /// their gradients (see the header comment). 1: every step.
  int64_t accumulate_steps = 1;
  /// The momentum (SGD, RMSprop) or β1 (Adam, AdamW, RAdam) is a runtime input, for a
  /// schedule that cycles it (see the header comment); `momentum` / `betas[0]` is then
  /// only the value a training loop feeds before a schedule sets it.
  bool scheduled_momentum = false;

  using GroupOptions = ParamGroupOptions;
  /// A parameter group: the trainable parameters under a graph-tree path (a `label`
  /// path, as `Model::parameters_at` takes), with their own options. Parameters under no
  /// group form the default group, with the spec's own options.
  struct Group {
    std::string path;
    GroupOptions options;
  };
  std::vector<Group> groups;

  /// torch.optim.SGD. PyTorch has no default lr for SGD; neither does this.
  static OptimizerSpec sgd(double lr, double momentum = 0, double dampening = 0,
                           double weight_decay = 0, bool nesterov = false);
  static OptimizerSpec adam(double lr = 1e-3, std::array<double, 2> betas = {0.9, 0.999},
                            double eps = 1e-8, double weight_decay = 0, bool amsgrad = false);
  static OptimizerSpec adamw(double lr = 1e-3, std::array<double, 2> betas = {0.9, 0.999},
                             double eps = 1e-8, double weight_decay = 1e-2,
                             bool amsgrad = false);
  static OptimizerSpec rmsprop(double lr = 1e-2, double alpha = 0.99, double eps = 1e-8,
                               double weight_decay = 0, double momentum = 0,
                               bool centered = false);
  static OptimizerSpec adagrad(double lr = 1e-2, double lr_decay = 0, double weight_decay = 0,
                               double initial_accumulator_value = 0, double eps = 1e-10);
  static OptimizerSpec radam(double lr = 1e-3, std::array<double, 2> betas = {0.9, 0.999},
                             double eps = 1e-8, double weight_decay = 0);
  static OptimizerSpec nadam(double lr = 2e-3, std::array<double, 2> betas = {0.9, 0.999},
                             double eps = 1e-8, double weight_decay = 0,
                             double momentum_decay = 4e-3);

  OptimizerSpec& with_max_grad_norm(double norm) {
    max_grad_norm = norm;
    return *this;
  }
  OptimizerSpec& with_maximize(bool value = true) {
    maximize = value;
    return *this;
  }
  OptimizerSpec& with_accumulation(int64_t steps) {
    accumulate_steps = steps;
    return *this;
  }
  OptimizerSpec& with_scheduled_momentum(bool value = true) {
    scheduled_momentum = value;
    return *this;
  }
  /// The momentum a step takes before a schedule sets one: `momentum` for SGD and
  /// RMSprop, betas[0] for the Adam family.
  double first_momentum() const;
  /// Adds a parameter group: `adam(1e-3).with_group("encoder", {.lr = 1e-4})`.
  OptimizerSpec& with_group(std::string path, GroupOptions options = {}) {
    groups.push_back({std::move(path), options});
    return *this;
  }
  /// The spec that group `i`'s parameters are updated with: this one with the group's
  /// options applied and no groups of its own.
  OptimizerSpec group_spec(size_t i) const;

  /// PyTorch's constructor checks, with its messages ("Invalid epsilon value: -1.0",
  /// "Nesterov momentum requires a momentum and zero dampening", ...), plus
  /// "Invalid max_grad_norm value: ..." for a negative or non-finite clipping norm,
  /// "Invalid accumulate_steps value: 0" below 1, scheduled_momentum on Adagrad or NAdam,
  /// and each group's options checked the
  /// same way, prefixed "parameter group 'PATH': "; an empty or repeated group path is
  /// refused.
  Status validate() const;
  /// The kind and the hyper-parameters it uses, in PyTorch's order:
  /// `AdamW(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False)`,
  /// then `, maximize=True`, `, max_grad_norm=1.0`, `, accumulate_steps=4` and
  /// `, scheduled_momentum=True` and `, groups=[encoder(lr=0.0001), head(weight_decay=0.0)]`
  /// when set.
  std::string describe() const;
  /// The names of the state slots each parameter gets, in creation order (PyTorch's
  /// state keys): e.g. {"exp_avg", "exp_avg_sq"} for Adam, {"mu_product", "exp_avg",
  /// "exp_avg_sq"} for NAdam.
  std::vector<std::string> slot_names() const;
};

/// "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "RAdam", "NAdam".
const char* optimizer_kind_name(OptimizerSpec::Kind kind);

/// One piece of optimizer state: a `state` input of the graph.
struct OptimizerSlot {
  std::string name;  ///< "optimizer.<param name>.<slot>", e.g. "optimizer.fc1.w.exp_avg".
  /// The state input: typed as its parameter, except NAdam's mu_product (f32[]).
  ValueId value = kNoValue;
  /// Its value before the first step: zeros, Adagrad's initial accumulator, or 1 for
  /// NAdam's mu_product.
  Initializer init;
  /// The parameter the slot belongs to; kNoValue for step-wide state (LossScaler::state).
  ValueId param = kNoValue;
};

/// One parameter group of append_optimizer: its (param, grad) pairs, its learning-rate
/// input and the spec it is updated with (OptimizerSpec::group_spec).
struct OptimizerGroup {
  std::vector<std::pair<ValueId, ValueId>> params_and_grads;
  ValueId lr = kNoValue;
  OptimizerSpec spec;
  /// The momentum input (a float scalar) when spec.scheduled_momentum, else kNoValue.
  /// Groups may share one.
  ValueId momentum = kNoValue;
};

/// Dynamic loss scaling's part of an update (autodiff/loss_scale.h builds the rest): the
/// gradients given to append_optimizer are those of the loss times a scale. The caller
/// sets `inv_scale` and `skipped_steps`; append_optimizer sets `found_inf` and `update`.
///
///   %g         = accumulated gradient (or the gradient itself)
///   %found_inf = ne(Σ over every gradient of sum(sub(%g, %g)), 0)   # NaN iff some inf/NaN
///   ... the update with gw := %g · inv_scale ...
///   assign(%w, select(%found_inf, %w, w'))   # and every slot: a skipped update
///
/// The optimizer's step count is the updates taken, ceil(step / K) − skipped_steps, as
/// PyTorch's state['step'] does not count a step that GradScaler skipped.
struct ScaledUpdate {
  /// f32[]: 1/scale; each (accumulated) gradient is multiplied by it before clipping.
  ValueId inv_scale = kNoValue;
  /// i64[]: the updates skipped before this step.
  ValueId skipped_steps = kNoValue;
  /// Set by append_optimizer, bool[]: some (accumulated) gradient element, before
  /// unscaling, is an inf or a NaN; no parameter or slot changes.
  ValueId found_inf = kNoValue;
  /// Set by append_optimizer, bool[]: this step takes an update (the last micro-batch of
  /// an accumulation window); kNoValue when every step does.
  ValueId update = kNoValue;
};

/// Appends to `g`, after everything already there (the backward pass), the update of
/// every (param, grad) pair: creates the slot inputs (kind state, see OptimizerSlot::value),
/// reads the runtime scalars `lr` (float scalar) and `step` (i64[], 1-based), and emits
/// `assign(param, new value)` and `assign(slot, new value)` for each. Every node is typed;
/// a parameter's update is located at its input, the step-wide scalars nowhere. Returns
/// the slots it created, parameter by parameter. Errors (the graph is left unchanged): an
/// invalid spec (see `validate`), a `param` that is not a param input, a non-float or
/// f16/bf16 parameter, a gradient whose type differs from its parameter's, a parameter
/// listed twice, `lr`/`step`/`momentum` of the wrong type, a slot name already taken, a
/// `momentum` input given without spec.scheduled_momentum or missing with it.
StatusOr<std::vector<OptimizerSlot>> append_optimizer(
    Graph& g, const OptimizerSpec& spec,
    const std::vector<std::pair<ValueId, ValueId>>& params_and_grads, ValueId lr, ValueId step,
    ValueId momentum = kNoValue);

/// The same for several parameter groups, each with its own lr input and spec. The groups
/// must agree on the kind, max_grad_norm and accumulate_steps (an error names the first
/// group that does not); a parameter may be in one group only. Slots come group by group.
/// With `scaled` (dynamic loss scaling, see ScaledUpdate) the gradients are unscaled and
/// checked, and an update with an inf or NaN changes nothing; an error when its inputs
/// are not an f32[] scale and an i64[] count.
/// With `all_reduce_gradients` (data parallelism), each gradient is averaged over the
/// ranks before everything that reads it (unscaling, the inf check, clipping, the
/// update), as append_gradient_all_reduce does; when accumulating, the accumulated sum
/// is, and only on the window's last micro-batch: `all_reduce(%acc', %apply)`, the
/// identity with no collective call on the other steps (every rank has the same step).
StatusOr<std::vector<OptimizerSlot>> append_optimizer(Graph& g,
                                                      const std::vector<OptimizerGroup>& groups,
                                                      ValueId step, ScaledUpdate* scaled = nullptr,
                                                      bool all_reduce_gradients = false);

/// Data parallelism (DESIGN.md, decision 11): replaces every gradient by its mean over
/// the ranks of the data-parallel group, appending to `g`, for each (param, grad) pair,
///
///   %grad.w.all_reduce = all_reduce(%grad.w) {reduction="mean"}
///
/// located at the parameter's input, and returns the pairs with the averaged gradients
/// (feed them to append_optimizer). When each rank's loss is the mean over its equal
/// share of the global batch, the averaged gradient is the gradient of the mean loss
/// over the global batch. Errors: a gradient that is not a float tensor typed like its
/// parameter.
StatusOr<std::vector<std::pair<ValueId, ValueId>>> append_gradient_all_reduce(
    Graph& g, const std::vector<std::pair<ValueId, ValueId>>& params_and_grads);

}  // namespace weft

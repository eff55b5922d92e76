#pragma once
// Dynamic loss scaling inside the training step (issue #30): PyTorch's
// torch.cuda.amp.GradScaler as graph ops, so that every decision is taken on the device
// and a GPU step stays one captured CUDA graph. The scale is a state input; the loss is
// differentiated times the scale (the loss the step returns stays unscaled); the
// optimizer unscales the gradients, and a step whose gradients hold an inf or a NaN
// changes no parameter and no optimizer slot (autodiff/optimizer.h's ScaledUpdate).
// Then, as GradScaler.update (ATen's _amp_update_scale_):
//
//   %loss_scale: f32[] {state}                  # init_scale
//   %loss_scale_growth_tracker: i64[] {state}   # 0: clean updates since the last change
//   %skipped_steps: i64[] {state}               # 0: updates skipped so far
//   seed of the loss = %loss_scale              # d(loss·scale)/d loss
//   ... append_optimizer(..., {inv_scale = f32(1 / f64(%loss_scale)), %skipped_steps}) ...
//   successful = tracker + 1
//   grown      = f32(f64(scale) · growth_factor), kept only where finite
//   backed     = f32(f64(scale) · backoff_factor), kept only where > 0
//   assign(%loss_scale, found_inf ? backed
//                     : successful == growth_interval ? grown : scale)
//   assign(%loss_scale_growth_tracker, found_inf or successful == growth_interval ? 0 : successful)
//   assign(%skipped_steps, skipped_steps + (found_inf ? 1 : 0))
//
// With gradient accumulation every assign above happens on the window's last step only
// (the update), where the accumulated gradients are checked. The f32 scale and its f64
// arithmetic rounded to f32 are GradScaler's (its scale is an f32 tensor, its factors
// Python floats).
//
//   WEFT_ASSIGN_OR_RETURN(LossScaler scaler, LossScaler::add_to(g, options));
//   WEFT_ASSIGN_OR_RETURN(ValueId seed, scaler.seed(g, loss));
//   grads = append_gradients(g, loss, wrt, seed);
//   ScaledUpdate scaled = scaler.scaled_update(g);
//   slots = append_optimizer(g, groups, step, &scaled);
//   scaler.append_update(g, scaled);          // the scale's and the counts' assigns

#include <array>
#include <cstdint>
#include <vector>

#include "autodiff/optimizer.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

/// Dynamic loss scaling's options, with PyTorch's GradScaler names and defaults.
struct LossScaleOptions {
  /// Off: the step has no loss-scale state and differentiates the loss itself. Unset:
  /// on exactly when the step's precision is f16 (TrainOptions::precision), whose range
  /// small gradients underflow without it (as PyTorch pairs f16 autocast with GradScaler).
  std::optional<bool> enabled = std::nullopt;
  double init_scale = 65536;  ///< 2^16.
  /// The scale is multiplied by this after `growth_interval` consecutive clean updates.
  double growth_factor = 2;
  /// ... and by this after an update skipped for an inf or a NaN.
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;

  /// GradScaler's two checks, with its words ("loss scaling: the growth factor must be >
  /// 1.0, got 1.0", "... the backoff factor must be < 1.0 ..."), plus what it leaves
  /// unchecked but cannot work: an init_scale that is not a positive f32 number, a
  /// backoff_factor of 0 or less, a growth_interval below 1.
  Status validate() const;
  /// Whether scaling is on for a step computed in `precision`: `enabled`, or when unset,
  /// whether `precision` is f16.
  bool on(DType precision) const { return enabled.value_or(precision == DType::f16); }
};

/// The state names of a step with loss scaling (checkpoint keys, Trainer values).
inline constexpr const char* kLossScaleState = "loss_scale";
inline constexpr const char* kGrowthTrackerState = "loss_scale_growth_tracker";
inline constexpr const char* kSkippedStepsState = "skipped_steps";
/// All three, in that order.
inline constexpr std::array<const char*, 3> kLossScaleStates = {kLossScaleState, kGrowthTrackerState,
                                                                kSkippedStepsState};

/// Dynamic loss scaling in one step graph: its state inputs and the ops that use them.
class LossScaler {
 public:
  /// Adds the state inputs (f32[] loss_scale, i64[] loss_scale_growth_tracker, i64[]
  /// skipped_steps) to `g`. Errors: invalid options, or a state name already taken.
  static StatusOr<LossScaler> add_to(Graph& g, const LossScaleOptions& options);

  /// The state inputs with their first values (init_scale, 0, 0), as OptimizerSlot entries
  /// with no parameter (OptimizerSlot::param is kNoValue).
  const std::vector<OptimizerSlot>& state() const { return state_; }
  /// The cotangent to seed the backward pass of `loss` with: the scale, in the loss's
  /// dtype, so the gradients are those of loss · scale. An error for an f16 or bf16 loss
  /// (the scale, 2^16 by default and growing, overflows f16: compute the loss in f32, as
  /// autocast does).
  StatusOr<ValueId> seed(Graph& g, ValueId loss) const;
  /// The inputs of append_optimizer's ScaledUpdate: 1/scale (f32, from f64 as
  /// GradScaler's `scale.double().reciprocal().float()`) and the skipped count.
  ScaledUpdate scaled_update(Graph& g) const;
  /// After append_optimizer set `done.found_inf` (and `done.update`): the assigns of the
  /// scale, the growth tracker and the skipped count, GradScaler.update's rules.
  void append_update(Graph& g, const ScaledUpdate& done) const;

 private:
  LossScaleOptions options_;
  ValueId scale_ = kNoValue;
  ValueId tracker_ = kNoValue;
  ValueId skipped_ = kNoValue;
  std::vector<OptimizerSlot> state_;
};

}  // namespace weft

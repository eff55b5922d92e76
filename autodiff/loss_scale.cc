// LossScaler (autodiff/loss_scale.h): dynamic loss scaling's state and ops in a step graph.
#include "autodiff/loss_scale.h"

#include <cmath>
#include <string>

#include "autodiff/grad.h"
#include "ir/cast.h"
#include "ir/text_util.h"

namespace weft {

Status LossScaleOptions::validate() const {
  auto refuse = [](const std::string& what, double x) -> Status {
    return Error{"loss scaling: " + what + ", got " + python_float_repr(x)};
  };
  // GradScaler's two asserts, then what it leaves unchecked but cannot work: a scale that
  // is zero, negative or not finite, or a backoff that zeroes it.
  if (!(growth_factor > 1.0)) return refuse("the growth factor must be > 1.0", growth_factor);
  if (!(backoff_factor < 1.0)) return refuse("the backoff factor must be < 1.0", backoff_factor);
  if (!(backoff_factor > 0.0)) {
    return refuse("the backoff factor must be > 0 (0 would make the scale 0)", backoff_factor);
  }
  if (!(init_scale > 0.0) || !std::isfinite(static_cast<float>(init_scale))) {
    return refuse("init_scale must be a positive f32 number", init_scale);
  }
  if (growth_interval < 1) {
    return Error{"loss scaling: growth_interval must be at least 1, got " +
                 std::to_string(growth_interval)};
  }
  return Status();
}

namespace {

/// x · c in f64, rounded to f32: GradScaler's `current_scale * factor` into its f32 scale.
ValueId scaled_f32(GradBuilder& b, ValueId scale, double c) {
  return cast_to(b, b.mul(cast_to(b, scale, DType::f64), b.constant(c, DType::f64)), DType::f32);
}

/// Whether a scalar is finite: x - x is 0 for a finite x and NaN otherwise.
ValueId is_finite(GradBuilder& b, ValueId x) {
  return b.op(Op::Eq, {b.sub(x, x), b.constant(0, b.type(x).dtype)});
}

}  // namespace

StatusOr<LossScaler> LossScaler::add_to(Graph& g, const LossScaleOptions& options) {
  WEFT_RETURN_IF_ERROR(options.validate());
  for (const char* name : kLossScaleStates) {
    if (g.find_value(name)) {
      return Error{std::string("loss scaling: the state name %") + name +
                   " is already taken (rename the model's value)"};
    }
  }
  LossScaler s;
  s.options_ = options;
  auto add = [&](const char* name, DType dtype, double first) {
    OptimizerSlot slot;
    slot.name = name;
    slot.value = g.add_input(name, Type{dtype, Shape{}}, InputKind::state);
    slot.init = Initializer::constant(first);
    s.state_.push_back(slot);
    return slot.value;
  };
  s.scale_ = add(kLossScaleState, DType::f32, options.init_scale);
  s.tracker_ = add(kGrowthTrackerState, DType::i64, 0);
  s.skipped_ = add(kSkippedStepsState, DType::i64, 0);
  return s;
}

StatusOr<ValueId> LossScaler::seed(Graph& g, ValueId loss) const {
  GradBuilder b(g, Location{});
  const DType dtype = b.type(loss).dtype;
  if (dtype != DType::f32 && dtype != DType::f64) {
    return Error{"loss scaling: the loss is " + b.type(loss).to_string() +
                 "; scale an f32 loss (autocast keeps losses in f32): the scale, " +
                 python_float_repr(options_.init_scale) +
                 " at first, grows past f16's largest number, 65504"};
  }
  return cast_to(b, scale_, dtype);
}

ScaledUpdate LossScaler::scaled_update(Graph& g) const {
  GradBuilder b(g, Location{});
  ScaledUpdate scaled;
  ValueId inverse = b.div(b.constant(1, DType::f64), cast_to(b, scale_, DType::f64));
  scaled.inv_scale = cast_to(b, inverse, DType::f32);
  scaled.skipped_steps = skipped_;
  return scaled;
}

void LossScaler::append_update(Graph& g, const ScaledUpdate& done) const {
  GradBuilder b(g, Location{});
  const DType i64 = DType::i64;
  // No trainable parameter: nothing to check, every update is clean.
  const ValueId found_inf =
      done.found_inf != kNoValue ? done.found_inf : b.constant(0, DType::boolean);
  // GradScaler.update: back off on an inf or NaN; else count the clean update, and grow
  // at the interval unless the grown scale would overflow f32.
  ValueId successful = b.add(tracker_, b.constant(1, i64));
  ValueId at_interval =
      b.op(Op::Eq, {successful, b.constant(static_cast<double>(options_.growth_interval), i64)});
  ValueId grown = scaled_f32(b, scale_, options_.growth_factor);
  ValueId grow = b.op(Op::And, {at_interval, is_finite(b, grown)});
  ValueId clean_scale = b.op(Op::Select, {grow, grown, scale_});
  // Back off unless the smaller scale underflows f32 to 0 (about 170 skipped updates in a
  // row from 2^16): GradScaler lets it reach 0, a scale no update recovers from and that a
  // checkpoint's load refuses; this one stays at its smallest positive value.
  ValueId backed = scaled_f32(b, scale_, options_.backoff_factor);
  ValueId backed_off =
      b.op(Op::Select, {b.op(Op::Gt, {backed, b.constant(0, DType::f32)}), backed, scale_});
  ValueId scale = b.op(Op::Select, {found_inf, backed_off, clean_scale});
  ValueId reset = b.op(Op::Or, {found_inf, at_interval});
  ValueId tracker = b.op(Op::Select, {reset, b.constant(0, i64), successful});
  ValueId skipped =
      b.op(Op::Select, {found_inf, b.add(skipped_, b.constant(1, i64)), skipped_});
  // With gradient accumulation, only the window's last step (the update) changes them.
  auto assign = [&](ValueId target, ValueId value) {
    if (done.update != kNoValue) value = b.op(Op::Select, {done.update, value, target});
    b.op(Op::Assign, {target, value});
  };
  assign(scale_, scale);
  assign(tracker_, tracker);
  assign(skipped_, skipped);
}

}  // namespace weft

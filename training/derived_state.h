#pragma once
// Derived state: a state input of a training step whose value is a function of a
// parameter (its master copy), kept between steps so that the step does not recompute
// it. Today one kind: a low-precision copy of an f32 parameter, `weft.copy.NAME`, which a
// mixed-precision step (passes/weight_copies.h) reads instead of casting the parameter
// in every step, and writes right after the parameter's update as the cast of the
// updated value. The value is the parameter cast to the input's dtype, exactly what the
// step's cast wrote, so the step computes the same numbers as one that casts.
//
// A derived value is never a value of its own: the Trainer's values(), checkpoints and
// the AOT runtime's parameter table hold the masters alone, and whoever hands a step its
// param and state inputs computes each derived one from its master with state_value()
// whenever the master changed outside the step (the first step, set_value, a checkpoint
// load) — the one refresh routine of every runtime that feeds a step. Between those, the
// copy the step wrote is the next step's input: the cpu and cuda executors keep it in
// their input buffers, and DerivedState (below) keeps it for a runtime that feeds the
// step host tensors (the Trainer's reference backend), so no step re-casts a parameter.
//
//   state_value(values, "weft.copy.fc1.w", bf16[256,784])  // values["fc1.w"] cast to bf16

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/status.h"
#include "ir/shape.h"
#include "runtime/tensor.h"

namespace weft {

inline constexpr const char* kWeightCopyPrefix = "weft.copy.";

/// The state input holding a low-precision copy of parameter `param`.
std::string weight_copy_name(const std::string& param);
/// The parameter whose copy the input `name` holds, or nullopt when it holds none.
std::optional<std::string> weight_copy_source(const std::string& name);

/// The refresh routine: the value of a derived input of type `type` whose master is
/// `master` — the master converted to the input's dtype by runtime/tensor.h's to_dtype
/// (floats rounded to nearest even), exactly as the step's cast kernels do.
Tensor derived_value(const Tensor& master, const Type& type);

/// The value of the step input `name` of type `type` from `values` (parameters, state and
/// optimizer slots by name): the entry itself, or for a derived input derived_value of
/// its master. An error naming the input when `values` lacks it (or its master).
StatusOr<Tensor> state_value(const std::map<std::string, Tensor>& values, const std::string& name,
                             const Type& type);

/// The derived inputs of one step kept between steps beside their masters, for a runtime
/// that hands its step every input as a host tensor (the Trainer's reference backend; the
/// cpu and cuda executors keep theirs in their own input buffers, which the step writes).
/// A kept value is the one the last step wrote; a derived input with none kept is
/// refreshed from its master (state_value), and refreshes() counts those.
///
///   DerivedState derived;
///   inputs.push_back(*derived.take(values, "weft.copy.w", bf16[3,4]));  // refreshed once
///   ...run the step...
///   derived.keep("weft.copy.w", std::move(updated));  // the step's copy, for the next step
///   derived.forget();  // the masters changed outside the step (set_value, a load)
class DerivedState {
 public:
  /// The step input `name` of type `type`: for a derived input the kept value (moved out:
  /// the step writes the next one) or, with none kept, a refresh; for any other input its
  /// entry of `values` (state_value's, and its error).
  StatusOr<Tensor> take(const std::map<std::string, Tensor>& values, const std::string& name,
                        const Type& type);
  /// state_value, counted in refreshes() when `name` is a derived input.
  StatusOr<Tensor> refresh(const std::map<std::string, Tensor>& values, const std::string& name,
                           const Type& type);
  /// Keeps `value`, the step's new value of the derived input `name` (a name
  /// weight_copy_source knows; an internal error otherwise), for the next take().
  void keep(const std::string& name, Tensor value);
  /// Drops every kept value: their masters changed outside the step.
  void forget() { kept_.clear(); }
  /// Derived values computed from their masters so far.
  int64_t refreshes() const { return refreshes_; }

 private:
  std::map<std::string, Tensor> kept_;
  int64_t refreshes_ = 0;
};

}  // namespace weft

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
// load) — the one refresh routine of every runtime that feeds a step.
//
//   state_value(values, "weft.copy.fc1.w", bf16[256,784])  // values["fc1.w"] cast to bf16

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

}  // namespace weft

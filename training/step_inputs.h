#pragma once
// The names of a training step's own inputs, which the Trainer (frontend/training.cc)
// gives the step graph and every runtime that feeds a compiled step (training/aot's
// CompiledModel) finds by name. The dots keep them apart from user names.
//
//   weft.target       the loss's target, after the network's inputs in the batch
//   weft.lr           the learning rate of the default parameter group (f32[])
//   weft.lr.PATH      the learning rate of the parameter group at label path PATH
//                     (OptimizerSpec::with_group)
//   weft.step         the 1-based step number (i64[])
//   weft.momentum     the momentum (SGD, RMSprop) or β1 (Adam, AdamW, RAdam) of every
//                     group, f32[], only in a step whose optimizer schedules it
//                     (OptimizerSpec::with_scheduled_momentum: OneCycleLR's and
//                     CyclicLR's cycle_momentum, training/schedule.h)

#include <optional>
#include <string>

namespace weft {

inline constexpr const char* kTargetInput = "weft.target";
inline constexpr const char* kLrInput = "weft.lr";
inline constexpr const char* kStepInput = "weft.step";
inline constexpr const char* kMomentumInput = "weft.momentum";

/// The lr input of the parameter group at `group_path` ("": the default group).
inline std::string lr_input_name(const std::string& group_path) {
  return group_path.empty() ? kLrInput : std::string(kLrInput) + "." + group_path;
}

/// The group whose lr the input `name` is ("" for the default group), or nullopt.
inline std::optional<std::string> lr_input_group(const std::string& name) {
  const std::string lr = kLrInput;
  if (name == lr) return std::string();
  if (name.size() > lr.size() + 1 && name.compare(0, lr.size() + 1, lr + ".") == 0) {
    return name.substr(lr.size() + 1);
  }
  return std::nullopt;
}

}  // namespace weft

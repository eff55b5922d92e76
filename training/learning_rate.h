#pragma once
// The learning rate a step is given, checked one way for every model that trains: the JIT
// Trainer (frontend/training.h) and an AOT CompiledModel (training/aot/compiled_model.h).
// Their set_lr(double) returns nothing, so the step that would use the rate refuses it.
//
//   check_learning_rate(1e-3)            // ok
//   check_learning_rate(NAN, "head")     // "set_lr('head', nan): the learning rate must be finite ..."
#include <string>

#include "ir/status.h"

namespace weft {

/// Ok for a finite `lr`; otherwise an error naming the call (with the parameter group's
/// path when `group` is not empty): a rate that is not a number, or infinite, turns every
/// weight NaN in one step.
Status check_learning_rate(double lr, const std::string& group = "");

}  // namespace weft

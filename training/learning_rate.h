#pragma once
// The learning rate a step is given, checked one way wherever a rate is set after an
// optimizer is built: the JIT Trainer's and an AOT CompiledModel's set_lr (frontend/
// training.h, training/aot/compiled_model.h), the training driver's and the examples'
// --lr, the AOT generator's --lr and group lr, and the schedules' rates
// (training/schedule.h), and the rates of the OptimizerSpec a Trainer is compiled with.
// Their set_lr(double) returns nothing, so the step that would use the rate refuses it.
// (OptimizerSpec::validate checks a spec's lr first, with PyTorch's constructor message,
// "Invalid learning rate: -0.1"; it lets inf through, as PyTorch does.)
//
//   check_learning_rate(1e-3, "--lr=1e-3")                   // ok; 0 is ok too
//   check_set_lr(-0.1, "head")
//   // "set_lr('head', -0.1): the learning rate must be >= 0 (a negative one makes the
//   //  optimizer climb the loss; 0 leaves the weights as they are)"
#include <string>

#include "ir/status.h"

namespace weft {

/// Ok for a finite `lr` >= 0. Otherwise an error that starts with `source`, where the
/// rate came from, naming its value ("set_lr(nan)", "--lr=-1", "StepLR's base_lr=-0.1"):
/// a rate that is not a number, or infinite, turns every weight NaN in one step; a
/// negative one ascends the loss (PyTorch refuses it too).
Status check_learning_rate(double lr, const std::string& source);

/// check_learning_rate for a rate given through set_lr, its source "set_lr(-0.1)", or
/// "set_lr('head', -0.1)" for the parameter group at path `group`. A good rate costs two
/// comparisons (the source is written only for an error): the steps call it every time.
Status check_set_lr(double lr, const std::string& group = "");

}  // namespace weft

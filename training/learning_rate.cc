#include "training/learning_rate.h"

#include <cmath>

#include "ir/text_util.h"

namespace weft {
namespace {

bool usable(double lr) { return std::isfinite(lr) && lr >= 0; }

}  // namespace

Status check_learning_rate(double lr, const std::string& source) {
  if (usable(lr)) return Status();
  if (!std::isfinite(lr)) {
    return Error{source + ": the learning rate must be finite (a step with it makes every weight NaN)"};
  }
  return Error{source + ": the learning rate must be >= 0 (a negative one makes the optimizer climb the "
                        "loss; 0 leaves the weights as they are)"};
}

Status check_set_lr(double lr, const std::string& group) {
  if (usable(lr)) return Status();
  const std::string named = group.empty() ? "" : "'" + group + "', ";
  return check_learning_rate(lr, "set_lr(" + named + python_float_repr(lr) + ")");
}

}  // namespace weft

#include "training/learning_rate.h"

#include <cmath>

#include "ir/text_util.h"

namespace weft {

Status check_learning_rate(double lr, const std::string& source) {
  if (!std::isfinite(lr)) {
    return Error{source + ": the learning rate must be finite (a step with it makes every weight NaN)"};
  }
  if (lr < 0) {
    return Error{source + ": the learning rate must be >= 0 (a negative one makes the optimizer climb the "
                          "loss; 0 leaves the weights as they are)"};
  }
  return Status();
}

std::string set_lr_source(double lr, const std::string& group) {
  return "set_lr(" + (group.empty() ? "" : "'" + group + "', ") + python_float_repr(lr) + ")";
}

}  // namespace weft

#include "training/learning_rate.h"

#include <cmath>

namespace weft {

Status check_learning_rate(double lr, const std::string& group) {
  if (std::isfinite(lr)) return Status();
  return Error{"set_lr(" + (group.empty() ? "" : "'" + group + "', ") + std::to_string(lr) +
               "): the learning rate must be finite (a step with it makes every weight NaN)"};
}

}  // namespace weft

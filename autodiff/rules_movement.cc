// Gradient rules of the movement ops.
#include "autodiff/rules.h"

namespace weft::grad_rules {

void add_movement(Table& t) { (void)t; }

}  // namespace weft::grad_rules

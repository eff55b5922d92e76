// Gradient rules of the nn ops.
#include "autodiff/rules.h"

namespace weft::grad_rules {

void add_nn(Table& t) { (void)t; }

}  // namespace weft::grad_rules

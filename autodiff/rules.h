#pragma once
// Internal: the gradient-rule table, filled by one function per op family
// (rules_elementwise.cc, rules_reduction.cc, rules_movement.cc, rules_nn.cc).

#include <array>

#include "autodiff/grad.h"

namespace weft::grad_rules {

using Table = std::array<GradEntry, kNumOps>;

void add_elementwise(Table& t);
void add_reduction(Table& t);
void add_movement(Table& t);
void add_nn(Table& t);  // contraction, pooling, composites, creation, state

}  // namespace weft::grad_rules

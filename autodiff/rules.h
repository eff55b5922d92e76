#pragma once
// Internal: the gradient-rule table, filled by one function per op family
// (rules_elementwise.cc, rules_reduction.cc, rules_movement.cc, rules_nn.cc,
// rules_composite.cc). Each op gets a rule or a `not_differentiable` reason; operands
// a rule gives no gradient (integer indices, boolean conditions) are noted beside its
// registration.

#include <array>

#include "autodiff/grad.h"

namespace weft::grad_rules {

using Table = std::array<GradEntry, kNumOps>;

void add_elementwise(Table& t);
void add_reduction(Table& t);
void add_movement(Table& t);
void add_nn(Table& t);  // contraction, pooling, creation, state
void add_composite(Table& t);

}  // namespace weft::grad_rules

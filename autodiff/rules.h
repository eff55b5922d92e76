#pragma once
// Internal: the gradient-rule table, filled by one function per op family
// (rules_elementwise.cc, rules_reduction.cc, rules_movement.cc, rules_nn.cc,
// rules_composite.cc). Each op gets a rule or a `not_differentiable` reason; operands
// a rule gives no gradient (integer indices, boolean conditions) are noted beside its
// registration.

#include <array>
#include <vector>

#include "autodiff/grad.h"

namespace weft::grad_rules {

using Table = std::array<GradEntry, kNumOps>;

void add_elementwise(Table& t);
void add_reduction(Table& t);
void add_movement(Table& t);
void add_nn(Table& t);  // contraction, pooling, creation, state
void add_composite(Table& t);

/// A scalar constant of `like`'s dtype.
inline ValueId c(GradBuilder& b, double v, ValueId like) { return b.constant(v, b.type(like).dtype); }

/// The gradient of node `node` of `g`, a `scan` (autodiff/scan_grad.cc): `cotangents`
/// holds one per result (kNoValue: zero), `needs` says which operands want theirs.
/// Appends a reverse scan over the body's gradient and returns one gradient per operand
/// (kNoValue where not needed). Rewrites the node in place so that it also stacks what
/// the reverse scan reads (its body gains outputs, the node results).
StatusOr<std::vector<ValueId>> scan_gradients(Graph& g, int node,
                                              const std::vector<ValueId>& cotangents,
                                              const std::vector<bool>& needs);

}  // namespace weft::grad_rules

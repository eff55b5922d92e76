#pragma once
// canonicalize: algebraic identities that never change a result, bit for bit, for every
// input (NaN, ±inf and -0.0 included) under the reference interpreter's semantics
// (runtime/reference/interpreter.h). A node that computes its operand unchanged is
// replaced by that operand; two stacked movement ops of one kind become one.
//
//   graph @f(%x: f32[2,3]) {
//     %one = full() {shape=[], value=1.0}
//     %a = mul(%x, %one)                          <- x·1 = x
//     %t = transpose(%a) {perm=[1,0]}
//     %u = transpose(%t) {perm=[1,0]}             <- the identity permutation
//     %n = neg(%u)
//     %m = neg(%n)                                <- -(-x) = x
//     return %m
//   }
// becomes
//   graph @f(%x: f32[2,3]) {
//     %one = full() {shape=[], value=1.0}
//     %t = transpose(%x) {perm=[1,0]}
//     %n = neg(%x)
//     return %x
//   }
// (the dead producers left behind are dce's to remove).
//
// The rewrites, each only when the replacement has exactly the node's type:
//   mul(x, 1) mul(1, x) div(x, 1)       x, where 1 is a `full` whose value stores as 1
//   add(x, -0.0) add(-0.0, x) sub(x, 0) x (floats: only -0.0 is an additive identity,
//                                       since -0.0 + +0.0 = +0.0; integers: any zero)
//   neg(neg(x)) not(not(x))             x (integer neg wraps, so this holds for MIN too)
//   transpose(transpose(x, p), q)       transpose(x, p∘q); an identity perm is removed
//   reshape(reshape(x))                 reshape(x) with the outer shape
//   broadcast_to(broadcast_to(x))       broadcast_to(x) with the outer shape
//   reshape broadcast_to cast slice     x, when the result has x's type (a slice: every
//     pad concat                        axis longer than 1 has step 1); pad: all-zero
//                                       low and high; concat: one operand
//   max min {axes=[]}                   x; sum {axes=[]} only for integers: the
//                                       reference sums floats from +0.0, so -0.0
//                                       becomes +0.0 (mean is float-only: never)
//   select(c, a, b), c a `full`         a or b
//   binary(broadcast_to(x), y),         binary(x, y), select(..x..), when the op's own
//     select(.., broadcast_to(x), ..)   broadcasting gives the same result shape
//   slice(concat(a, b, c, ..))          b, or concat(b, c), when the slice reads whole
//                                       operands side by side (step 1, every other axis
//                                       whole)
// Not done because they are not exact: x + 0.0 (-0.0 + 0.0 = +0.0), x·0 (NaN, inf),
// x - x (NaN), maximum(x, x) (the reference returns the canonical NaN), and ordering the
// operands of commutative ops (x86 returns the first operand's NaN payload).
//
// Requires: every value typed (run infer-types first).
// Guarantees: results are bitwise unchanged; every rewritten node keeps its name, type
// and location; types stay valid. Producers that become dead are left for dce.

#include "passes/pass.h"

namespace weft {

class CanonicalizePass : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

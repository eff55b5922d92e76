#pragma once
// fold-constants: evaluates nodes whose operands are all uniform constants (`full`
// nodes, including ones this pass produced) when the result is uniform too, replacing
// the node by a `full` of its result type. weft has no general constant op, so only
// uniform fills are folded; the representation is one attribute whatever the size, so
// there is no size limit.
//
//   graph @f(%x: f32[4]) {
//     %two = full() {shape=[], value=2.0}
//     %three = full() {shape=[4], value=3.0}
//     %s = add(%two, %three)
//     %y = mul(%x, %s)
//     return %y
//   }
// becomes
//   graph @f(%x: f32[4]) {
//     %two = full() {shape=[], value=2.0}
//     %three = full() {shape=[4], value=3.0}
//     %s = full() {shape=[4], value=5.0}
//     %y = mul(%x, %s)
//     return %y
//   }
// (the dead operands left behind are dce's to remove).
//
// Each op is computed with its one definition, the scalar math of ir/scalar_math.h that
// the reference interpreter's kernels also apply, in the dtype's own C++ type (f32 in
// float, integers wrapping), so the folded value is bitwise the one the interpreter
// would produce (fold_constants_math_test checks every op and dtype against it):
//   value-preserving, any dtype   reshape transpose broadcast_to slice, concat of equal
//                                 fills, pad whose value is the fill's, max/min over a
//                                 non-empty set, select with a constant condition
//   computed, f32 f64 i32 i64 u8  every unary and binary elementwise op whose math class
//     bool                        is not Transcendental or Power (neg abs sign relu floor
//                                 sqrt rsqrt add sub mul div maximum minimum eq ne lt le
//                                 gt ge and or not), cast, sum, mean (sum and mean
//                                 accumulate in f64 / wrapping 64 bits, as the reference
//                                 does)
// Not folded: f16/bf16 arithmetic (the interpreter rounds through f32; not worth a
// second rounding routine here), transcendental ops and pow (libm results are not
// correctly rounded, so a backend may differ), results that are NaN (the text format
// prints one NaN and would lose its sign and payload) or that a double cannot hold
// exactly (i64 beyond 2^53), and anything that the interpreter reports as an error
// (integer division by zero, max over an empty axis): folding must not hide a runtime
// error.
//
// Requires: every value typed (run infer-types first).
// Guarantees: results are bitwise unchanged under the reference interpreter; a folded
// node keeps its name, type and location and becomes `full() {shape, value, dtype}`
// (dtype written only when it is not f32). Operands that become dead are left for dce.

#include "passes/pass.h"

namespace weft {

class FoldConstantsPass : public Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

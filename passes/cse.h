#pragma once
// cse: common-subexpression elimination. Merges nodes that compute the same thing:
// the same op, the same operands (after earlier merges) and the same attributes, where
// an attribute left out equals its schema default and an int equals the same float.
// The first node survives; uses of the others are redirected to it and they are removed.
// Operands compare in order: add(%x, %y) and add(%y, %x) stay apart (ordering the
// operands of commutative ops is canonicalization's job).
//
//   graph @f(%x: f32[4]) {
//     %a = exp(%x)
//     %b = exp(%x)                    <- same as %a
//     %c = add(%a, %b)
//     %d = softmax(%c) {axis=-1}
//     %e = softmax(%c)                <- same as %d (axis defaults to -1)
//     return %d, %e
//   }
// becomes
//   graph @f(%x: f32[4]) {
//     %a = exp(%x)
//     %c = add(%a, %a)
//     %d = softmax(%c) {axis=-1}
//     return %d, %d
//   }
//
// Random ops are merged too: weft's random ops are pure functions of their key operand
// (a counter-based generator), so two `random_uniform(%key) {shape=[4]}` nodes produce
// the same tensor; independent draws need different keys. Statements (`assign`, any op
// without a result) are never merged.
//
// Requires: a structurally valid graph. Types need not be known; where they are, the
// merged nodes have equal types by the shape rules.
// Guarantees: no two remaining nodes with results are equivalent in the sense above;
// surviving nodes keep their order, names, types and locations. Leaves no dead nodes
// behind (each removed node's operands are still used by the survivor).

#include "passes/pass.h"

namespace weft {

class CsePass : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

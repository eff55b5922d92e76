#pragma once
// dce: dead-code elimination. Removes every node whose result reaches neither a graph
// output nor a statement (a node without results, such as `assign`); statements and
// everything they use are kept.
//
//   graph @f(%x: f32[4], %s: f32[4] {state}) {
//     %a = exp(%x)
//     %b = neg(%x)           <- used only by %c, which nothing uses: both removed
//     %c = tanh(%b)
//     %d = add(%s, %x)
//     assign(%s, %d)         <- a statement: kept, and so is %d
//     return %a
//   }
// becomes
//   graph @f(%x: f32[4], %s: f32[4] {state}) {
//     %a = exp(%x)
//     %d = add(%s, %x)
//     assign(%s, %d)
//     return %a
//   }
//
// Requires: a structurally valid graph. Types need not be known.
// Guarantees: every remaining node's result is used (directly or transitively) by an
// output or a statement; order, names, types and locations of kept nodes are unchanged.
// Graph inputs are never removed, even when unused (they are the graph's signature).

#include "passes/pass.h"

namespace weft {

class DcePass : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

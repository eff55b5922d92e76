#pragma once
// prune-scan-results: a loop (`scan`) stacks only the per-iteration outputs (ys) that are
// read, each once. A ys that nothing reads after the loop is dropped, with whatever in
// the body computed it alone; ys that are the same body value (a loop's gradient stacks
// one per-iteration value for several gradient terms: a weight's, a bias's, the xs')
// become one result, read by all their users. Every ys dropped is a [length, ...] buffer
// less and a copy less per iteration.
//
//   %h, %a, %b, %c = scan(%w, %h0, %xs) {carries=1, consts=1, length=50} ({
//     ^cell(%w1, %h1, %x1):
//       %n = tanh(add(matmul(%h1, %w1), %x1))
//       %d = mul(%n, %n)
//       return %n, %n, %n, %d
//   })
//   ... reads %h, %a and %b, never %c
// becomes
//   %h, %a = scan(%w, %h0, %xs) {carries=1, consts=1, length=50} ({
//     ^cell(%w1, %h1, %x1):
//       %n = tanh(add(matmul(%h1, %w1), %x1))
//       return %n, %n
//   })
//   ... reads %a where it read %b
//
// Bodies are pruned first (a nested loop's unread ys inside a body). Carries are never
// dropped (the next iteration reads them).
//
// Requires: a type-inferred graph. Guarantees: the same values for every output; loops
// keep their operands, carries and the order of the ys they keep.

#include "passes/pass.h"

namespace weft {

class PruneScanResultsPass : public Pass {
 public:
  std::string_view name() const override { return "prune-scan-results"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

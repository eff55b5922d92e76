#pragma once
// infer-types: gives every value its static type by running each node's shape rule
// (ir/shape_rules.h) in program order. The pass never names an op: it asks the op table.
//
//   graph @f(%x: f32[4,6], %w: f32[6,5]) {
//     %h = matmul(%x, %w)
//     %s = sum(%h) {axes=[1]}
//     return %s
//   }
// becomes
//   graph @f(%x: f32[4,6], %w: f32[6,5]) -> (f32[4]) {
//     %h = matmul(%x, %w) : f32[4,5]
//     %s = sum(%h) {axes=[1]} : f32[4]
//     return %s
//   }
//
// Requires: a structurally valid graph (ir/verifier.h; the pipeline checks it first).
// Guarantees: every graph input and node result has a type that follows its op's shape
// rule. Types that were already declared (`%h = matmul(...) : f32[4,5]` in text, or the
// `-> (...)` signature) must equal the inferred ones; a difference is a user error naming
// the value, both types and the location. Returns "changed" when some type was not
// known before.

#include "passes/pass.h"

namespace weft {

class InferTypesPass : public Pass {
 public:
  std::string_view name() const override { return "infer-types"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft

#pragma once
// weight-copies: a mixed-precision training step keeps a low-precision copy of each f32
// parameter as step state instead of casting the parameter in every step (#30). The
// autocast pass (passes/autocast.h) casts each parameter a contraction reads once per
// step; on the step graph (forward, backward and the optimizer's update) this pass
// replaces such a cast by a state input `weft.copy.NAME` (training/derived_state.h) and
// writes that input right after the update, as the cast of the updated parameter:
//
//   graph @step(%x: f32[8,4], %w: f32[3,4] {param}, ...) {
//     %1 = cast(%w) {dtype=bf16} : bf16[3,4]
//     %h = matmul(%0, %1) {transpose_b=true} : bf16[8,3]
//     ...
//     %w1 = sub(%w, %d) : f32[3,4]
//     assign(%w, %w1)
//   }
// becomes
//   graph @step(%x: f32[8,4], %w: f32[3,4] {param}, ..., %weft.copy.w: bf16[3,4] {state}) {
//     %h = matmul(%0, %weft.copy.w) {transpose_b=true} : bf16[8,3]
//     ...
//     %w1 = sub(%w, %d) : f32[3,4]
//     assign(%w, %w1)
//     %2 = cast(%w1) {dtype=bf16} : bf16[3,4]
//     assign(%weft.copy.w, %2)
//   }
//
// so the fuser can compute the copy in the update's own kernel, which reads the weight
// once. The copy is exactly the cast the next step would have made, so the step computes
// the same numbers bit for bit — provided whoever feeds the step computes the copy from
// the parameter whenever the parameter changes outside the step (the first step,
// set_value, a checkpoint load): training/derived_state.h's state_value, which the
// Trainer and the AOT runtime call; checkpoints never hold the copies.
//
// Which casts: a top-level cast to f16 or bf16 whose operand is a param input that the
// step assigns (a trainable parameter; a frozen one keeps its cast). Run after
// append_optimizer and before the default pipeline (frontend/training.cc).
//
// Requires: a type-inferred step graph whose assigns are top-level nodes. Guarantees:
// the same function of the inputs once each copy input holds its parameter's cast;
// nodes stay in topological order; reports no change when there is no such cast.

#include <string>
#include <utility>
#include <vector>

#include "passes/pass.h"

namespace weft {

class WeightCopiesPass : public Pass {
 public:
  std::string_view name() const override { return "weight-copies"; }
  StatusOr<bool> run(Graph& g) override;
  /// The copies the last run added: (copy input name, parameter name), in input order.
  const std::vector<std::pair<std::string, std::string>>& copies() const { return copies_; }

 private:
  std::vector<std::pair<std::string, std::string>> copies_;
};

}  // namespace weft

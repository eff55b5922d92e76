#pragma once
// schedule-memory: reorders the nodes into a topological order chosen to keep the peak of
// live intermediate bytes low. A greedy list scheduler repeatedly runs, among the nodes
// whose operands are all computed, the one that frees the most bytes net of what it
// allocates (ties: the earliest in the current order). The greedy order is kept only
// when its peak is strictly lower than the current order's, so the pass never makes the
// peak worse and reports a change only when the order changed.
//
// Data parallelism (DESIGN.md, decision 11): in both orders every `all_reduce` moves up
// to right after the node producing its operand, so a gradient's reduction joins its
// bucket, and the bucket starts (runtime/collective/bucket_plan.h), while the backward
// pass goes on rather than after it. Reverse mode produces the last layer's gradients
// first, so the first buckets close early. The all_reduce's operand dies and its result
// (as large) is born there, so this moves bytes between live ranges without adding any
// but the all_reduce's own operand-and-result instant. Before that, each all_reduce's
// operand (the gradient), after the nodes that only it reads, moves up to right after
// the latest producer of its operands: reverse mode emits a layer's input gradient (a
// GEMM) before its weight gradient, and the weight gradient, which closes the bucket,
// then no longer waits for it (%h1t, read by %dw2 alone, moves up with it):
//
//   %dh1 = matmul(%g2, %w2t)          %h1t = transpose(%h1)
//   %h1t = transpose(%h1)     →       %dw2 = matmul(%h1t, %g2)
//   %dw2 = matmul(%h1t, %g2)          %r2 = all_reduce(%dw2)      # starts here
//   %r2 = all_reduce(%dw2)            %dh1 = matmul(%g2, %w2t)    # overlaps it
//
//   graph @f(%x: f32[256]) {            peak 3 × 1 KiB: %a, %b, %c live together
//     %a = exp(%x) : f32[256]
//     %b = neg(%x) : f32[256]
//     %c = tanh(%x) : f32[256]
//     %ra = sum(%a) : f32[]
//     %rb = sum(%b) : f32[]
//     %rc = sum(%c) : f32[]
//     ...
// becomes
//   graph @f(%x: f32[256]) {            peak 1 KiB (+ scalars): each reduced at once
//     %a = exp(%x) : f32[256]
//     %ra = sum(%a) : f32[]
//     %b = neg(%x) : f32[256]
//     %rb = sum(%b) : f32[]
//     ...
//
// Liveness (the same as memory planning's, passes/memory_plan.h): a node's result is
// live from its node to its last use; graph outputs and values written by `assign` live
// to the end of the step (the runtime applies updates after the step, so every read in a
// step sees a param's or state's old value: moving an assign is free, and it only has to
// follow the node producing its value, which it uses). Graph inputs are caller-owned and
// not counted.
//
// Requires: a valid graph whose node result types are known (run after infer-types).
// Guarantees: the same nodes, values, names and outputs, in a valid topological order
// whose peak live bytes (`peak_live_bytes`) is no higher than that of the order before
// with its gradients and all_reduce nodes moved up (the same as before where there are
// no all_reduce nodes).

#include <cstdint>
#include <vector>

#include "passes/pass.h"

namespace weft {

class ScheduleMemoryPass : public Pass {
 public:
  std::string_view name() const override { return "schedule-memory"; }
  StatusOr<bool> run(Graph& g) override;
};

/// The most intermediate bytes live at once when the nodes run in the order `order`
/// (indices into g.nodes(), a topological order); the current order when `order` is
/// empty. Sizes are unaligned `Type::bytes()`. Errors: a node result of unknown type.
StatusOr<int64_t> peak_live_bytes(const Graph& g, const std::vector<int>& order = {});

/// Puts g's nodes in the order `order` (a permutation of their indices, a topological
/// order) and points every node result at its new index. schedule-memory and
/// merge-updates reorder through it.
void reorder_nodes(Graph& g, const std::vector<int>& order);

}  // namespace weft

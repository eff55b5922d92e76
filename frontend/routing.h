#pragma once
// Routing between sub-networks per sample: the modules behind FlowBuilder::gate and
// FlowBuilder::route ([Control flow]).
//
//   gate(router, {e0, e1, ...})    soft:  y = Σ_e softmax(router(x))[..., e] · e(x)
//   route(selector, {b0, b1, ...}) hard:  y = b_k(x) with k = argmax(selector(x)) per sample
//
// The router (selector) maps the stream to one score per expert (branch) on its last
// axis; its leading axes must be leading axes of every expert's output, whose shapes are
// all equal. The weights broadcast over the remaining axes: a router output [B, E] mixes
// experts giving [B, F] or [B, C, H, W] per sample; [B, T, E] over [B, T, F] mixes per
// token.
//
// Shapes are static, so every expert (branch) is computed for every sample. gate weighs
// them all, and every expert and the router get gradients. route keeps, for each sample,
// the output of the branch its selector scored highest (the first on a tie) through
// select: a branch a sample did not take is computed for it but contributes nothing, and
// gets a zero gradient from it. argmax has no gradient, so the selector is not trained by
// the loss through route (its parameters' gradients are zero); train it with a loss of
// its own (a tagged score with an auxiliary loss), or use gate, whose router is trained.
// (A branch's own backward can still turn the zero it receives into NaN where its
// forward overflowed for a sample it did not take, as exp's does of an infinity.)
//
// Against flodl: flodl's gate takes its weights from the router module as they are (its
// SoftmaxRouter normalizes), where weft's gate applies the softmax itself, so a weft
// router gives logits; flodl's switch reads one branch index on the host and sends the
// whole batch through that branch, where weft's route chooses per sample, on the device,
// with no host synchronization.
//
// Parameter names are those of a PyTorch module with `self.router` (or `self.selector`)
// and `self.experts` (`self.branches`) as an nn.ModuleList: at chain position 2,
// `2.router.weight`, `2.experts.3.0.weight`; a labelled flow among them keeps its label
// instead (`2.enc.0.weight`, addressable as `enc`).

#include <source_location>
#include <vector>

#include "frontend/module.h"

namespace weft {

/// The module of FlowBuilder::gate.
ModulePtr Gate(ModulePtr router, std::vector<ModulePtr> experts,
               std::source_location loc = std::source_location::current());

/// The module of FlowBuilder::route.
ModulePtr Route(ModulePtr selector, std::vector<ModulePtr> branches,
                std::source_location loc = std::source_location::current());

}  // namespace weft

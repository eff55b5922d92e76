#pragma once
// Gate: a soft mixture of experts, a module of its own until the builder's gate() lands.
//
//   y = Σ_e softmax(router(x))[..., e] · expert_e(x)
//
//   auto expert = [] { return *FlowBuilder::from(Linear(128, 128)).through(GELU())
//                                .through(LayerNorm(128)).build(); };
//   auto net = FlowBuilder::from(Linear(128, 128)).through(GELU())
//                  .through(Gate(Linear(128, 8), {expert(), expert(), ...}))   // 8 experts
//                  .through(Linear(128, 128));
//
// The router and the experts are sub-modules, emitted through the Emitter so their
// parameters get path names: inside a gate at chain position 2, `2.router.weight` and
// `2.experts.<e>.<...>` (`2.experts.3.0.weight` for expert 3's first Linear) — the
// names of a PyTorch module with `self.router` and `self.experts = nn.ModuleList(...)`.

#include <source_location>
#include <vector>

#include "frontend/module.h"

namespace weft::bench {

/// A gate over `experts`: `router` maps the input to one logit per expert (its last axis
/// has experts.size() features); each expert maps the input to the output's shape.
ModulePtr Gate(ModulePtr router, std::vector<ModulePtr> experts,
               std::source_location loc = std::source_location::current());

}  // namespace weft::bench

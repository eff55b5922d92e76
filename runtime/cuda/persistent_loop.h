#pragma once
// A loop bound as one persistent launch (issue #31; internal to runtime/cuda): under the
// opt-in switch WEFT_PERSISTENT_LOOPS=1 (runtime/ab_switch.h; off until a GPU measures
// it), bind.cc's bind_loop asks for it first and binds the per-trip LoopBound only when
// it is refused, showing why in that loop's describe() line.
//
//   WEFT_ASSIGN_OR_RETURN(PersistentLoop p, persistent_loop_bound(d, root, inv, in, results));
//   if (p.bound) return std::move(p.bound);   // else p.refusal says why not
//
// The bound loop owns the body's arena and inputs block, one device block holding the
// program's arrays (recurrent_plan.h's RecurrentProgram, copied once here) and the grid
// barrier (recurrent_kernel.h, zeroed once). Each run enqueues on the step's stream the
// copies before the first iteration, the one launch, and the copies after the last, so a
// captured step holds the whole loop.

#include <string>
#include <vector>

#include "runtime/cuda/device.h"

namespace weft::cuda {

/// A loop as one launch, or why not.
struct PersistentLoop {
  BoundPtr bound;       ///< Null when refused.
  std::string refusal;  ///< The plan's or the launch's reason (recurrent_plan.h, recurrent_kernel.h).
};

/// Loop invocation `inv` of `root` (its body root.bodies[inv.body]), its operands at `in`
/// and results at `results`, planned (plan_recurrent_loop) and its launch planned on
/// `d`'s device (plan_recurrent_launch). Errors: a failed allocation or copy.
StatusOr<PersistentLoop> persistent_loop_bound(Executor::Device& d, const Program& root, const Invocation& inv,
                                               const std::vector<const void*>& in, const std::vector<void*>& results);

}  // namespace weft::cuda

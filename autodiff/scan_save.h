#pragma once
// Internal: what a loop's gradient saves (step 4 of autodiff/scan_grad.cc). The reverse
// loop reads per iteration some values of the forward loop; this chooses which the
// forward loop saves (stacks, [length, ...] each) and which the reverse body recomputes
// from them.
//
//   loop body:  %p = matmul(%x, %w); %a = tanh(%p); %h' = add(%a, %h)
//   reverse body reads: %a (tanh's rule) — %p saved (a product), %a recomputed from it
//                       (elementwise); %x (%w's term), a slice of the loop's xs.
//
// Saved are the results of products, reductions and the like; elementwise and movement
// ops are recomputed from them (JAX's "dots saveable" policy): they cost less to redo,
// fused into the reverse body's kernels, than to stack and read back. Recomputing an
// elementwise value that reads an x (or a window of one: a slice, a reshape) keeps the
// stacked xs alive until the reverse loop has read them, beside the saved products it is
// computed from: an LSTM's pre-activations x_t·W_ihᵀ + b + h·W_hhᵀ keep both the [T,B,4H]
// stack of x·W_ihᵀ + b and the stacked h·W_hhᵀ, where saving the sum stacks [T,B,4H] once
// and lets x·W_ihᵀ + b die after the forward loop (issue #31). So the reads are also
// chosen with such values saved ("x readers saveable"), and kept when they stack fewer
// bytes per iteration: the saved values, the stacked carries, and the xs read (an x that
// is an input of the graph lives the whole step anyway and counts nothing). A GRU's sums
// read windows of its x too, but its r gate's gradient still reads the saved h·W_hhᵀ:
// saving them stacks as many bytes as the x they free, and the dots policy stays. With
// the loop's `remat`, only the carries are saved and everything else is recomputed.

#include <map>
#include <set>
#include <vector>

#include "autodiff/scan_body.h"
#include "ir/graph.h"

namespace weft::grad_rules {

/// What the reverse body reads of the forward loop: body inputs by role, the ys whose
/// cotangents it reads (body output indices), and the forward values the forward loop
/// saves for it. Everything else it recomputes.
struct Reads {
  std::set<int> consts, carries, xs, seeds;
  std::vector<ValueId> saved;
};

/// What the reverse body reads to compute `grads` (body input -> its gradient, values of
/// body.graph), under the policy above. `per_iteration[v]`: whether value v varies per
/// iteration (values depending on the consts alone are recomputed either way).
/// `x_made_in_step[i]`: whether x i's stack is made by a node of the step (it dies once
/// read) rather than being an input of the graph.
Reads choose_reads(const BodyGradient& body, const std::map<int, ValueId>& grads,
                   const std::vector<bool>& per_iteration, const std::vector<bool>& x_made_in_step, bool remat);

}  // namespace weft::grad_rules

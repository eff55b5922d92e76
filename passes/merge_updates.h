#pragma once
// merge-updates: the optimizer update of many parameters as ONE generated kernel over a
// flat range. After fusion a training step updates each parameter with its own
// multi-result kernel written in place into the param/state buffers (updates_in_place),
// e.g. for Adam
//
//   %w1, %m1, %v1 = fused(%gw, %lr, %m_w, %v_w, %w, ...)  : f32[16,12] x3  -> in1, in8, in9
//   %gb = ...
//   %b1, %n1, %u1 = fused(%gb, %lr, %m_b, %v_b, %b, ...)  : f32[16]    x3  -> in2, in10, in11
//   assign(%w, %w1) ...
//
// Both bodies compute the same thing element by element and differ only in length, so
// the pass puts them next to each other (the first member moves down to the last one,
// every assign to the end of the graph)
//
//   %gb = ...
//   %w1, %m1, %v1 = fused(%gw, %lr, %m_w, %v_w, %w, ...)  : f32[16,12] x3
//   %b1, %n1, %u1 = fused(%gb, %lr, %m_b, %v_b, %b, ...)  : f32[16]    x3
//   assign(%w, %w1) ...
//
// and records them as one MergedUpdate, which lowering (codegen/lower.h) runs as one
// invocation of one kernel over a 1-D range:
//
//   generated k8  in1 f32[208], in8 f32[208], in9 f32[208]
//                   <- arena+G f32[208], arena+L f32[], in8 f32[208], in9 f32[208], in1 f32[208]
//
// where the inputs block (runtime/program.h) holds %w then %b back to back (in1 +0,
// in2 +768 bytes), likewise %m_w, %m_b and %v_w, %v_b, and the memory plan places %gw,
// %gb as one contiguous group (passes/memory_plan.h: arena_groups) with the same element
// offsets. The graph itself stays a valid graph computing the same values: only its
// node order changes; the merge is what the pass reports (MergeUpdatesPass::result).
//
// Which kernels merge: elementwise `fused` nodes whose results are all written in place
// into an input (updates_in_place) and read by nothing but their assign (and graph
// outputs, read after the step), whose every operand either has the kernel's shape (a
// per-parameter operand: an input, or an intermediate in the arena) or is one element
// (a shared operand: lr, the bias corrections, the clipping coefficient), at most one of
// them in the arena (the gradient; a body that absorbed the sum of many partial
// gradients, as in an unrolled RNN, would keep them all alive until the merged kernel),
// and whose every result overwrites one of its per-parameter input operands, or an input of
// its shape that it does not read (a range of its own: a mixed-precision step's
// low-precision weight copy, passes/weight_copies.h). Kernels merge when
// their bodies, flattened to 1-D and put in canonical order (flatten_body: the fuser may
// build two bodies of one formula in different node orders), are the same (kernel_key), their shared operands are
// the same values, their per-parameter operands are in the same spaces and their results
// overwrite the same operand positions. A value or input can be in one flat range only;
// a kernel whose operands are already taken stays alone. A group of one is left as it
// was. Different structures (a frozen parameter, an f64 parameter among f32 ones, a
// body with weight decay next to one without) form separate groups.
//
// Layout: member k starts at element starts[k] of every range: the running sum of the
// members' element counts, each rounded up to E = 64 / (the smallest dtype size among
// the per-parameter operands), so each member starts 64-byte aligned in every range and
// the same member has the same element offset in ranges of different dtypes. A range
// longer than 16384 elements is padded to a multiple of 256 so the kernel's rows divide
// it (codegen/kernel_compiler.h) and the runtime splits it over its threads.
//
// Padding: the kernel computes the padding lanes too, on zeros: the inputs block is
// zeroed when allocated and set_input writes an input's own bytes only, and the padding
// of the arena ranges (which earlier intermediates of the step may have used) is zeroed
// just before the kernel runs (Invocation::clear: a memset of a few bytes per member).
// So the padding of param and state ranges holds what the formula makes of zeros (0 for
// every optimizer of autodiff/optimizer.h), never garbage or NaN, and nothing reads it
// but this kernel (Executor::input copies an input's own bytes).
//
// Schedule: the members move to the position of the last one, consecutive (and every
// assign to the end of the graph, where the runtime applies updates anyway). Moving an
// in-place update later is safe: every other reader of its parameter already ran
// before it (updates_in_place), and nothing but its assign reads its results. The
// per-parameter arena operands (the gradients) then live until the merged kernel runs.
//
// Requires: a scheduled graph after fusion (schedule-memory), the last pass before the
// memory plan. Guarantees: the same nodes and values, reordered as above (nothing
// changes when nothing merges); MergeUpdatesPass::result() holds the groups and the
// updates_in_place of the graph as it was before the reordering, for the memory plan.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/memory_plan.h"
#include "passes/pass.h"

namespace weft {

/// One flat range of a merged update: the per-parameter operand at one body input
/// position, or the input one body output overwrites without reading it (after the
/// operands' ranges), one value per member, back to back.
struct FlatRange {
  bool input = false;            ///< In the inputs block (params, state, data), else the arena.
  std::vector<ValueId> values;   ///< One per member, in range order.
  std::vector<int64_t> offsets;  ///< Bytes from the range's start, per member.
  int64_t bytes = 0;             ///< The whole range, padding included.
  DType dtype = DType::f32;
};

/// Update kernels that run as one invocation.
struct MergedUpdate {
  std::vector<int> nodes;       ///< Indices into g.nodes(), consecutive, in range order.
  Graph body;                   ///< The members' body over `length` elements.
  int64_t length = 0;           ///< Elements of every range, padding included.
  std::vector<int64_t> starts;  ///< Element offset of each member in every range.
  std::vector<FlatRange> ranges;
  /// The first member's operands in the body's canonical order (shared ones are what
  /// every member reads).
  std::vector<ValueId> operands;
  std::vector<int> operand_range;  ///< Per body input: its range, or -1 (shared operand).
  std::vector<int> result_range;   ///< Per body output: the range it overwrites.
};

/// The structural key two flattened bodies must share to merge: the code generator's
/// kernel cache key (codegen/kernel_compiler.h, kernel_key), so that merged members are
/// ones it would compile to one kernel.
using BodyKey = std::function<std::string(const Graph& body)>;

/// Finds the update kernels of `g` that can merge (see above), moves each group's
/// members together and returns the groups. `external` is updates_in_place(g);
/// `alignment` the memory plan's (64). Leaves `g` unchanged when nothing merges.
std::vector<MergedUpdate> merge_updates(Graph& g, const std::vector<bool>& external,
                                        const BodyKey& key, int64_t alignment = 64);

/// The arena ranges of `merged` as contiguous groups for the memory plan.
std::vector<ContiguousGroup> arena_groups(const std::vector<MergedUpdate>& merged);

/// By ValueId: the assigned values that can be computed straight into their target's
/// buffer. assign(%t, %v) qualifies when %v is assigned once, has %t's type, its producer
/// reads %t only element by element (an elementwise or fused elementwise node) if at all,
/// and every other reader of %t comes before that producer (the runtime applies
/// updates after the step; this keeps every read of %t seeing the old value).
std::vector<bool> updates_in_place(const Graph& g);

/// What merge-updates found, for the memory plan and lowering.
struct UpdatePlan {
  std::vector<bool> external;         ///< updates_in_place of the graph before merging.
  std::vector<MergedUpdate> merged;   ///< The groups, node indices after the reordering.
};

struct MergeUpdatesOptions {
  BodyKey key;                ///< Required (see BodyKey).
  int64_t alignment = 64;     ///< The memory plan's (PlanOptions::alignment).
};

class MergeUpdatesPass : public Pass {
 public:
  /// `result` (if given, it must outlive the pass) receives what each run finds.
  explicit MergeUpdatesPass(MergeUpdatesOptions options, UpdatePlan* result = nullptr);
  std::string_view name() const override { return "merge-updates"; }
  StatusOr<bool> run(Graph& g) override;
  /// What the last run found.
  const UpdatePlan& result() const { return *result_; }

 private:
  MergeUpdatesOptions options_;
  UpdatePlan own_;
  UpdatePlan* result_;
};

/// `body` with every value of the iteration space's shape made 1-D of `length` elements
/// and every one-element input made rank 0, its inputs and nodes in canonical order: the
/// order a depth-first walk from the outputs through each node's operands reaches them,
/// so two bodies that compute the same thing get the same key whatever order the fuser
/// built them in. `input_order` (if given) receives, per new input, the index of the
/// old one. nullopt when a value has another shape (a broadcast that flattening would
/// break) or a node computes nothing the outputs use.
std::optional<Graph> flatten_body(const Graph& body, int64_t length,
                                  std::vector<int>* input_order = nullptr);

}  // namespace weft

#pragma once
// Memory planning: an analysis (not a Pass) that gives every intermediate of one step a
// fixed byte offset in a single arena (DESIGN.md decision 6), over the graph's current
// node order (run schedule-memory first to lower the peak).
//
//   graph @f(%x: f32[16]) {        liveness (node index)   plan (alignment 64)
//     %a = neg(%x)                 %a: [0, 1]              %a @ 0
//     %b = exp(%a)                 %b: [1, 2]  in place    %b @ 0   (takes over %a)
//     %c = sum(%b) : f32[]         %c: [2, 3]              %c @ 64
//     return %c                    output: live to the end
//   }                              arena 128 bytes, naive 192, bound 128
//
// What is in the arena: every node result (an "intermediate"), graph outputs included;
// graph inputs are caller-owned and are not (offset -1). A result is live from its node
// to its last user; graph outputs and values written by `assign` are live to the end of
// the step (the runtime applies updates after the step), so they are never overwritten.
// Sizes are `Type::bytes()` rounded up to `alignment`; offsets are multiples of it.
//
// In place: an elementwise node (OpCategory::Elementwise, or a fused elementwise kernel)
// whose result has the same shape and byte size as one of its operands (or a reshape,
// whose result has the same byte size) writes over that operand's buffer when the operand
// is an intermediate that dies at this node (its last user, and neither an output nor
// assigned). Values sharing a buffer this way form one buffer whose lifetime is their
// union.
//
// Contiguous groups (PlanOptions::groups): values that must lie back to back, at given
// offsets from the group's start, e.g. the gradients of parameters whose update is one
// kernel over a flat range (passes/merge_updates.h). The buffers of a group's members
// (with whatever they share in place) become one block of the group's size, live from
// the first definition to the last use of any member, placed like any other buffer:
//
//   groups = {{%ga, %gb} at {0, 64}, 128 bytes}   %ga: f32[10] @ X, %gb: f32[16] @ X+64
//
// Stored concats (PlanOptions::stored_concats, passes/fold_concats.h): a concat whose
// operands their producers write straight into windows of its buffer. Its buffer is live
// from the first of those writers to the concat's last use. The operands that stored
// concats alone read are *parts* of the last of them and have no bytes of their own: each
// is that concat's buffer (its offset; the window's place inside it is the code
// generator's), and takes over no operand's buffer in place (its producer writes strided
// windows of the concat, not its own bytes); the earlier concats read no bytes of it
// (its producer writes their windows too). An operand read elsewhere too keeps its own
// buffer, its kernel writing both:
//
//   %a = fused(..) : f32[4,8]   %b = fused(..) : f32[4,8]   %c = concat(%a, %b) {axis=1}
//   stored_concats = {{%c, {%a, %b}, first_writer=0}}   %a, %b, %c: one f32[4,16] buffer
//
// Placement: buffers are placed one at a time, each at the best-fitting gap (the smallest
// one that holds it, else on top) among the already-placed buffers whose lifetimes
// overlap its own. Several orders are tried (by size, by lifetime length, by first use,
// by size × lifetime) and the smallest arena is kept.
//
// The lower bound is the most (aligned, in-place-merged) buffer bytes live at any node of
// the schedule: no placement of those buffers can use less, so efficiency() =
// bound / planned is at most 1.
//
//   StatusOr<MemoryPlan> plan = plan_memory(g);
//   std::cout << plan->report();
//   WEFT_CHECK(verify_plan(g, *plan).ok(), "overlap");

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

/// Values laid out back to back in the arena (see the top of this file).
struct ContiguousGroup {
  std::vector<ValueId> values;
  /// Each member's byte offset from the group's start: multiples of the alignment, in
  /// increasing order, each member ending (its aligned size) before the next begins.
  std::vector<int64_t> offsets;
  /// Bytes of the group's block: at least the end of the last member (a multiple of the
  /// alignment); the bytes past it belong to the block and to no value.
  int64_t bytes = 0;
};

/// A concat whose parts (its operands) are written straight into its buffer (see the top
/// of this file).
struct StoredConcat {
  ValueId result = kNoValue;
  /// The operands read by stored concats alone, this one last: no buffer of their own.
  std::vector<ValueId> parts;
  /// The first node writing a window of the concat's buffer (index into g.nodes()).
  int first_writer = -1;
};

struct PlanOptions {
  /// Offsets are multiples of this and sizes are rounded up to it (bytes, a power of two).
  int64_t alignment = 64;
  /// Let elementwise nodes take over a dying operand's buffer.
  bool in_place = true;
  /// By ValueId (may be shorter than the value count): node results that live outside
  /// the arena, as graph inputs do (the CPU lowering writes a parameter's new value
  /// straight into the parameter's own buffer).
  std::vector<bool> external = {};
  /// Values placed as contiguous blocks. Members are distinct node results in the arena
  /// (not external), each in at most one group, and no two share a buffer in place.
  std::vector<ContiguousGroup> groups = {};
  /// Concats whose operands are written into their buffer: node results in the arena,
  /// each part distinct, read last by its concat (and before it by stored concats only),
  /// in no contiguous group; the first writer at or before every part's producer and
  /// before the concat.
  std::vector<StoredConcat> stored_concats = {};
};

struct MemoryPlan {
  /// Byte offset in the arena per ValueId; -1 for values not in the arena (graph inputs,
  /// values of removed nodes).
  std::vector<int64_t> offset;
  /// Bytes of the arena: the end of the highest buffer.
  int64_t arena_bytes = 0;
  /// Every intermediate in its own (aligned) buffer, no reuse.
  int64_t naive_bytes = 0;
  /// The most buffer bytes live at any point of the schedule.
  int64_t lower_bound_bytes = 0;
  /// Nodes (indices into g.nodes()) whose result takes over an operand's buffer.
  std::vector<int> in_place_nodes;
  /// The placement order that won: "size", "lifetime", "first-use" or "area".
  std::string strategy;
  int64_t alignment = 64;
  int num_intermediates = 0;
  std::vector<bool> external;  ///< PlanOptions::external, for verify_plan.
  std::vector<ContiguousGroup> groups;  ///< PlanOptions::groups, for verify_plan.
  /// PlanOptions::stored_concats, for verify_plan and build_program.
  std::vector<StoredConcat> stored_concats;

  /// lower_bound_bytes / arena_bytes; 1 for an empty arena.
  double efficiency() const;
  /// A few lines: naive, planned, bound, efficiency, strategy and in-place nodes.
  std::string report() const;
};

/// Each value's lifetime over `g`'s current node order, as plan_memory counts it, by
/// ValueId: `def` its producer's index, `last` its last reader's, or `g.nodes().size()`
/// for graph outputs and values written by assign (live to the end of the step); both -1
/// for values not in the arena (graph inputs, `external` results, removed nodes' values).
struct ValueLifetimes {
  std::vector<int> def, last;
};
ValueLifetimes value_lifetimes(const Graph& g, const std::vector<bool>& external = {});

/// Whether `node`'s result may take over the buffer of an operand that dies at it:
/// elementwise ops and fused elementwise kernels (each element is read before it is
/// written, at the same index), row kernels (fused kind "row": their earlier passes over
/// a row only read, the last one writes each element after reading it), and reshape (the same bytes in the same order, so the
/// runtime makes it a view and runs nothing).
bool may_take_over_operand(const Node& node);

/// Plans the arena for `g` in its current node order. Errors: a node result whose type
/// is unknown (run infer-types first), an alignment that is not a positive power of two,
/// a contiguous group that breaks the rules of ContiguousGroup or PlanOptions::groups.
StatusOr<MemoryPlan> plan_memory(const Graph& g, const PlanOptions& options = {});

/// Checks `plan` against `g` independently of how it was made: every intermediate has an
/// aligned offset inside the arena, other values have -1, and no two buffers whose values
/// are live at the same node overlap in bytes, except a listed in-place node's result and
/// the dying operand it takes over (same offset), and every contiguous group's members
/// lie at their offsets from the first one's, and a stored concat's parts at its offset
/// (the parts and the concat may share bytes; each is checked with the concat's size, the
/// concat from its first writer on).
/// The first violation is the error.
Status verify_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace weft

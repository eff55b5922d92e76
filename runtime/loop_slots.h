#pragma once
// Where a loop's body, bound once per slot (runtime/program.h, "Loops"), reads and writes
// outside its own buffers: the one rule every executor binds a loop by (runtime/cpu's
// LoopBound, runtime/cuda's), so that an iteration copies nothing it need not.
//
//   %h, %ys = scan(%w, %h0, %xs) {consts=1, carries=1, length=4}   // body: h' = tanh(..)
//                                                                   // returns h', h'
// bound per slot i, the body reads x_i in %xs's slot i (the xs), writes h' straight into
// %ys's slot i (the ys), and reads h from %ys's slot i-1 (%h0 itself in the first
// iteration: the carry is *chained* to the ys); per iteration nothing is copied, and once
// per step the last slot is copied into %h.
//
//   LoopSlots plan = plan_loop_slots(body, loop, in, results);  // once per loop
//   for (int64_t i = 0; i < slots; ++i) {
//     LoopSlotBinding s = bind_loop_slot(plan, body, loop, in, results, i);
//     ... bind the body with input k at s.inputs[k] (where not null), and each
//     ... invocation's buffers patched: apply_slot_patches(s.patches, index, b)
//   }
//
// The rule. A ys output is written into its slot when its buffer is
//  - an arena buffer whose last writer P (the last invocation writing any of its bytes)
//    writes exactly it, and that nothing after P reads or writes in part (the memory plan
//    keeps an output's bytes to itself from its writer on; a view shares them whole): P's
//    result and every later read of it are bound to the slot, and so are the writers of
//    exactly those bytes before P that nothing between reads or writes in part when P
//    reads none of them (kernels storing the windows of one concat, passes/
//    fold_concats.h); earlier users of those bytes (other values, dead by then) keep the
//    arena; or
//  - a carry's own input written in place by one invocation P (codegen's
//    carries_assigned): the carry is then *chained* to the ys — P's result and the reads
//    after it go to slot i, the reads up to P (the carry's old value) to the previous
//    iteration's slot, or the loop's initial carry operand in the first iteration;
// and the loop's stacked result overlaps none of its operands (it is written while they
// are read). A carry whose next value is a ys bound so, in the arena, is chained the same
// way when nothing writes its input (a ys of its old value is then copied from the
// previous slot). A carry whose old value is a ys (an LSTM's c_{t-1}, kept for the
// gradient) and whose next value is in the arena and no ys is *shifted*: it lives in that
// ys — iteration i reads it in slot i and writes its next value into slot i+1 (the last
// iteration into the loop's carry result), the initial carry copied into the first slot
// once per step. Chains and shifts need a loop without early exits (the next iteration
// reads a carry where the last one that ran left it, and a skipped slot holds zeros) or
// swapped carries. Everything else is copied as before: ys that are inputs (an x, a
// const), the second of two ys of one value, carries written in place in loops with
// exits.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/binding.h"
#include "runtime/program.h"

namespace weft {

/// How many bindings of its body a loop of `length` iterations, with `stacked` operands
/// and results laid out per slot (xs and ys) and a body of `invocations`, gets: one per
/// slot (each reads its xs and writes its ys in place) while that stays small, else one
/// (the loop copies each iteration's xs and ys), so binding memory never grows with the
/// trip count past a fixed bound (#28: a loop of 2^40 iterations used to die binding them).
int64_t loop_slot_bindings(int64_t length, size_t stacked, size_t invocations);

/// loop_slot_bindings for `loop` (a loop invocation) over `body`.
int64_t loop_slot_bindings(const Invocation& loop, const Program& body);

/// An operand (`result` false) or a result of invocation `invocation` of a body's code.
struct BufferSite {
  size_t invocation = 0;
  bool result = false;
  size_t position = 0;
};

/// Where a site or an output of a loop's body lies, bound for slot i.
struct SlotPlace {
  enum class Kind : uint8_t {
    own,       ///< The body's own buffer (or, for an input, where the slot reads it).
    ys,        ///< Slot i of loop result `index` (a ys).
    previous,  ///< Chained carry `index`'s old value: its ys's previous slot, or the
               ///< loop's initial carry operand in the first iteration.
    next,      ///< Shifted carry `index`'s next value: its ys's next slot, or the loop's
               ///< carry result in the last iteration.
  };
  Kind kind = Kind::own;
  int index = -1;
  bool operator==(const SlotPlace& o) const { return kind == o.kind && index == o.index; }
};

/// A loop's plan (the rule at the top of this file), made once per loop invocation.
struct LoopSlots {
  /// Per body output (carries first, as the loop's results): where it lies. A ys `o` at
  /// {ys, o} is written straight into its slot: the loop copies nothing for it.
  std::vector<SlotPlace> outputs;
  /// Per carry: the ys it is chained to or shifted into, or -1 (the carry lives in the
  /// body's input, copied there as before).
  std::vector<int> carry_ys;
  /// Per carry: shifted (its old value in slot i, its next in slot i+1) rather than
  /// chained (old in slot i-1, next in slot i).
  std::vector<bool> shifted;
  /// The sites of the body's code bound elsewhere, and where.
  std::vector<std::pair<BufferSite, SlotPlace>> sites;

  /// Whether carry `carry` lives in a ys's slots (the loop copies it per step at most).
  bool chained(int carry) const { return carry_ys[static_cast<size_t>(carry)] >= 0; }
};

/// The plan for `loop` (a loop invocation) over `body`, whose operands lie at `in` and
/// results at `results` (one address per operand and result, in the parent's memory).
/// A loop bound once (loop_slot_bindings) gets an empty plan: every entry -1.
LoopSlots plan_loop_slots(const Program& body, const Invocation& loop, const std::vector<const void*>& in,
                          const std::vector<void*>& results);

/// The plan that binds nothing in place: every ys and carry copied per iteration, as the
/// executors did before (for comparisons: cpu::ExecutorOptions::loop_slots).
LoopSlots no_loop_slots(const Program& body, const Invocation& loop);

/// The plan for `loop`, an invocation of `parent`, as if `parent`'s arena and inputs block
/// lay at nominal addresses far apart (for host-side checks of a device's Programs).
LoopSlots plan_loop_slots(const Program& parent, const Invocation& loop, const Program& body);

/// What a loop copies per iteration that runs (runtime/cpu's and runtime/cuda's loops):
/// each iteration's xs when bound once, each ys not written in its slot, and each next
/// carry not written over its input nor chained (twice each when carries are swapped).
struct LoopCopies {
  int64_t calls = 0;
  int64_t bytes = 0;
};
LoopCopies loop_copies_per_iteration(const LoopSlots& plan, const Program& body, const Invocation& loop);

/// A buffer of a body's code bound elsewhere for one slot.
struct SlotPatch {
  BufferSite site;
  void* address = nullptr;
};

/// Slot `slot`'s binding of a loop's body: the inputs it reads in the parent's buffers
/// (the consts, and the slot of each xs unless the loop is bound once; null: the body's
/// own input), its sites bound elsewhere, where each output then lies and where each
/// chained carry's old value (null: the body's own buffer).
struct LoopSlotBinding {
  std::vector<const void*> inputs;
  std::vector<SlotPatch> patches;
  std::vector<const void*> outputs;
  std::vector<const void*> carries;
};

/// Slot `slot` of `plan` (a loop bound once: slot 0, its consts only).
LoopSlotBinding bind_loop_slot(const LoopSlots& plan, const Program& body, const Invocation& loop,
                               const std::vector<const void*>& in, const std::vector<void*>& results, int64_t slot);

/// `b`, invocation `index`'s buffers, with the patches of that invocation applied.
void apply_slot_patches(const std::vector<SlotPatch>& patches, size_t index, InvocationBuffers& b);

/// The address `patches` bind `site` to, or `own` where none applies.
const void* patched_address(const std::vector<SlotPatch>& patches, const BufferSite& site, const void* own);

}  // namespace weft

#pragma once
// A loop invocation of a CUDA-lowered Program (codegen::cuda_lower_options()) as a
// persistent loop program (recurrent_program.h): the body's invocations become phases,
// every buffer they name a StepAddress, or an error saying why the loop cannot run so.
// Host-only plain data; the bound loop copies the arrays to the device (persistent_loop.h,
// under WEFT_PERSISTENT_LOOPS=1), the host oracle runs them (recurrent_reference.h).
//
//   %h, %hs = scan(%w, %h0, %xs) {consts=1, carries=1, length=5}
//     body: 0 contraction matmul(%h, %w) + epilogue k0 (add %x, tanh)  -> %h' (chained to %hs)
//   becomes, per iteration t (5 of them):
//     phase 0  matmul  C = h_t · w          (h_t: %h0 when t = 0, else slot t-1 of %hs)
//     phase 1  elementwise 4×8: r0 = load C; r1 = load x_t; r2 = add r0 r1; r3 = tanh r2;
//              store r3 -> slot t of %hs
//
//   LoopAddresses where{in, results, body_arena, body_inputs};   // as the loop is bound
//   StatusOr<RecurrentPlan> plan = plan_recurrent_loop(root, loop, where);
//   if (plan.ok()) { run plan->before, then plan->program.view(), then plan->after }
//   else           { plan.error().message() says why (the bound loop runs per trip) }
//
// What becomes a phase:
//  - a `generated` invocation of an elementwise kernel: its body Graph compiled to a
//    register program over a two-dimensional iteration space (recurrent_cell.h; the emitter's collapse:
//    size-1 dimensions dropped, adjacent ones merged where every operand and result is
//    contiguous or broadcast across both); a body input read through a leading `slice`
//    (codegen's input window, passes/fold_slices.h) is loaded from its source at the
//    window, a result stored through a trailing `pad` (a store window, passes/
//    fold_concats.h) is stored into its window and the padding left alone;
//  - a `contraction` invocation: a matmul phase, then its epilogue kernel as above (C is
//    the epilogue's operand 0, runtime/program.h);
//  - a `generated` invocation of a row kernel (a layer norm, its gradient: sums and means
//    over the last axis, kept): a row phase (recurrent_program.h; recurrent_cell.h's
//    row_space and cell_program(body, true));
//  - a `library` matmul of two 2-D f32, bf16 or f16 operands (transposes as flags);
//  - the per-iteration copies of runtime/loop_slots.h (a ys not written in its slot, a
//    next carry not written over its input nor chained, or one that is a const or an xs
//    of the loop: passes/rotate_carry_casts.h's reset carry): one copy phase each, the ys
//    before the carries, as the bound loop copies them. The copies before the first
//    iteration (the initial carries) and after the last (the last carries into the
//    loop's results) are `before` and `after`, run by the caller.
// Every address comes from bind_loop_slot for each slot, and is checked to be affine in
// the iteration (first and last may differ: a chained or shifted carry); anything else is
// refused with a message naming the invocation: reduction kernels, a row kernel's max or
// min (a softmax's) or window, other library ops (a `full` among them: the lowering
// leaves none in a body, hoist-loop-invariants taking every one out of the loop,
// decompose-composites' layer-norm eps included), nested loops, loops with `stop` or `active`, a loop bound once, swapped carries
// (a next carry that is another carry's input),
// values that are not f32, bf16 or f16 (bool only between the ops of a kernel),
// ops outside recurrent_op_supported, programs needing more than kMaxCellRegisters
// registers. Each buffer of the program has its value's element type
// (recurrent_program.h: loads convert, stores round to nearest even); a bf16 or f16 value
// read between a kernel's ops (autocast's casts in a bf16 body) is rounded in its
// register (recurrent_cell.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/cuda/recurrent_program.h"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/program.h"

namespace weft::cuda {

/// A copy the caller makes once per run of the loop: before its first iteration or after
/// its last (device to device on the GPU; memcpy on the host).
struct LoopCopy {
  void* to = nullptr;
  const void* from = nullptr;
  size_t bytes = 0;
};

/// A loop as a persistent program, with the copies around it.
struct RecurrentPlan {
  RecurrentProgram program;
  std::vector<LoopCopy> before;
  std::vector<LoopCopy> after;
  int body_invocations = 0;  ///< The body's invocations the phases stand for.
  int copy_phases = 0;       ///< The phases that copy (loop_copies_per_iteration's calls).
};

/// Where a loop invocation is bound: its operands and results in the parent's memory (as
/// the executor resolves them), and the body's own arena and inputs block (laid out as
/// the body's input_offsets say; a const input is read where the loop's operand lies).
struct LoopAddresses {
  std::vector<const void*> in;
  std::vector<void*> results;
  void* body_arena = nullptr;
  void* body_inputs = nullptr;
};

/// The persistent program of `loop` (a loop invocation of `root` or of one of its bodies;
/// kernels and bodies are `root`'s) bound at `where`, or an error saying why not (see the
/// top of this file). The messages start "persistent loop @BODY: ".
StatusOr<RecurrentPlan> plan_recurrent_loop(const Program& root, const Invocation& loop,
                                            const LoopAddresses& where);

/// A program buffer's element type for values of `dtype` (f32, bf16, f16), or none (f64,
/// integers, bool: refused).
std::optional<ElementType> element_type(DType dtype);

}  // namespace weft::cuda

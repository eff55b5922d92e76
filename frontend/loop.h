#pragma once
// The modules behind FlowBuilder::loop_body(body) and map(body).each() ([Control flow]):
// a body iterated as one `scan` node (ir/ops.def), never unrolled in the graph.
//
//   loop_body(GRUish).for_n(5)              h ← body(h), 5 times
//   loop_body(Refine).until_cond(Halt, 8)   per sample: h ← body(h) until Halt(h) > 0
//   loop_body(Refine).while_cond(Halt, 8)   per sample: while Halt(h) <= 0, h ← body(h)
//   map(Linear(16, 4)).each()               the body on every sample alone: [B, 16] → [B, 4]
//   map(Linear(16, 4)).over("parts")        the same over the earlier tag "parts"
//
// Every iteration shares the body's parameters (one set, named as a through() of the
// body at the loop's chain position: `2.weight`; the condition's are `2.cond.*`), and
// gradients flow through every iteration (BPTT). The body receives the stream and any
// uses({...}) values, which every iteration reads unchanged; it must return the
// stream's type.
//
// Halting is per sample, with no host synchronization: the loop runs on the whole batch
// until every sample has halted or for `max` iterations (a carried flag, scan's `stop`:
// the CPU stops there; the GPU runs `max` masked iterations so that its step stays one
// CUDA graph), and a sample that has halted keeps its state from then on (a
// `select` on a mask carried beside the state, never a multiply, so a halted sample's
// values and gradients never mix with what the body computes after it). `cond` gives
// one value per sample ([B] or [B, 1]); positive means halt (flodl's convention).
// until_cond runs the body at least once per sample; while_cond tests first, so a sample
// positive at the start keeps its input. Gradients reach exactly the iterations each
// sample ran; the halting decision itself gets none (a comparison). Unlike flodl, which
// halts the whole batch on sample 0's value read on the host each iteration, and JAX,
// whose while_loop has no reverse-mode gradient at all.
//
// What a halted sample's rows cost: the body still runs on them (the batch keeps its
// shape), and their results are discarded. A body that mixes rows (BatchNorm over the
// batch) sees the halted samples too; one that assigns state (BatchNorm's statistics in
// training, a forward reference) is an error. Random ops in a body draw the same
// numbers in every iteration.
//
// `recompute()` makes the gradient recompute each iteration's intermediates from the
// saved state instead of saving them all (autodiff/scan_grad.cc).

#include <cstdint>
#include <source_location>

#include "frontend/module.h"

namespace weft {

enum class LoopKind { for_n, while_cond, until_cond };

/// The module of loop_body(body).for_n(n) / .while_cond(cond, max) / .until_cond(cond, max).
ModulePtr Loop(LoopKind kind, ModulePtr body, ModulePtr cond, int64_t n, bool recompute,
               std::source_location loc);

/// The module of map(body).each(): the body on each sample alone (a batch of one).
ModulePtr MapEach(ModulePtr body, std::source_location loc);
/// The module of map(body).over(tag): as MapEach, over its second input (the tag's value,
/// from the uses(...) the builder adds) instead of the stream.
ModulePtr MapOver(ModulePtr body, std::source_location loc);
/// Whether `m` is a MapOver module (it cannot read a forward reference).
bool is_map_over(const Module& m);

}  // namespace weft

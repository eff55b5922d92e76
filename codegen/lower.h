#pragma once
// Lowering: a type-inferred graph (a whole training step, or any graph) becomes a
// Program (runtime/program.h). After the default passes it is one list of passes per
// target (add_lowering_passes, by LowerOptions: the CPU's defaults, or
// cuda_lower_options()), then the memory plan and the Program:
//
//   fold-transpose     matmul operands transposed in their last two dims -> GEMM flags
//   fold-batch-matmul  a batched product summed over its batch -> one GEMM, batch in K
//   rematerialize      an elementwise value read again across a kernel boundary ->
//                      recomputed before that reader from values live there (fused
//                      into its kernel), so it dies after its first readers
//   fuse-contraction-epilogue  a GEMM and the elementwise chain on its result (bias,
//                      activation, residual) -> one `fused` node of kind "contraction"
//   fuse-elementwise   elementwise chains -> `fused` kernels (what codegen supports)
//   fold-slices        a slice an elementwise kernel reads -> read in place by it (a
//                      window of its source: offset and strides in the kernel's loads)
//   fold-window-producers  (the GPU's) a kernel read only through disjoint windows ->
//                      computed inside its readers, window by window
//   (fold-concats)     (lowering only, with the memory plan) a concat whose operands
//                      are elementwise kernels' results -> no copy: each kernel
//                      stores its operand in its window of the concat's buffer
//                      (passes/fold_concats.h; a decision, the graph keeps the concat)
//   round-at-stores    a kernel's f16/bf16 intermediates -> computed in f32, rounded
//                      only at its stores (casts in its body)
//   schedule-memory    a topological order with a low peak of live bytes
//   merge-updates      (lowering only) the in-place update kernels of many parameters
//                      with one structure -> ONE kernel over a flat range: their
//                      params/states lie back to back in the inputs block, their
//                      gradients in one contiguous group of the arena
//                      (passes/merge_updates.h; updates_in_place: a parameter's new
//                      value is written straight into the parameter's buffer when
//                      nothing reads the old value afterwards)
//   plan_memory        one arena, fixed offsets, in-place reuse, several greedy orders
//                      (an analysis, not a pass: it leaves the graph as it is)
//   build_program      one invocation per node: `fused` -> a generated kernel (bodies
//                      with the same structure share one; of kind "contraction": the
//                      GEMM with its epilogue as a generated kernel applied to each
//                      block of rows the GEMM finishes), `assign` -> an update,
//                      a `scan` -> a loop invocation over its body, lowered the same way
//                      into Program::bodies (its kernels merged into the Program's),
//                      a reshape planned in place -> nothing (a view), any other op ->
//                      a library kernel call; a merged update -> one generated
//                      invocation over its flat ranges; the inputs block's layout
//
//   StatusOr<Lowering> l = lower_to_program(step_graph);
//   std::cout << l->program.to_string();
//
// Requires: a verified, type-inferred graph (run the default pipeline first).

#include <functional>

#include "ir/graph.h"
#include "ir/kernel_support.h"
#include "ir/status.h"
#include "passes/memory_plan.h"
#include "passes/merge_updates.h"
#include "passes/pipeline.h"
#include "runtime/program.h"

namespace weft::codegen {

/// A composite node that decompose-composites leaves for the target's library kernel.
using KeepComposite = std::function<bool(const Graph& g, const Node& node)>;

/// The keep_composite of the backend whose library `target` names: keeps a composite node
/// when the op table states a kernel of that backend's own for its op in its first
/// operand's dtype (ir/kernel_support.h, library_composite_gap), the lowering does not
/// prefer it as row kernels (composite_prefers_rows: softmax, log_softmax, layer_norm are
/// decomposed wherever decompose-composites can, kernel or not), and `takes` (the
/// backend's own check of the node's shapes, e.g. CUDA's plan_attention; none: every node)
/// accepts it. The CPU keeps the losses (which have no decomposition anyway) and writes
/// attention and attention_grad back as primitives; CUDA keeps attention and attention_grad
/// in f32 where its kernels take the shapes (plan_attention, plan_attention_grad).
KeepComposite keep_library_composites(CodeTarget target, KeepComposite takes = nullptr);

struct LowerOptions {
  bool fuse = true;
  /// With `fuse`: softmax, log_softmax and layer_norm over trailing axes become primitive
  /// ops that fuse with their neighbours into row kernels (decompose-composites) instead
  /// of library kernels; codegen/row_kernel_bench measures both.
  bool decompose_composites = true;
  /// Composites the target runs on a kernel of its own, which decompose-composites leaves:
  /// the op table's column for the target (keep_library_composites; the CPU's by default,
  /// cuda_lower_options: the CUDA column and its attention kernel's shapes); none if empty.
  KeepComposite keep_composite = keep_library_composites(CodeTarget::cpu);
  /// With `fuse`: row groups (FuseOptions::rows): reductions fused with their consumers.
  bool fuse_rows = true;
  /// With `fuse`: a reduction that fuses with nothing is a generated kernel too
  /// (FuseOptions::lone_reductions) rather than a library call.
  bool fuse_lone_reductions = false;
  /// With `fuse`: the same for reductions of f16 or bf16 operands only
  /// (FuseOptions::lone_half_reductions), on by default: the CPU library reduces 16-bit
  /// floats through a converted f32 copy of the operand, a generated kernel reads them
  /// once.
  bool fuse_lone_half_reductions = true;
  /// Split reductions with few results over inner and outer axes in two (passes/
  /// split_reductions.h): the GPU's, whose reduction kernels parallelize over results.
  bool split_reductions = false;
  /// With `fuse`: run fuse-contraction-epilogue before fuse-elementwise.
  bool fuse_epilogues = true;
  /// With `fuse`: after fuse-elementwise, slices read by elementwise kernels are read in
  /// place by them (fold-slices, passes/fold_slices.h): a recurrent cell's gates, column
  /// windows of one GEMM output, need no copies (issue #31).
  bool fold_slices = true;
  /// With `fold_slices`: a kernel read only through disjoint windows by elementwise
  /// kernels is computed inside its readers (fold-window-producers, passes/
  /// fold_window_producers.h): a recurrent cell's gate pre-activations, so an LSTM trip is
  /// the GEMM and the cell each way. The GPU's (cuda_lower_options: one launch fewer per
  /// trip each way); off on the CPU, where the LSTM's gradient trip then reads its saved
  /// GEMM result and x·W_ihᵀ through eight strided windows and lstm_seq's step was 3–5%
  /// slower (bench/RESULTS.md, #31). $WEFT_FOLD_WINDOW_PRODUCERS=0 turns it off for an A/B.
  bool fold_window_producers = false;
  /// A concat whose operands are elementwise kernels' results is no copy: the kernels
  /// store them straight into their windows of its buffer, which the memory plan makes
  /// live from the first of them (passes/fold_concats.h): a recurrent cell's gate
  /// gradients, side by side for the backward step's GEMM (#31); an operand read
  /// elsewhere too is stored in its own buffer and its windows.
  bool fold_concats = true;
  /// With `fuse`: a fused kernel whose body computes f16/bf16 intermediates computes them
  /// in f32 and rounds only its stores (round-at-stores, passes/round_at_stores.h), in the
  /// CPU and the CUDA lowering alike. Changes nothing in a graph without half values; off,
  /// every half op in a kernel rounds its result as the unfused graph does (for
  /// measurements and comparisons).
  bool round_half_at_stores = true;
  bool schedule = true;
  /// Write assigned values into their param/state buffers where that is safe (see
  /// updates_in_place, passes/merge_updates.h) instead of copying them there after the
  /// step.
  bool update_in_place = true;
  /// Run the in-place updates of parameters with one kernel structure as one kernel over
  /// flat ranges (the merge-updates pass, passes/merge_updates.h); needs update_in_place.
  bool merge_updates = true;
  /// Lowering a loop's body (build_program sets it, with merge_updates off, for each
  /// body it lowers): its assigns are its carries' next values, not optimizer updates,
  /// so a GEMM's epilogue may compute one (ContractionEpilogueOptions::
  /// assigned_in_epilogues): a GRU's backward dh + dgates·W_hh, one invocation fewer per
  /// trip on the CPU (on the GPU the epilogue is a kernel of its own).
  bool loop_body = false;
  PlanOptions plan;
  /// Unroll loops (passes/unroll_scans.h) instead of lowering each to a loop invocation
  /// over a body Program (runtime/program.h): for comparison (bench/loops, suite_bench's
  /// `@unrolled` cases).
  bool unroll_loops = false;
  /// Run a loop with an early exit (`stop`, `active`) as masked iterations
  /// (passes/mask_loop_exits.h) rather than stopping: the CUDA lowering's choice, so that
  /// no iteration count is decided while its captured step runs.
  bool mask_loop_exits = false;
  /// Which nodes go into generated kernels; default: KernelCompiler::supports.
  std::function<bool(const Graph& g, const Node& node)> fusible;
};

struct Lowering {
  Graph graph;       ///< After fusion and scheduling: what the program runs, node by node.
  MemoryPlan plan;   ///< The arena plan of `graph`.
  Program program;
};

/// A compiled target's graph passes after the default pipeline (the CPU's with the
/// default `options`, the GPU's with cuda_lower_options()): unroll-scans (with
/// `options.unroll_loops`) or mask-loop-exits (with `options.mask_loop_exits`),
/// decompose-composites (loop bodies too, so that hoisting sees the constants it makes
/// there: layer norm's eps), hoist-loop-invariants and prune-scan-results,
/// fold-transpose, fold-batch-matmul, split-reductions, rematerialize (with `options.fuse`;
/// $WEFT_REMATERIALIZE=0 leaves it out), fuse-contraction-epilogue (GEMMs that
/// runtime/cpu runs with an epilogue, members by `options.fusible`), fuse-elementwise
/// (with `options.fusible`), fold-slices, fold-window-producers, round-at-stores and
/// schedule-memory, as `options` enables. lower_to_program
/// appends merge-updates (add_merge_updates); `viz` shows the list without it, since
/// what it draws with its memory plan is the graph the plan is made for; `weftc dump`
/// walks it too (`--after=merge-updates`, Target::dump_pipeline).
void add_lowering_passes(Pipeline& p, const LowerOptions& options = {});

/// Appends merge-updates as lowering runs it when `options` merge updates
/// (update_in_place and merge_updates): with kernel_key and the memory plan's
/// alignment; `updates` (if given, it must outlive the pipeline) receives its groups.
void add_merge_updates(Pipeline& p, const LowerOptions& options = {},
                       UpdatePlan* updates = nullptr);

/// The default pipeline followed by the CPU passes: what `weftc dump` shows for the
/// cpu backend (`--after=fuse-elementwise`, `--dump-dir`).
Pipeline cpu_pipeline(PipelineOptions options = {});

/// Fuses, schedules, plans and lowers `g` (taken by value: it is rewritten).
StatusOr<Lowering> lower_to_program(Graph g, const LowerOptions& options = {});

/// The last step alone: one invocation per node of `g` with buffers from `plan`, one per
/// group of `merged` (from merge-updates, whose arena groups `plan` was made with); a
/// loop's body is lowered with `options`.
StatusOr<Program> build_program(const Graph& g, const MemoryPlan& plan,
                                const std::vector<MergedUpdate>& merged = {},
                                const LowerOptions& options = {});

}  // namespace weft::codegen

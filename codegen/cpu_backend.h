#pragma once
// The compiled CPU backend in one call: lower a graph (codegen/lower.h), JIT-compile its
// fused kernels through MLIR (codegen/kernel_compiler.h) and bind a runtime/cpu
// Executor. Trainer and `weftc run --backend=cpu` use it.
//
//   StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(graph);
//   (*ex)->set_input("x", x);
//   (*ex)->run();
//
//   // Or run once, with the reference interpreter's calling convention:
//   StatusOr<reference::RunResult> r = run_on_cpu(graph, inputs);

#include <memory>
#include <vector>

#include "codegen/lower.h"
#include "runtime/cpu/executor.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {

struct CpuOptions {
  LowerOptions lower;
  cpu::ExecutorOptions executor;
};

/// Lowers `g` (verified and type-inferred), compiles its kernels and binds an executor.
/// With $WEFT_DUMP_PROGRAM=DIR it also writes DIR/NAME.program.txt: the Program listing
/// and every generated kernel's body (a file it cannot write is an error naming it).
/// $WEFT_MERGE_UPDATES=0 turns merge-updates off
/// (LowerOptions::merge_updates), to measure a step with one update kernel per parameter;
/// $WEFT_LOOP_SLOTS=0 turns cpu::ExecutorOptions::loop_slots off (#31: loops copying every
/// ys and carry per iteration), to measure a step as before; $WEFT_FOLD_CONCATS=0 turns
/// LowerOptions::fold_concats off (#31: every concat a copy).
StatusOr<std::unique_ptr<cpu::Executor>> compile_for_cpu(const Graph& g,
                                                         const CpuOptions& options = {});

/// Compiles `g`, runs it once on `inputs` (in graph-input order) and returns the outputs
/// and the assigned values like reference::run does.
StatusOr<reference::RunResult> run_on_cpu(const Graph& g, const std::vector<Tensor>& inputs,
                                          const CpuOptions& options = {});

}  // namespace weft::codegen

#include "codegen/cpu_backend.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "codegen/kernel_compiler.h"
#include "codegen/run_once.h"
#include "ir/text.h"
#include "runtime/ab_switch.h"

namespace weft::codegen {

StatusOr<std::unique_ptr<cpu::Executor>> compile_for_cpu(const Graph& g,
                                                         const CpuOptions& options) {
  LowerOptions lower = options.lower;
  if (switched_off("WEFT_MERGE_UPDATES")) lower.merge_updates = false;
  if (switched_off("WEFT_FOLD_CONCATS")) lower.fold_concats = false;  // #31: concats copied
  cpu::ExecutorOptions executor = options.executor;
  if (switched_off("WEFT_LOOP_SLOTS")) executor.loop_slots = false;  // #31: loops copy
  WEFT_ASSIGN_OR_RETURN(Lowering lowering, lower_to_program(g, lower));
  if (const char* dir = std::getenv("WEFT_DUMP_PROGRAM")) {
    // Debugging aid: the Program and every generated kernel's body, one file per program.
    std::string text = lowering.program.to_string();
    for (const GeneratedKernel& k : lowering.program.kernels) {
      text += "\nkernel " + k.name + " (" + std::to_string(k.rows) + " rows of " +
              std::to_string(k.row_length) + ")\n" + print_graph(k.body, {.locations = false});
    }
    const std::string path = std::string(dir) + "/" + lowering.program.name + ".program.txt";
    std::ofstream out(path);
    out << text;
    if (!out.flush()) {
      return Error{"WEFT_DUMP_PROGRAM: cannot write '" + path + "': " + std::strerror(errno)};
    }
  }
  std::vector<GeneratedFn> fns;
  for (const GeneratedKernel& k : lowering.program.kernels) {
    WEFT_ASSIGN_OR_RETURN(const CompiledKernel* compiled, KernelCompiler::global().compile(k.body, k.kind));
    fns.push_back(compiled->fn);
  }
  return cpu::Executor::create(std::move(lowering.program), std::move(fns), executor);
}

StatusOr<reference::RunResult> run_on_cpu(const Graph& g, const std::vector<Tensor>& inputs,
                                          const CpuOptions& options) {
  WEFT_RETURN_IF_ERROR(check_input_count(g, inputs));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> ex, compile_for_cpu(g, options));
  return run_once(*ex, g, inputs);
}

}  // namespace weft::codegen

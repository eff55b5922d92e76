#include "codegen/cpu_backend.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "codegen/kernel_compiler.h"
#include "ir/text.h"

namespace weft::codegen {

StatusOr<std::unique_ptr<cpu::Executor>> compile_for_cpu(const Graph& g,
                                                         const CpuOptions& options) {
  LowerOptions lower = options.lower;
  if (const char* merge = std::getenv("WEFT_MERGE_UPDATES"); merge && std::string(merge) == "0") {
    lower.merge_updates = false;  // A/B switch for measurements (see the header)
  }
  WEFT_ASSIGN_OR_RETURN(Lowering lowering, lower_to_program(g, lower));
  if (const char* dir = std::getenv("WEFT_DUMP_PROGRAM")) {
    // Debugging aid: the Program and every generated kernel's body, one file per program.
    std::string text = lowering.program.to_string();
    for (const GeneratedKernel& k : lowering.program.kernels) {
      text += "\nkernel " + k.name + " (" + std::to_string(k.rows) + " rows of " +
              std::to_string(k.row_length) + ")\n" + print_graph(k.body, {.locations = false});
    }
    std::ofstream(std::string(dir) + "/" + lowering.program.name + ".program.txt") << text;
  }
  std::vector<GeneratedFn> fns;
  for (const GeneratedKernel& k : lowering.program.kernels) {
    WEFT_ASSIGN_OR_RETURN(const CompiledKernel* compiled, KernelCompiler::global().compile(k.body));
    fns.push_back(compiled->fn);
  }
  return cpu::Executor::create(std::move(lowering.program), std::move(fns), options.executor);
}

StatusOr<reference::RunResult> run_on_cpu(const Graph& g, const std::vector<Tensor>& inputs,
                                          const CpuOptions& options) {
  if (inputs.size() != g.inputs().size()) {
    return Error{"graph @" + g.name() + " takes " + std::to_string(g.inputs().size()) +
                 " inputs, got " + std::to_string(inputs.size())};
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> ex, compile_for_cpu(g, options));
  for (size_t i = 0; i < inputs.size(); ++i) {
    WEFT_RETURN_IF_ERROR(ex->set_input(static_cast<int>(i), inputs[i]));
  }
  WEFT_RETURN_IF_ERROR(ex->run());
  reference::RunResult r;
  for (int i = 0; i < ex->num_outputs(); ++i) r.outputs.push_back(ex->output(i));
  // Assigned inputs, from the graph: updates written in place have no Update entry.
  std::vector<bool> updated(inputs.size(), false);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Assign) updated[g.input_index(n.operands[0])] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (updated[i]) r.updated.emplace_back(ex->program().inputs[i].name, ex->input(static_cast<int>(i)));
  }
  return r;
}

}  // namespace weft::codegen

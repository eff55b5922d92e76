#include "codegen/cuda_backend.h"

#include "codegen/emit_gpu.h"
#include "codegen/ptx.h"
#include "codegen/run_once.h"

namespace weft::codegen {

LowerOptions cuda_lower_options() {
  LowerOptions options;
  options.decompose_composites = false;
  options.fuse_rows = false;
  options.fusible = gpu_supports;
  return options;
}

StatusOr<CudaProgram> compile_cuda_program(const Graph& g, const LowerOptions& options) {
  WEFT_ASSIGN_OR_RETURN(Lowering lowering, lower_to_program(g, options));
  CudaProgram out;
  std::vector<std::string> modules;
  for (const GeneratedKernel& k : lowering.program.kernels) {
    out.symbols.push_back(k.name);
    modules.push_back(emit_gpu_elementwise(k.body, k.name));
  }
  if (!modules.empty()) {
    WEFT_ASSIGN_OR_RETURN(out.ptx, compile_ptx(modules, out.symbols));
  }
  out.program = std::move(lowering.program);
  return out;
}

StatusOr<std::unique_ptr<cuda::Executor>> compile_for_cuda(const Graph& g,
                                                           const cuda::ExecutorOptions& options) {
  WEFT_ASSIGN_OR_RETURN(CudaProgram p, compile_cuda_program(g));
  return cuda::Executor::create(std::move(p.program), std::move(p.ptx), std::move(p.symbols),
                                options);
}

StatusOr<reference::RunResult> run_on_cuda(const Graph& g, const std::vector<Tensor>& inputs,
                                           const cuda::ExecutorOptions& options) {
  WEFT_RETURN_IF_ERROR(check_input_count(g, inputs));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Executor> ex, compile_for_cuda(g, options));
  return run_once(*ex, g, inputs);
}

}  // namespace weft::codegen

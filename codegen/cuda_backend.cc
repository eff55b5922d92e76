#include "codegen/cuda_backend.h"

#include "codegen/run_once.h"
#include "runtime/cuda/library.h"

namespace weft::codegen {

StatusOr<std::unique_ptr<cuda::Executor>> compile_for_cuda(const Graph& g,
                                                           const cuda::ExecutorOptions& options) {
  WEFT_ASSIGN_OR_RETURN(CudaProgram p, compile_cuda_program(g));
  return bind_for_cuda(std::move(p), options);
}

StatusOr<std::unique_ptr<cuda::Executor>> bind_for_cuda(CudaProgram p, const cuda::ExecutorOptions& options) {
  // Refused here, before any device is asked for: a property of the Program.
  if (!options.allow_host_fallback) WEFT_RETURN_IF_ERROR(cuda::check_device_only(p.program));
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

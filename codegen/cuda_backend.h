#pragma once
// The CUDA backend in one call ([CUDA]): compile_cuda_program (cuda_program.h), then a
// runtime/cuda Executor, which runs GEMMs through cuBLAS, the generated kernels from the
// PTX module, weft's CUDA library kernels (movement, indexing, cross-entropy, random), and,
// only with ExecutorOptions::allow_host_fallback, the ops with no CUDA kernel yet through
// the reference interpreter on the host (counted in fallbacks()).
//
//   StatusOr<std::unique_ptr<cuda::Executor>> ex = compile_for_cuda(step_graph);
//   (*ex)->set_input("x", x);
//   (*ex)->run();

#include <memory>
#include <vector>

#include "codegen/cuda_program.h"
#include "runtime/cuda/executor.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {

/// compile_cuda_program, then cuda::Executor::create (an error without a GPU). A Program
/// with an op that has no CUDA kernel is refused first, GPU or not, naming the op and its
/// line, unless options.allow_host_fallback (runtime/cuda/library.h).
StatusOr<std::unique_ptr<cuda::Executor>> compile_for_cuda(
    const Graph& g, const cuda::ExecutorOptions& options = {});

/// The second half of compile_for_cuda: binds a compiled Program (the same refusal first).
StatusOr<std::unique_ptr<cuda::Executor>> bind_for_cuda(CudaProgram p, const cuda::ExecutorOptions& options);

/// Compiles `g`, runs it once on `inputs` (in graph-input order) on the GPU and returns
/// the outputs and the assigned values like reference::run does.
StatusOr<reference::RunResult> run_on_cuda(const Graph& g, const std::vector<Tensor>& inputs,
                                           const cuda::ExecutorOptions& options = {});

}  // namespace weft::codegen

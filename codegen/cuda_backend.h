#pragma once
// The CUDA backend's compile step in one call ([CUDA]): lower a graph with the CUDA
// options (cuda_lower_options: fusion limited to what the GPU emitter supports, GEMM
// epilogues, no row kernels yet), emit every generated kernel (emit_gpu.h), compile them
// all into one PTX module (ptx.h) and bind a runtime/cuda Executor, which runs GEMMs
// through cuBLAS and the ops with no CUDA kernel yet through the reference interpreter
// on the host (counted in fallbacks()).
//
//   StatusOr<CudaProgram> p = compile_cuda_program(step_graph);   // no GPU needed
//   std::cout << p->program.to_string() << p->ptx;
//   StatusOr<std::unique_ptr<cuda::Executor>> ex = compile_for_cuda(step_graph);
//   (*ex)->set_input("x", x);
//   (*ex)->run();

#include <memory>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "runtime/cuda/executor.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {

/// A Program and its kernels as one PTX module: `symbols[k]` is the entry point of
/// program.kernels[k].
struct CudaProgram {
  Program program;
  std::string ptx;
  std::vector<std::string> symbols;
};

/// LowerOptions for the GPU: `fusible` is gpu_supports; composites stay whole and
/// reductions are not fused (the GPU emitter has no row or reduction kernels yet).
LowerOptions cuda_lower_options();

/// Lowers `g` (verified and type-inferred) and compiles its kernels to PTX. Needs no GPU.
StatusOr<CudaProgram> compile_cuda_program(const Graph& g,
                                           const LowerOptions& options = cuda_lower_options());

/// compile_cuda_program, then cuda::Executor::create (errors there without a GPU).
StatusOr<std::unique_ptr<cuda::Executor>> compile_for_cuda(
    const Graph& g, const cuda::ExecutorOptions& options = {});

/// Compiles `g`, runs it once on `inputs` (in graph-input order) on the GPU and returns
/// the outputs and the assigned values like reference::run does.
StatusOr<reference::RunResult> run_on_cuda(const Graph& g, const std::vector<Tensor>& inputs,
                                           const cuda::ExecutorOptions& options = {});

}  // namespace weft::codegen

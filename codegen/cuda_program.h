#pragma once
// A graph lowered for the GPU ([CUDA]): lower_to_program with the CUDA options
// (cuda_lower_options: fusion limited to what the GPU emitter supports), every generated
// kernel emitted (emit_gpu.h) and compiled into one PTX module (ptx.h); each kernel's
// rows × row_length in the Program is the number of threads it wants. Needs no GPU; runtime/cuda runs the result (cuda_backend.h binds
// it in one call, tests/cuda carries it to a GPU as C++ tables).
//
//   StatusOr<CudaProgram> p = compile_cuda_program(step_graph);
//   std::cout << p->program.to_string() << p->ptx;

#include <string>
#include <vector>

#include "codegen/lower.h"

namespace weft::codegen {

/// A Program and its kernels as one PTX module: `symbols[k]` is the entry point of
/// program.kernels[k].
struct CudaProgram {
  Program program;
  std::string ptx;
  std::vector<std::string> symbols;
};

/// LowerOptions for the GPU: the lowering passes with `fusible` = gpu_supports, so softmax,
/// log-softmax and layer norm become row kernels and reductions fuse with their
/// producers, as on the CPU.
LowerOptions cuda_lower_options();

/// The default pipeline followed by the graph passes of cuda_lower_options(): what
/// `weftc dump --backend=cuda` shows.
Pipeline cuda_pipeline(PipelineOptions options = {});

/// Lowers `g` (verified and type-inferred) and compiles its kernels to PTX.
StatusOr<CudaProgram> compile_cuda_program(const Graph& g,
                                           const LowerOptions& options = cuda_lower_options());

}  // namespace weft::codegen

#include "codegen/cuda_program.h"

#include "codegen/emit_gpu.h"
#include "codegen/ptx.h"
#include "runtime/cuda/library.h"

namespace weft::codegen {

LowerOptions cuda_lower_options() {
  LowerOptions options;
  options.fusible = gpu_supports;
  options.fuse_lone_reductions = true;  // No library reduction kernel on the GPU.
  options.split_reductions = true;
  // Every iteration runs, masked: the loop stays inside the step's captured CUDA graph
  // with no count decided on the host (conditional graph nodes are not used).
  options.mask_loop_exits = true;
  // A recurrent trip's gate pre-activations computed in the cell's windows: one launch
  // fewer per trip each way (#31).
  options.fold_window_producers = true;
  // The op table's CUDA column, where the library takes the node's shapes: attention's
  // forward and attention_grad (its three results, dq, dk, dv) on their kernels
  // (plan_attention, plan_attention_grad; #31), the losses (which have no decomposition
  // anyway). WEFT_ATTENTION_GRAD_KERNEL=0 decomposes attention_grad (runtime/cuda/library.h).
  options.keep_composite = keep_library_composites(CodeTarget::gpu, [](const Graph& g, const Node& node) {
    std::vector<Type> types;
    for (ValueId v : node.operands) types.push_back(g.type(v));
    return cuda::library_kind(node, types, g.type(node.result())) != cuda::LibraryKind::host;
  });
  return options;
}

Pipeline cuda_pipeline(PipelineOptions options) {
  Pipeline p = default_pipeline(std::move(options));
  add_lowering_passes(p, cuda_lower_options());
  return p;
}

StatusOr<CudaProgram> compile_cuda_program(const Graph& g, const LowerOptions& options) {
  WEFT_ASSIGN_OR_RETURN(Lowering lowering, lower_to_program(g, options));
  CudaProgram out;
  std::vector<std::string> modules;
  for (GeneratedKernel& k : lowering.program.kernels) {
    out.symbols.push_back(k.name);
    GpuKernel kernel = emit_gpu_kernel(k.body, k.kind, k.name);
    modules.push_back(std::move(kernel.mlir));
    // The launch: runtime/cuda starts rows · row_length threads.
    k.rows = kernel.threads;
    k.row_length = 1;
  }
  if (!modules.empty()) {
    WEFT_ASSIGN_OR_RETURN(out.ptx, compile_ptx(modules, out.symbols));
  }
  out.program = std::move(lowering.program);
  return out;
}

}  // namespace weft::codegen

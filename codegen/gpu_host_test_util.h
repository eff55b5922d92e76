#pragma once
// The GPU kernels' arithmetic checked without a GPU (tests): a body's GPU code
// (emit_host_scalar_kernel: row r does what GPU thread r does, vectors included)
// JIT-compiled with the host's ABI and run on the host.
//
//   Jit jit;
//   StatusOr<std::vector<Tensor>> out = testing::run_gpu_kernel_on_host(jit, body, inputs);

#include <vector>

#include "codegen/emit_gpu.h"
#include "codegen/jit.h"
#include "codegen/kernel_compiler.h"
#include "runtime/tensor.h"

namespace weft::codegen::testing {

/// `body`'s outputs computed from `inputs` by its GPU kernel's scalar code on the host.
inline StatusOr<std::vector<Tensor>> run_gpu_kernel_on_host(Jit& jit, const Graph& body,
                                                            std::vector<Tensor>& inputs) {
  const GpuKernel k = emit_host_scalar_kernel(body, "scalar");
  WEFT_ASSIGN_OR_RETURN(JitResult compiled, jit.compile(k.mlir, "scalar"));
  std::vector<Tensor> outputs;
  std::vector<void*> buffers;
  for (Tensor& t : inputs) buffers.push_back(t.raw_data());
  for (ValueId v : body.outputs()) outputs.emplace_back(body.type(v));
  for (Tensor& t : outputs) buffers.push_back(t.raw_data());
  reinterpret_cast<GeneratedFn>(compiled.address)(buffers.data(), 0, k.threads);
  return outputs;
}

}  // namespace weft::codegen::testing

#pragma once
// Generated CUDA kernels as PTX ([CUDA]): the MLIR modules of emit_gpu.h are lowered to
// the LLVM dialect like the host kernels (llvm_dialect.h), translated to LLVM IR with
// their nvvm intrinsics, linked into one module, marked as kernels, optimized at O3 and
// printed as PTX by LLVM's NVPTX back end — all on the host, no GPU and no CUDA toolkit
// needed. runtime/cuda loads the text with the CUDA runtime (the driver JIT-compiles it
// for the GPU it finds); ptxas can assemble it ahead of time.
//
//   std::string body_mlir = emit_gpu_elementwise(body, "k0");
//   StatusOr<std::string> ptx = compile_ptx({body_mlir}, {"k0"});
//   // ".version 7.8 / .target sm_75 / .visible .entry k0(.param .u64 k0_param_0, ..."

#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::codegen {

struct PtxOptions {
  /// The GPU architecture the PTX targets; it runs on that one and every later one (the
  /// driver compiles PTX for newer GPUs). sm_75 (Turing), the oldest weft supports
  /// (runtime/cuda/architecture.h): no generated kernel uses anything newer — halves are
  /// converted with integer operations, not sm_80's cvt.bf16 — and ptx_test assembles
  /// them for every architecture of third_party/cuda.bzl's CUDA_ARCHS.
  std::string chip = "sm_75";
  /// The PTX ISA version (LLVM feature): 7.8 is the first with sm_90 and is read by
  /// every CUDA 12 and 13 driver.
  std::string features = "+ptx78";
};

/// One PTX module defining each of `kernel_symbols` (entry points), compiled from
/// `mlir_modules` (each from emit_gpu_elementwise). Errors carry MLIR's diagnostics or
/// LLVM's message, and name a symbol that no module defines.
StatusOr<std::string> compile_ptx(const std::vector<std::string>& mlir_modules,
                                  const std::vector<std::string>& kernel_symbols,
                                  const PtxOptions& options = {});

}  // namespace weft::codegen

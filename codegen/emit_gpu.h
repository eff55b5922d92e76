#pragma once
// CUDA kernels for fused elementwise bodies ([CUDA]): the same body graphs as the CPU's
// kernel_compiler.h, emitted as MLIR (func, arith, math, scf, llvm and nvvm dialects)
// that codegen/ptx.h compiles to PTX. One thread computes one element of the iteration
// space; each thread walks a grid-stride loop over all rows × row_length elements, so
// any launch size is correct. For `add(%x: f32[128,256], %b: f32[256])`, abridged:
//
//   func.func @k0(%p0: !llvm.ptr, %p1: !llvm.ptr, %p2: !llvm.ptr) {
//     %tid = nvvm.read.ptx.sreg.tid.x : i32          // and ctaid, ntid, nctaid
//     scf.for %e = %first to 32768 step %threads : i64 {
//       %r = arith.divui %e, 256 ; %i = arith.remui %e, 256   // row and column
//       %x = llvm.load (gep %p0[%r * 256 + %i]) ; %b = llvm.load (gep %p1[%i])
//       llvm.store (arith.addf %x, %b), (gep %p2[%r * 256 + %i])
//     }
//   }
//
// The kernel's parameters are one device pointer per buffer, operands then results (the
// order of GeneratedFn's buffers[]); runtime/cuda launches it. Op semantics are the CPU
// emitter's, node by node (emit_elementwise.cc): f32 math through MLIR's polynomial
// approximations, so CPU and GPU kernels compute the same approximations.

#include <string>

#include "ir/graph.h"

namespace weft::codegen {

/// True when `node` of `g` can be part of a generated CUDA kernel: an elementwise op the
/// CPU emitter supports, except pow and the f64 transcendental functions (exp, log,
/// log1p, tanh, sin, cos, erf, sigmoid, gelu), which would need libdevice. Reductions
/// are not fused on the GPU yet.
bool gpu_supports(const Graph& g, const Node& node);

/// The MLIR module defining kernel `symbol` for elementwise body `body` (every node
/// passes gpu_supports, every output has the first output's shape).
std::string emit_gpu_elementwise(const Graph& body, const std::string& symbol);

}  // namespace weft::codegen

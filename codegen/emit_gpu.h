#pragma once
// CUDA kernels for fused bodies ([CUDA]): the same body graphs as the CPU's
// kernel_compiler.h, emitted as MLIR (func, arith, math, scf, llvm and nvvm dialects)
// that codegen/ptx.h compiles to PTX. One thread computes one vector of W contiguous
// elements of the iteration space (16 bytes: W = 4 for f32, 8 for f16/bf16, 2 for f64,
// where the layout allows it; else W = 1, one element); each thread walks a grid-stride
// loop over them all, so any launch size is correct. For `add(%x: f32[128,256],
// %b: f32[256])`, abridged:
//
//   func.func @k0(%p0: !llvm.ptr, %p1: !llvm.ptr, %p2: !llvm.ptr) {
//     %tid = nvvm.read.ptx.sreg.tid.x : i32          // and ctaid, ntid, nctaid
//     scf.if (%p0 | %p1 | %p2) % 16 == 0 {            // aligned buffers: vectors
//       scf.for %u = %first to 8192 step %threads : i64 {
//         %r = %u / 64 ; %i = (%u % 64) * 4               // row and first column
//         %x = llvm.load (gep %p0[%r * 256 + %i]) {alignment = 16} : vector<4xf32>
//         %b = llvm.load (gep %p1[%i]) {alignment = 16} : vector<4xf32>
//         llvm.store (arith.addf %x, %b), (gep %p2[%r * 256 + %i]) {alignment = 16}
//       }
//     } else {                                          // one element per thread
//       scf.for %e = %first to 32768 step %threads : i64 { ... }
//     }
//   }
//
// ptxas turns each 16-byte access into one ld.global.v4.f32 / st.global.v4.f32.
//
// The kernel's parameters are one device pointer per buffer, operands then results (the
// order of GeneratedFn's buffers[]); runtime/cuda launches it. Op semantics are the CPU
// emitter's, node by node (emit_elementwise.cc): f32 math through MLIR's polynomial
// approximations, so CPU and GPU kernels compute the same approximations.

#include <string>

#include "ir/fused_kind.h"
#include "ir/graph.h"

namespace weft::codegen {

/// True when `node` of `g` can be part of a generated CUDA kernel: what the CPU emitter
/// supports (elementwise ops; sum, mean, max, min ending a reduction or row body; f16 and
/// bf16 included, computed in f32), except pow and the f64 transcendental functions,
/// which would need libdevice (ir/kernel_support.h states each gap).
bool gpu_supports(const Graph& g, const Node& node);

/// A kernel's MLIR and the threads it wants: any launch is correct (grid-stride), and
/// `threads` is the count beyond which threads have nothing to do.
struct GpuKernel {
  std::string mlir;
  int64_t threads = 0;
  /// Elements per vector load and store along the rows (1: scalar code). `threads`
  /// follows from it: an elementwise kernel wants one thread per vector of a row, plus
  /// enough for a row's last row_length % width elements, one each.
  int width = 1;
};

/// False when the environment sets WEFT_GPU_VECTOR=0: every GPU kernel then reads and
/// writes one element per access, as before vectorization (an A/B switch for timing on
/// a GPU; tests/cuda's `gen_cases --vocab-scalar` sets it for its build-time twin).
bool gpu_vectors_enabled();

/// The kernel `symbol` for `body` of form `kind` (GeneratedKernel::kind, from the fused
/// node: never re-derived from the body; every node passes gpu_supports): an elementwise body
/// gets one thread per vector of `width` elements (see GpuKernel); a reduction body
/// (kernel_compiler.h) one thread per output element, which accumulates its reduced
/// elements in order (sums in f64, as on the CPU); a row body (softmax, layer norm, their
/// backward, ...) one warp per row when its rows hold 32 elements or more — the lanes
/// take every 32nd element (or vector) of each of the CPU row kernel's passes, and
/// butterfly shuffles (nvvm.shfl.sync) give every lane the row's sums (f64) and maxima —
/// and one thread per row for shorter rows. Reductions
/// along rows get the same warp per row; when fewer rows than fill the GPU that way
/// (under 2048) hold 256 elements or more (batch-norm statistics, a small batch's rows)
/// a whole 256-thread block takes each row, its warps' results combined through shared
/// memory in a fixed order. Column reductions (a bias gradient's sum over the batch) over
/// 64 rows or more give each 256-thread block 32 adjacent columns (coalesced loads) and
/// split the rows over its 8 warps, whose partial results shared memory adds in order.
/// With `vectorize`, the lanes of rows and the threads of elementwise kernels read (and
/// write) `width` contiguous elements per access where each operand's and result's rows
/// start on multiples of it, and at run time the kernel takes that path only when every
/// such buffer's address is a multiple of the vector's size (loop slots can hand a
/// kernel any element's address), else the same code one element at a time.
GpuKernel emit_gpu_kernel(const Graph& body, FusedKind kind, const std::string& symbol,
                          bool vectorize = gpu_vectors_enabled());

/// The same for a body without a fused node (a test's, a tool's file): the form its
/// structure has (standalone_kind).
GpuKernel emit_gpu_kernel(const Graph& body, const std::string& symbol,
                          bool vectorize = gpu_vectors_enabled());

/// The same code as emit_gpu_kernel (its vectors too, one lane per row) with the host's
/// ABI (GeneratedFn) instead of the CUDA entry point: `threads` rows, row r doing what GPU
/// thread r does. Tests JIT it (codegen/jit.h) and compare with the reference
/// interpreter, so the arithmetic and the indexing of every GPU kernel are checked on
/// machines without a GPU.
GpuKernel emit_host_scalar_kernel(const Graph& body, const std::string& symbol,
                                  bool vectorize = gpu_vectors_enabled());

/// emit_gpu_kernel(...).mlir.
std::string emit_gpu_elementwise(const Graph& body, const std::string& symbol);

}  // namespace weft::codegen

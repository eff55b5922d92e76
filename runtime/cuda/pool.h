#pragma once
// The pooling kernels (pool.cu, compiled by nvcc): max/avg pooling, their gradients and
// max_pool2d_select, f32 and f64, one thread per result element (pool_kernels.h holds
// the per-element functions and says why these are not cuDNN's). The launch enqueues one
// kernel on `stream` and returns its error; it neither synchronizes nor allocates, so a
// step that uses it can be captured as a CUDA graph.

#include <cuda_runtime_api.h>

#include "runtime/cuda/pool_kernels.h"

namespace weft::cuda {

/// Writes every element of `op`'s result `out` (f64 when `f64`, else f32) from operands
/// `a` and `b` (PoolOp says which; b is nullptr for one-operand ops) over `window`.
cudaError_t launch_pool(PoolOp op, bool f64, const PoolWindow& window, const void* a,
                        const void* b, void* out, cudaStream_t stream);

/// The same for f16 (`bf16` false) or bf16 operands and result, as the reference computes
/// a half op: the operands widened to f32 exactly into `workspace`
/// (pool_half_workspace_bytes), the f32 kernel run there, its result rounded to nearest
/// even into `out` (float_to_f16 / float_to_bf16's rules, NaN included). Three more
/// launches than launch_pool, still no synchronization or allocation.
cudaError_t launch_pool_half(PoolOp op, bool bf16, const PoolWindow& window, const void* a,
                             const void* b, void* out, void* workspace, cudaStream_t stream);

}  // namespace weft::cuda

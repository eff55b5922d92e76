#pragma once
// attention's CUDA kernel (attention_kernels.cu, compiled by nvcc; issue #31): the
// forward, f32, online softmax over key tiles in shared memory, and its backward
// (FlashAttention-2's, deterministic: no atomics). library.cc decides which attention
// and attention_grad nodes it runs (library_kind: f32, head dims up to kAttentionMaxDim;
// library_bound.cc binds them). Like
// library_kernels.h: enqueues on `stream`, never synchronizes or allocates (the captured
// step graph holds it).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/cuda/attention_shape.h"
#include "runtime/cuda/index_maps.h"

namespace weft::cuda {

/// y = softmax(select(masked, -inf, (q·scale)·kᵀ))·v: `mask` (bool bytes, or nullptr) is
/// read through `mask_map`, which maps each score's row-major index in [batch, sq, sk] to
/// the mask's element (runtime/cuda/library_plan.h, broadcast_map); `causal` masks key
/// j > query i. cudaErrorInvalidValue for a head dim above kAttentionMaxDim.
cudaError_t launch_attention(const float* q, const float* k, const float* v, const uint8_t* mask,
                             const StridedMap& mask_map, float* out, const AttentionShape& s,
                             float scale, bool causal, cudaStream_t stream);

/// Bytes of device workspace launch_attention_backward needs for `s`: each query row's
/// logsumexp L and D = rowsum(dy ∘ y), f32, 256-byte aligned (attention_grad_workspace).
size_t attention_backward_workspace_bytes(const AttentionShape& s);

/// dq, dk and dv of y = softmax(select(masked, -inf, (q·scale)·kᵀ))·v given dy, with the
/// same arguments as launch_attention plus the forward's result y, dy and a workspace of
/// attention_backward_workspace_bytes(s) (256-byte aligned). Two kernels: the query side
/// (per block of queries: L and D, then dq = scale·dS·k over the key tiles) and the key
/// side (per block of keys: dv = Pᵀ·dy and dk = dSᵀ·(q·scale) over the query tiles), with
/// P = exp(S - L) and dS = P ∘ (dy·vᵀ - D). Each output element is summed by one thread
/// in a fixed order, so the result is deterministic; dq recomputes S and dy·vᵀ rather
/// than accumulating with atomics (about 7 tile products instead of 5).
/// A row whose keys are all masked has L = -inf and P = NaN, as the reference's softmax:
/// its dq row is NaN, and so is dk and dv of every key visited with it (every key but
/// those a causal mask skips in whole tiles). cudaErrorInvalidValue for a head dim above
/// kAttentionMaxDim.
cudaError_t launch_attention_backward(const float* q, const float* k, const float* v,
                                      const float* y, const float* dy, const uint8_t* mask,
                                      const StridedMap& mask_map, float* dq, float* dk,
                                      float* dv, void* workspace, const AttentionShape& s,
                                      float scale, bool causal, cudaStream_t stream);

}  // namespace weft::cuda

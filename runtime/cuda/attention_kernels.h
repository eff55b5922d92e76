#pragma once
// attention's CUDA kernel (attention_kernels.cu, compiled by nvcc; issue #31): the
// forward, f32, online softmax over key tiles in shared memory. library.cc decides which
// attention nodes it runs (library_kind: f32, head dims up to kAttentionMaxDim);
// attention_grad is decomposed by the CUDA lowering. Like library_kernels.h: enqueues on
// `stream`, never synchronizes or allocates (the captured step graph holds it).

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

}  // namespace weft::cuda

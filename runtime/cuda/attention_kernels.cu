// attention's kernels' launches (issue #31); the kernels are in
// attention_kernels_device.inc, which says how they work.

#include <cuda_runtime.h>

#include "runtime/cuda/attention_kernels.h"
#include "runtime/cuda/attention_kernels_device.inc"

namespace weft::cuda {

cudaError_t launch_attention(const float* q, const float* k, const float* v, const uint8_t* mask,
                             const StridedMap& mask_map, float* out, const AttentionShape& s,
                             float scale, bool causal, cudaStream_t stream) {
  if (s.d > kAttentionMaxDim || s.dv > kAttentionMaxDim || s.d < 1 || s.dv < 1) {
    return cudaErrorInvalidValue;
  }
  if (s.batch == 0 || s.sq == 0) return cudaSuccess;
  const int64_t q_tiles = (s.sq + kRows - 1) / kRows;
  const size_t bytes = sizeof(float) * (kRows * s.d + kKeys * (s.d + 1) + kKeys * s.dv);
  attention_forward<<<static_cast<unsigned>(s.batch * q_tiles), kWarps * 32, bytes, stream>>>(
      q, k, v, mask, mask_map, out, s, scale, causal, q_tiles);
  return cudaGetLastError();
}

size_t attention_backward_workspace_bytes(const AttentionShape& s) {
  return attention_grad_workspace(s).bytes;
}

cudaError_t launch_attention_backward(const float* q, const float* k, const float* v,
                                      const float* y, const float* dy, const uint8_t* mask,
                                      const StridedMap& mask_map, float* dq, float* dk,
                                      float* dv, void* workspace, const AttentionShape& s,
                                      float scale, bool causal, cudaStream_t stream) {
  if (s.d > kAttentionMaxDim || s.dv > kAttentionMaxDim || s.d < 1 || s.dv < 1) {
    return cudaErrorInvalidValue;
  }
  if (s.batch == 0) return cudaSuccess;
  const AttentionGradWorkspace w = attention_grad_workspace(s);
  float* lse = reinterpret_cast<float*>(static_cast<char*>(workspace) + w.lse);
  float* delta = reinterpret_cast<float*>(static_cast<char*>(workspace) + w.delta);
  if (s.sq > 0) {
    const int64_t q_tiles = (s.sq + kGradRows - 1) / kGradRows;
    attention_grad_queries<<<static_cast<unsigned>(s.batch * q_tiles), kWarps * 32,
                             attention_grad_query_shared_bytes(s), stream>>>(
        q, k, v, y, dy, mask, mask_map, dq, lse, delta, s, scale, causal, q_tiles);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (s.sk > 0) {  // After the query side on the stream: it reads L and D.
    const int64_t k_tiles = (s.sk + kGradRows - 1) / kGradRows;
    attention_grad_keys<<<static_cast<unsigned>(s.batch * k_tiles), kWarps * 32,
                          attention_grad_key_shared_bytes(s), stream>>>(
        q, k, v, dy, mask, mask_map, dk, dv, lse, delta, s, scale, causal, k_tiles);
  }
  return cudaGetLastError();
}

}  // namespace weft::cuda

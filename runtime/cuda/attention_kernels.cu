// attention's forward on the GPU (issue #31): FlashAttention's scheme in f32. One block
// per (batch·head, tile of kRows queries); 4 warps, each owning kRows / 4 query rows. Key
// and value tiles of kKeys rows are staged in shared memory; each lane scores one key of
// the tile against a row (the scaled queries are in shared memory too), the warp keeps
// the row's running max m, sum l and output accumulator (lane c holds columns c, c + 32,
// ...) and rescales them by exp(m_old - m_new) as each tile comes in (online softmax).
// Masked scores are -inf: a key past the diagonal (causal) or where the broadcast mask is
// true; a row that never sees a key ends 0 / 0 = NaN, as the reference's softmax does.
// Not yet run on a GPU.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "runtime/cuda/attention_kernels.h"

namespace weft::cuda {
namespace {

constexpr int kRows = 16;    // queries per block
constexpr int kKeys = 32;    // keys per tile: one per lane
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = kRows / kWarps;
constexpr int kColumnsPerLane = kAttentionMaxDim / 32;
constexpr unsigned kFull = 0xffffffffu;

__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(kFull, x, o));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(kFull, x, o);
  return x;
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_forward(const float* q, const float* k, const float* v, const uint8_t* mask,
                      StridedMap mask_map, float* out, AttentionShape s, float scale,
                      bool causal, int64_t q_tiles) {
  extern __shared__ float shared[];
  const int d = s.d, dv = s.dv;
  float* qs = shared;                  // [kRows][d], scaled
  float* ks = qs + kRows * d;          // [kKeys][d + 1]: a padded row, no bank conflicts
  float* vs = ks + kKeys * (d + 1);    // [kKeys][dv]
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t row0 = (blockIdx.x % q_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* qb = q + bh * s.sq * d;
  const float* kb = k + bh * s.sk * d;
  const float* vb = v + bh * s.sk * dv;
  for (int e = threadIdx.x; e < kRows * d; e += blockDim.x) {
    const int64_t r = row0 + e / d;
    // As the primitives: q · scale rounded to f32 before the product.
    qs[e] = r < s.sq ? qb[r * d + e % d] * scale : 0.0f;
  }
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kColumnsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0;
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) acc[r][t] = 0;
  }
  const int64_t key_end = causal ? min(s.sk, row0 + kRows) : s.sk;
  for (int64_t key0 = 0; key0 < key_end; key0 += kKeys) {
    __syncthreads();  // The previous tile is consumed (the first time: qs is written).
    for (int e = threadIdx.x; e < kKeys * d; e += blockDim.x) {
      const int64_t j = key0 + e / d;
      ks[(e / d) * (d + 1) + e % d] = j < s.sk ? kb[j * d + e % d] : 0.0f;
    }
    for (int e = threadIdx.x; e < kKeys * dv; e += blockDim.x) {
      const int64_t j = key0 + e / dv;
      vs[e] = j < s.sk ? vb[j * dv + e % dv] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int local = warp * kRowsPerWarp + r;
      const int64_t i = row0 + local;
      if (i >= s.sq) break;  // Warp-uniform.
      const int64_t j = key0 + lane;
      float score = -INFINITY;
      bool open = j < s.sk && !(causal && j > i);
      if (open && mask != nullptr) {
        int64_t unused = 0;
        open = mask[map_element(mask_map, (bh * s.sq + i) * s.sk + j, unused)] == 0;
      }
      if (open) {
        const float* qr = qs + local * d;
        const float* kr = ks + lane * (d + 1);
        float dot = 0;
        for (int c = 0; c < d; ++c) dot = fmaf(qr[c], kr[c], dot);
        score = dot;
      }
      const float m_new = fmaxf(m[r], warp_max(score));
      if (m_new == -INFINITY) continue;  // Warp-uniform: no open key yet.
      const float p = expf(score - m_new);         // 0 where masked
      const float correction = expf(m[r] - m_new);  // 0 while m was -inf
      l[r] = l[r] * correction + warp_sum(p);
#pragma unroll
      for (int t = 0; t < kColumnsPerLane; ++t) acc[r][t] *= correction;
      for (int jj = 0; jj < kKeys; ++jj) {
        const float pj = __shfl_sync(kFull, p, jj);
        if (pj == 0.0f) continue;  // Warp-uniform.
#pragma unroll
        for (int t = 0; t < kColumnsPerLane; ++t) {
          const int c = lane + 32 * t;
          if (c < dv) acc[r][t] = fmaf(pj, vs[jj * dv + c], acc[r][t]);
        }
      }
      m[r] = m_new;
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = row0 + warp * kRowsPerWarp + r;
    if (i >= s.sq) break;
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) {
      const int c = lane + 32 * t;
      if (c < dv) out[(bh * s.sq + i) * dv + c] = acc[r][t] / l[r];  // 0 / 0: NaN
    }
  }
}

}  // namespace

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

}  // namespace weft::cuda

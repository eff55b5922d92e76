// attention's forward on the GPU (issue #31): FlashAttention's scheme in f32. One block
// per (batch·head, tile of kRows queries); 4 warps, each owning kRows / 4 query rows. Key
// and value tiles of kKeys rows are staged in shared memory; each lane scores one key of
// the tile against a row (the scaled queries are in shared memory too), the warp keeps
// the row's running max m, sum l and output accumulator (lane c holds columns c, c + 32,
// ...) and rescales them by exp(m_old - m_new) as each tile comes in (online softmax).
// Masked scores are -inf: a key past the diagonal (causal) or where the broadcast mask is
// true; a row that never sees a key ends 0 / 0 = NaN, as the reference's softmax does.
//
// The backward (FlashAttention-2, Dao 2023, Algorithm 2, without its atomics) is two
// kernels of the same shape. The query side, one block per (batch·head, kAttentionGradRows
// queries), walks the key tiles twice: first for each row's logsumexp L (the forward's
// online max and sum) and D = rowsum(dy ∘ y), which it leaves in the workspace, then for
// dq = scale·Σ_j dS_ij·k_j, each lane scoring one key of the tile. The key side, one block
// per (batch·head, kAttentionGradRows keys), walks the query tiles, each lane scoring one
// query, for dv = Σ_i P_ij·dy_i and dk = Σ_i dS_ij·(q_i·scale). Both recompute
// P = exp(S - L) and dS = P ∘ (dy·vᵀ - D) with the forward's score arithmetic, so every
// output element has one writer summing in a fixed order: deterministic, for two more
// tile products than FA-2's dq atomics.
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

constexpr int kGradRows = kAttentionGradRows;
constexpr int kGradTile = kAttentionGradTile;
constexpr int kGradRowsPerWarp = kGradRows / kWarps;
static_assert(kGradTile == 32, "the backward scores one key or query per lane");
static_assert(kGradRows % kWarps == 0, "each warp owns kGradRowsPerWarp rows");

/// Whether score (i, j) of problem bh takes part: both in range, not above the diagonal
/// (causal), not masked.
__device__ inline bool score_open(const uint8_t* mask, const StridedMap& mask_map,
                                  const AttentionShape& s, bool causal, int64_t bh, int64_t i,
                                  int64_t j) {
  if (i >= s.sq || j >= s.sk || (causal && j > i)) return false;
  if (mask == nullptr) return true;
  int64_t unused = 0;
  return mask[map_element(mask_map, (bh * s.sq + i) * s.sk + j, unused)] == 0;
}

/// Σ a[c]·b[c] in the forward's order (its scores are these).
__device__ inline float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int c = 0; c < n; ++c) acc = fmaf(a[c], b[c], acc);
  return acc;
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_grad_queries(const float* q, const float* k, const float* v, const float* y,
                           const float* dy, const uint8_t* mask, StridedMap mask_map, float* dq,
                           float* lse, float* delta, AttentionShape s, float scale, bool causal,
                           int64_t q_tiles) {
  extern __shared__ float shared[];
  const int d = s.d, dv = s.dv;
  float* qs = shared;                  // [kGradRows][d], scaled
  float* dys = qs + kGradRows * d;     // [kGradRows][dv]
  float* ks = dys + kGradRows * dv;    // [kGradTile][d + 1]
  float* vs = ks + kGradTile * (d + 1);  // [kGradTile][dv + 1]
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t row0 = (blockIdx.x % q_tiles) * kGradRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* kb = k + bh * s.sk * d;
  const float* vb = v + bh * s.sk * dv;
  for (int e = threadIdx.x; e < kGradRows * d; e += blockDim.x) {
    const int64_t r = row0 + e / d;
    qs[e] = r < s.sq ? q[(bh * s.sq + r) * d + e % d] * scale : 0.0f;
  }
  for (int e = threadIdx.x; e < kGradRows * dv; e += blockDim.x) {
    const int64_t r = row0 + e / dv;
    dys[e] = r < s.sq ? dy[(bh * s.sq + r) * dv + e % dv] : 0.0f;
  }
  float m[kGradRowsPerWarp], l[kGradRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0;
  }
  const int64_t key_end = attention_key_end(s, causal, row0, kGradRows);
  auto stage = [&](int64_t key0, bool values) {
    __syncthreads();  // The previous tile is consumed (the first time: qs, dys are written).
    for (int e = threadIdx.x; e < kGradTile * d; e += blockDim.x) {
      const int64_t j = key0 + e / d;
      ks[(e / d) * (d + 1) + e % d] = j < s.sk ? kb[j * d + e % d] : 0.0f;
    }
    for (int e = threadIdx.x; values && e < kGradTile * dv; e += blockDim.x) {
      const int64_t j = key0 + e / dv;
      vs[(e / dv) * (dv + 1) + e % dv] = j < s.sk ? vb[j * dv + e % dv] : 0.0f;
    }
    __syncthreads();
  };
  // Pass 1: each row's max and sum over its keys, as the forward keeps them.
  for (int64_t key0 = 0; key0 < key_end; key0 += kGradTile) {
    stage(key0, /*values=*/false);
#pragma unroll
    for (int r = 0; r < kGradRowsPerWarp; ++r) {
      const int local = warp * kGradRowsPerWarp + r;
      const int64_t i = row0 + local;
      if (i >= s.sq) break;  // Warp-uniform.
      const float score = score_open(mask, mask_map, s, causal, bh, i, key0 + lane)
                              ? dot(qs + local * d, ks + lane * (d + 1), d)
                              : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(score));
      if (m_new == -INFINITY) continue;  // Warp-uniform: no open key yet.
      l[r] = l[r] * expf(m[r] - m_new) + warp_sum(expf(score - m_new));
      m[r] = m_new;
    }
  }
  float row_lse[kGradRowsPerWarp], row_delta[kGradRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
    const int local = warp * kGradRowsPerWarp + r;
    const int64_t i = row0 + local;
    row_lse[r] = m[r] + logf(l[r]);  // -inf where no key is open: P is then NaN
    float dot_y = 0;
    for (int c = lane; i < s.sq && c < dv; c += 32) {
      dot_y = fmaf(dys[local * dv + c], y[(bh * s.sq + i) * dv + c], dot_y);
    }
    row_delta[r] = warp_sum(dot_y);
    if (i < s.sq && lane == 0) {
      lse[bh * s.sq + i] = row_lse[r];
      delta[bh * s.sq + i] = row_delta[r];
    }
  }
  // Pass 2: dq_i = scale·Σ_j dS_ij·k_j, lane c holding columns c, c + 32, ....
  float acc[kGradRowsPerWarp][kColumnsPerLane];
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) acc[r][t] = 0;
  }
  for (int64_t key0 = 0; key0 < key_end; key0 += kGradTile) {
    stage(key0, /*values=*/true);
#pragma unroll
    for (int r = 0; r < kGradRowsPerWarp; ++r) {
      const int local = warp * kGradRowsPerWarp + r;
      const int64_t i = row0 + local;
      if (i >= s.sq) break;  // Warp-uniform.
      const int64_t j = key0 + lane;
      float ds = 0;
      if (j < s.sk) {
        const float score = score_open(mask, mask_map, s, causal, bh, i, j)
                                ? dot(qs + local * d, ks + lane * (d + 1), d)
                                : -INFINITY;
        const float p = expf(score - row_lse[r]);  // 0 where masked, NaN if all are
        if (p != 0.0f) ds = p * (dot(dys + local * dv, vs + lane * (dv + 1), dv) - row_delta[r]);
      }
      for (int jj = 0; jj < kGradTile; ++jj) {
        const float dsj = __shfl_sync(kFull, ds, jj);
        if (dsj == 0.0f) continue;  // Warp-uniform.
#pragma unroll
        for (int t = 0; t < kColumnsPerLane; ++t) {
          const int c = lane + 32 * t;
          if (c < d) acc[r][t] = fmaf(dsj, ks[jj * (d + 1) + c], acc[r][t]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
    const int64_t i = row0 + warp * kGradRowsPerWarp + r;
    if (i >= s.sq) break;
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) {
      const int c = lane + 32 * t;
      if (c < d) dq[(bh * s.sq + i) * d + c] = acc[r][t] * scale;
    }
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_grad_keys(const float* q, const float* k, const float* v, const float* dy,
                        const uint8_t* mask, StridedMap mask_map, float* dk, float* dv_out,
                        const float* lse, const float* delta, AttentionShape s, float scale,
                        bool causal, int64_t k_tiles) {
  extern __shared__ float shared[];
  const int d = s.d, dv = s.dv;
  float* kown = shared;                    // [kGradRows][d]: the block's keys
  float* vown = kown + kGradRows * d;      // [kGradRows][dv]
  float* qs = vown + kGradRows * dv;       // [kGradTile][d + 1], scaled
  float* dys = qs + kGradTile * (d + 1);   // [kGradTile][dv + 1]
  float* ls = dys + kGradTile * (dv + 1);  // [kGradTile]: L
  float* ds_row = ls + kGradTile;          // [kGradTile]: D
  const int64_t bh = blockIdx.x / k_tiles;
  const int64_t key0 = (blockIdx.x % k_tiles) * kGradRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int e = threadIdx.x; e < kGradRows * d; e += blockDim.x) {
    const int64_t j = key0 + e / d;
    kown[e] = j < s.sk ? k[(bh * s.sk + j) * d + e % d] : 0.0f;
  }
  for (int e = threadIdx.x; e < kGradRows * dv; e += blockDim.x) {
    const int64_t j = key0 + e / dv;
    vown[e] = j < s.sk ? v[(bh * s.sk + j) * dv + e % dv] : 0.0f;
  }
  float gk[kGradRowsPerWarp][kColumnsPerLane], gv[kGradRowsPerWarp][kColumnsPerLane];
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) gk[r][t] = gv[r][t] = 0;
  }
  for (int64_t q0 = attention_query_begin(causal, key0, kGradTile); q0 < s.sq; q0 += kGradTile) {
    __syncthreads();  // The previous tile is consumed (the first time: kown, vown are written).
    for (int e = threadIdx.x; e < kGradTile * d; e += blockDim.x) {
      const int64_t i = q0 + e / d;
      qs[(e / d) * (d + 1) + e % d] = i < s.sq ? q[(bh * s.sq + i) * d + e % d] * scale : 0.0f;
    }
    for (int e = threadIdx.x; e < kGradTile * dv; e += blockDim.x) {
      const int64_t i = q0 + e / dv;
      dys[(e / dv) * (dv + 1) + e % dv] = i < s.sq ? dy[(bh * s.sq + i) * dv + e % dv] : 0.0f;
    }
    for (int e = threadIdx.x; e < kGradTile; e += blockDim.x) {
      const int64_t i = q0 + e;
      ls[e] = i < s.sq ? lse[bh * s.sq + i] : 0.0f;
      ds_row[e] = i < s.sq ? delta[bh * s.sq + i] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kGradRowsPerWarp; ++r) {
      const int local = warp * kGradRowsPerWarp + r;
      const int64_t j = key0 + local;
      if (j >= s.sk) break;  // Warp-uniform.
      const int64_t i = q0 + lane;
      float p = 0, ds = 0;
      if (i < s.sq) {
        const float score = score_open(mask, mask_map, s, causal, bh, i, j)
                                ? dot(qs + lane * (d + 1), kown + local * d, d)
                                : -INFINITY;
        p = expf(score - ls[lane]);  // 0 where masked, NaN if the whole row is
        if (p != 0.0f) ds = p * (dot(dys + lane * (dv + 1), vown + local * dv, dv) - ds_row[lane]);
      }
      for (int ii = 0; ii < kGradTile; ++ii) {
        const float pi = __shfl_sync(kFull, p, ii), dsi = __shfl_sync(kFull, ds, ii);
        if (pi == 0.0f) continue;  // Warp-uniform; dS is 0 too.
#pragma unroll
        for (int t = 0; t < kColumnsPerLane; ++t) {
          const int c = lane + 32 * t;
          if (c < dv) gv[r][t] = fmaf(pi, dys[ii * (dv + 1) + c], gv[r][t]);
          if (c < d) gk[r][t] = fmaf(dsi, qs[ii * (d + 1) + c], gk[r][t]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kGradRowsPerWarp; ++r) {
    const int64_t j = key0 + warp * kGradRowsPerWarp + r;
    if (j >= s.sk) break;
#pragma unroll
    for (int t = 0; t < kColumnsPerLane; ++t) {
      const int c = lane + 32 * t;
      if (c < d) dk[(bh * s.sk + j) * d + c] = gk[r][t];
      if (c < dv) dv_out[(bh * s.sk + j) * dv + c] = gv[r][t];
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

namespace weft::cuda {

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

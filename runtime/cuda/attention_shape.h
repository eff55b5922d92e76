#pragma once
// attention's kernel geometry, shared by its host-side plan (library_plan.h) and its CUDA
// kernels (attention_kernels.h): no CUDA header. The backward's workspace layout and tile
// ranges are here too, so attention_backward_plan_test checks them on the host.

#include <cstddef>
#include <cstdint>

#include "ir/host_device.h"

namespace weft::cuda {

/// The largest head_dim (D and Dv) the kernel takes: a lane holds D / 32 accumulators.
inline constexpr int kAttentionMaxDim = 128;

/// attention's operands as `batch` independent problems: q [sq, d], k [sk, d], v [sk, dv]
/// and the result [sq, dv], each contiguous.
struct AttentionShape {
  int64_t batch = 1, sq = 0, sk = 0;
  int d = 0, dv = 0;
};

/// The backward's tiles (attention_kernels.cu): a block of the query side owns
/// kAttentionGradRows queries and walks the keys in tiles of kAttentionGradTile (one per
/// lane); a block of the key side owns kAttentionGradRows keys and walks the queries in
/// tiles of kAttentionGradTile. Eight rows keep a block's shared memory under 48 KiB at
/// head dims of 128 (sm_75's default): 2·8·128 + 2·32·129 floats, 41 KiB.
inline constexpr int kAttentionGradRows = 8;
inline constexpr int kAttentionGradTile = 32;

/// Where launch_attention_backward keeps each query row's logsumexp L (`lse`) and
/// D = rowsum(dy ∘ y) (`delta`), f32 [batch, sq] each, as byte offsets into its
/// workspace; `bytes` is the workspace's size. Each array starts 256-byte aligned.
struct AttentionGradWorkspace {
  size_t lse = 0, delta = 0, bytes = 0;
};

inline constexpr AttentionGradWorkspace attention_grad_workspace(const AttentionShape& s) {
  const size_t row_bytes = (sizeof(float) * static_cast<size_t>(s.batch * s.sq) + 255) / 256 * 256;
  return {/*lse=*/0, /*delta=*/row_bytes, /*bytes=*/2 * row_bytes};
}

/// Dynamic shared memory of a query-side block (its scaled queries and dy rows, a key
/// tile and a value tile, both rows padded by one float) and of a key-side block (its keys
/// and values, a tile of scaled queries and of dy rows, padded, and their L and D).
inline constexpr size_t attention_grad_query_shared_bytes(const AttentionShape& s) {
  return sizeof(float) * static_cast<size_t>(kAttentionGradRows * (s.d + s.dv) +
                                             kAttentionGradTile * (s.d + 1 + s.dv + 1));
}
inline constexpr size_t attention_grad_key_shared_bytes(const AttentionShape& s) {
  return attention_grad_query_shared_bytes(s) + sizeof(float) * 2 * kAttentionGradTile;
}

/// The keys a block of queries [row0, row0 + rows) visits: [0, this). With `causal`,
/// keys past its last query are masked for all of them and skipped.
WEFT_HD inline int64_t attention_key_end(const AttentionShape& s, bool causal, int64_t row0,
                                         int64_t rows) {
  return causal && row0 + rows < s.sk ? row0 + rows : s.sk;
}

/// The first query a block of keys starting at `key0` visits, on a tile boundary: with
/// `causal`, queries before key0 are masked for all of its keys and skipped.
WEFT_HD inline int64_t attention_query_begin(bool causal, int64_t key0, int64_t tile) {
  return causal ? key0 / tile * tile : 0;
}

}  // namespace weft::cuda

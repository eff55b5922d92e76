#pragma once
// attention's kernel geometry, shared by its host-side plan (library_plan.h) and its CUDA
// kernel (attention_kernels.h): no CUDA header.

#include <cstdint>

namespace weft::cuda {

/// The largest head_dim (D and Dv) the kernel takes: a lane holds D / 32 accumulators.
inline constexpr int kAttentionMaxDim = 128;

/// attention's operands as `batch` independent problems: q [sq, d], k [sk, d], v [sk, dv]
/// and the result [sq, dv], each contiguous.
struct AttentionShape {
  int64_t batch = 1, sq = 0, sk = 0;
  int d = 0, dv = 0;
};

}  // namespace weft::cuda

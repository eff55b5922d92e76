// attention's backward kernel (attention_kernels.h) as far as the host decides it
// (attention_shape.h): the workspace layout, the blocks' shared memory against sm_75's
// 48 KiB, and the tiles its two kernels walk, which must reach every score a causal mask
// leaves open and skip only tiles entirely above the diagonal.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/cuda/attention_shape.h"

namespace weft::cuda {
namespace {

TEST(AttentionBackwardPlan, WorkspaceHoldsLAndDEach256ByteAligned) {
  // 3 problems of 33 queries: 99 floats (396 bytes) of L, then D from byte 512.
  const AttentionGradWorkspace w = attention_grad_workspace({.batch = 3, .sq = 33, .sk = 5, .d = 8, .dv = 8});
  EXPECT_EQ(w.lse, 0u);
  EXPECT_EQ(w.delta, 512u);
  EXPECT_EQ(w.bytes, 1024u);
  // 64 queries: exactly 256 bytes each, no padding.
  EXPECT_EQ(attention_grad_workspace({.batch = 1, .sq = 64, .sk = 1, .d = 1, .dv = 1}).bytes, 512u);
  EXPECT_EQ(attention_grad_workspace({.batch = 2, .sq = 0, .sk = 7, .d = 4, .dv = 4}).bytes, 0u);
  for (int64_t sq : {1, 9, 17, 63, 65, 1000}) {
    const AttentionGradWorkspace a = attention_grad_workspace({.batch = 2, .sq = sq, .sk = 3, .d = 4, .dv = 4});
    EXPECT_EQ(a.delta % 256, 0u);
    EXPECT_EQ(a.bytes % 256, 0u);
    EXPECT_GE(a.delta, sizeof(float) * 2 * sq);  // L ends before D starts
    EXPECT_GE(a.bytes, a.delta + sizeof(float) * 2 * sq);
  }
}

TEST(AttentionBackwardPlan, SharedMemoryFitsSm75AtTheLargestHeadDim) {
  const AttentionShape s{.batch = 1, .sq = 1, .sk = 1, .d = kAttentionMaxDim, .dv = kAttentionMaxDim};
  // 8·(128 + 128) + 32·(129 + 129) floats; the key side adds L and D for its tile.
  EXPECT_EQ(attention_grad_query_shared_bytes(s), 41216u);
  EXPECT_EQ(attention_grad_key_shared_bytes(s), 41472u);
  EXPECT_LE(attention_grad_key_shared_bytes(s), 48u * 1024);
  EXPECT_EQ(attention_grad_query_shared_bytes({.d = 16, .dv = 32}), sizeof(float) * (8 * 48 + 32 * 50));
}

/// Which scores (i, j) the query side's blocks visit (keys in tiles from 0 to
/// attention_key_end) and the key side's (queries in tiles from attention_query_begin),
/// as attention_kernels.cu walks them; every visited tile holds at least one score left
/// open by `causal`.
struct Visits {
  std::vector<char> queries, keys;
};

Visits walk(const AttentionShape& s, bool causal) {
  Visits v{std::vector<char>(s.sq * s.sk, 0), std::vector<char>(s.sq * s.sk, 0)};
  const int rows = kAttentionGradRows, tile = kAttentionGradTile;
  for (int64_t row0 = 0; row0 < s.sq; row0 += rows) {
    for (int64_t key0 = 0; key0 < attention_key_end(s, causal, row0, rows); key0 += tile) {
      EXPECT_TRUE(!causal || key0 <= row0 + rows - 1) << "query rows " << row0 << ", key tile " << key0;
      for (int64_t i = row0; i < row0 + rows && i < s.sq; ++i) {
        for (int64_t j = key0; j < key0 + tile && j < s.sk; ++j) v.queries[i * s.sk + j] = 1;
      }
    }
  }
  for (int64_t key0 = 0; key0 < s.sk; key0 += rows) {
    for (int64_t q0 = attention_query_begin(causal, key0, tile); q0 < s.sq; q0 += tile) {
      EXPECT_TRUE(!causal || q0 + tile - 1 >= key0) << "keys " << key0 << ", query tile " << q0;
      for (int64_t j = key0; j < key0 + rows && j < s.sk; ++j) {
        for (int64_t i = q0; i < q0 + tile && i < s.sq; ++i) v.keys[i * s.sk + j] = 1;
      }
    }
  }
  return v;
}

TEST(AttentionBackwardPlan, TilesReachEveryOpenScore) {
  for (bool causal : {false, true}) {
    for (int64_t sq : {1, 8, 9, 17, 33, 70}) {
      for (int64_t sk : {1, 9, 32, 33, 70}) {
        const AttentionShape s{.batch = 1, .sq = sq, .sk = sk, .d = 16, .dv = 16};
        const Visits v = walk(s, causal);
        int64_t open = 0, visited = 0;
        for (int64_t i = 0; i < sq; ++i) {
          for (int64_t j = 0; j < sk; ++j) {
            if (causal && j > i) continue;
            ++open;
            EXPECT_TRUE(v.queries[i * sk + j]) << "query side misses (" << i << ", " << j << ") of " << sq << "x" << sk;
            EXPECT_TRUE(v.keys[i * sk + j]) << "key side misses (" << i << ", " << j << ") of " << sq << "x" << sk;
          }
        }
        for (int64_t e = 0; e < sq * sk; ++e) visited += v.queries[e];
        if (!causal) {
          EXPECT_EQ(visited, sq * sk);
        } else if (sq == 70 && sk == 70) {
          EXPECT_LT(visited, sq * sk) << "no tile above the diagonal skipped";
        }
        EXPECT_GE(visited, open);
      }
    }
  }
}

}  // namespace
}  // namespace weft::cuda

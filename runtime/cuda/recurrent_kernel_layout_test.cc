// The persistent loop kernel's layout (recurrent_kernel_layout.h) on the host: the matmul
// partition covers C exactly once, the shared-memory rule and the launch choice on made-up
// device limits, and the choice's errors pinned.
#include "runtime/cuda/recurrent_kernel_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

TEST(RecurrentKernelLayout, PartitionCoversEveryOutputOnce) {
  for (int64_t m : {1, 3, 7, 64}) {
    for (int64_t n : {1, 5, 16, 1024}) {
      for (int64_t blocks : {1, 3, 6, 132}) {
        const MatmulPartition p = partition_matmul(m, n, blocks);
        ASSERT_LE(p.row_groups * p.col_groups, blocks);
        std::vector<int> covered(static_cast<size_t>(m * n), 0);
        for (int64_t b = 0; b < blocks; ++b) {
          const MatmulTile t = matmul_tile(p, m, n, b);
          ASSERT_LE(t.col_end - t.col_begin, p.cols_per_block);
          for (int64_t r = t.row_begin; r < t.row_end; ++r) {
            for (int64_t c = t.col_begin; c < t.col_end; ++c) ++covered[static_cast<size_t>(r * n + c)];
          }
        }
        for (int x : covered) ASSERT_EQ(x, 1) << m << "x" << n << " on " << blocks;
      }
    }
  }
}

TEST(RecurrentKernelLayout, ColumnsAreSplitFirstThenRows) {
  // An LSTM step's gates (batch 64, 4H = 1024) on 132 blocks: 8 columns each, one row group.
  MatmulPartition p = partition_matmul(64, 1024, 132);
  EXPECT_EQ(p.cols_per_block, 8);
  EXPECT_EQ(p.col_groups, 128);
  EXPECT_EQ(p.row_groups, 1);
  // Four columns on 132 blocks: one column each, the spare 33 blocks per column on rows.
  p = partition_matmul(64, 4, 132);
  EXPECT_EQ(p.col_groups, 4);
  EXPECT_EQ(p.rows_per_block, 2);
  EXPECT_EQ(p.row_groups, 32);
  EXPECT_EQ(partition_matmul(0, 4, 3).row_groups, 0);  // an empty C: no tiles
  EXPECT_EQ(matmul_tile(p, 64, 4, 200).row_end, 0);     // a block past the tiles idles
}

// Phases 0 and 2 are matmuls with an invariant B (4 × 8 and 16 × 8 floats), phase 1 a
// matmul whose B moves with the iteration.
struct ThreeMatmuls : recurrent_testing::Program {
  ThreeMatmuls() {
    buffers = {{0x1000}, {0x2000}, {0x3000, 64}, {0x4000}};
    const RecurrentPhase mm = recurrent_testing::matmul(0, 1, 3, /*m=*/2, /*n=*/8, /*k=*/4);
    phases = {mm, mm, mm};
    phases[1].b = 2;
    phases[2].k = 16, phases[2].lda = 16;
  }
};

TEST(RecurrentKernelLayout, InvariantSlicesThatFitStayOnChipInPhaseOrder) {
  const ThreeMatmuls program;
  const RecurrentProgramView view = program.view();
  // On 4 blocks each takes 2 columns: slices of 4·2·4 = 32 and 16·2·4 = 128 bytes.
  EXPECT_EQ(b_slice_bytes(program.phases[0], 4), 32u);
  EXPECT_EQ(b_slice_bytes(program.phases[2], 4), 128u);
  EXPECT_EQ(recurrent_shared_bytes(view, 4, 1 << 20), 160u);
  EXPECT_EQ(recurrent_shared_bytes(view, 4, 100), 32u);  // phase 2's does not fit after phase 0's
  EXPECT_EQ(recurrent_shared_bytes(view, 4, 20), 0u);
  // The kernel's walk under the planned bytes keeps the same slices, at these offsets.
  SharedWalk walk{160};
  EXPECT_EQ(walk.place(view, program.phases[0], 4), 0);
  EXPECT_EQ(walk.place(view, program.phases[1], 4), -1);  // B moves: global memory
  EXPECT_EQ(walk.place(view, program.phases[2], 4), 32);
  const CachedPhases some = count_cached_phases(view, 4, 32);
  EXPECT_EQ(some.cached, 1);
  EXPECT_EQ(some.cacheable, 2);
}

TEST(RecurrentKernelLayout, AWeightThatAPhaseWritesIsNoConstant) {
  ThreeMatmuls program;
  EXPECT_TRUE(constant_b(program.view(), program.phases[0]));
  // Phase 1 now writes buffer 1, phase 0's B: in place …
  program.phases[1].c = 1;
  EXPECT_FALSE(constant_b(program.view(), program.phases[0]));
  // … or through another entry that lies at its address in some iteration: 0x2000 is
  // that entry's iteration 2.
  program.buffers.push_back({0x2000 - 2 * 64, 64});
  program.phases[1].c = 4;
  program.length = 2;
  EXPECT_TRUE(constant_b(program.view(), program.phases[0]));
  program.length = 3;
  EXPECT_FALSE(constant_b(program.view(), program.phases[0]));
  EXPECT_EQ(recurrent_shared_bytes(program.view(), 4, 1 << 20), 0u);  // phases 0 and 2 read that B
}

RecurrentDeviceLimits device(int sms, uint64_t shared, int most) {
  RecurrentDeviceLimits limits;
  limits.multiprocessors = sms;
  limits.shared_per_block = shared;
  limits.cooperative = true;
  // A toy occupancy: `most` blocks, fewer as each takes more of `shared` per multiprocessor.
  limits.blocks_per_multiprocessor = [=](uint64_t bytes) {
    const uint64_t by_shared = bytes == 0 ? most : shared / bytes;
    return static_cast<int>(by_shared < static_cast<uint64_t>(most) ? by_shared : most);
  };
  return limits;
}

TEST(RecurrentKernelLayout, LaunchTakesTheMostBlocksThatKeepEveryWeightOnChip) {
  const ThreeMatmuls program;
  // Plenty of shared memory: the occupancy's 4 blocks per multiprocessor, all slices kept
  // (16 blocks: 8 columns → 1 each, 4·4 + 16·4 = 80 bytes).
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), device(4, 1 << 16, 4));
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 16);
  EXPECT_EQ(launch->threads, kRecurrentThreads);
  EXPECT_EQ(launch->shared_bytes, 80u);
  // 100 bytes per multiprocessor: at 4, 3 or 2 blocks per multiprocessor phase 2's slice
  // does not fit; at 1 (4 blocks, 32 + 128 = 160 bytes > 100) only phase 0's does.
  launch = choose_recurrent_launch(program.view(), device(4, 100, 4));
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 4);
  EXPECT_EQ(launch->shared_bytes, 32u);
  // A device on which any dynamic shared memory leaves no block resident: one block per
  // multiprocessor, every B from global memory.
  RecurrentDeviceLimits tight = device(4, 1 << 16, 4);
  tight.blocks_per_multiprocessor = [](uint64_t bytes) { return bytes == 0 ? 4 : 0; };
  launch = choose_recurrent_launch(program.view(), tight);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 4);
  EXPECT_EQ(launch->shared_bytes, 0u);
}

TEST(RecurrentKernelLayout, LaunchErrorsSayWhy) {
  const ThreeMatmuls program;
  RecurrentDeviceLimits limits = device(4, 1 << 16, 4);
  limits.cooperative = false;
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), limits);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().message,
            "persistent loop kernel: the device cannot launch cooperative kernels (cudaDevAttrCooperativeLaunch is 0), "
            "which its grid-wide barrier needs");
  launch = choose_recurrent_launch(program.view(), device(4, 1 << 16, 0));
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().message, "persistent loop kernel: the device holds no block of " +
                                        std::to_string(kRecurrentThreads) + " threads of it (occupancy 0)");
}

}  // namespace
}  // namespace weft::cuda

// The persistent loop kernel's layout (recurrent_kernel_layout.h) on the host: the matmul
// partition covers C exactly once, the shared-memory rule and the launch choice on made-up
// device limits, and the choice's errors pinned.
#include "runtime/cuda/recurrent_kernel_layout.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

// Every (output, k) of C[m, n] over k is summed by exactly one block, whatever the k
// ranges asked for (clamped to k and to the blocks), the column groups asked for, and in
// today's columns-first rule (col_groups = blocks, one range).
TEST(RecurrentKernelLayout, PartitionCoversEveryOutputAndKOnce) {
  for (int64_t m : {1, 3, 7, 64}) {
    for (int64_t n : {1, 5, 16, 1024}) {
      for (int64_t k : {1, 4, 17, 33}) {
        for (int64_t blocks : {1, 3, 6, 132}) {
          for (const auto& [groups, splits] : {std::pair<int64_t, int64_t>{blocks, 1}, {1, 2}, {2, 3}, {4, 5}, {3, 64}}) {
            const MatmulPartition p = partition_grid(m, n, k, blocks, groups, splits);
            ASSERT_LE(p.row_groups * p.col_groups * p.k_splits, blocks);
            ASSERT_LE(p.k_splits, k);
            std::vector<int> covered(static_cast<size_t>(m * n * k), 0);
            for (int64_t b = 0; b < blocks; ++b) {
              const MatmulTile t = matmul_tile(p, m, n, k, b);
              ASSERT_LE(t.col_end - t.col_begin, p.cols_per_block);
              ASSERT_LE(t.k_end - t.k_begin, p.k_per_split);
              for (int64_t r = t.row_begin; r < t.row_end; ++r) {
                for (int64_t c = t.col_begin; c < t.col_end; ++c) {
                  for (int64_t q = t.k_begin; q < t.k_end; ++q) ++covered[static_cast<size_t>((r * n + c) * k + q)];
                }
              }
            }
            for (int x : covered) {
              ASSERT_EQ(x, 1) << m << "x" << n << "x" << k << " on " << blocks << ", " << groups << " groups, "
                              << splits << " splits";
            }
          }
        }
      }
    }
  }
}

// Forced k ranges: 3 of k = 16 are 6, 6 and 4 long; 5 of k = 4 clamp to 4 of 1; 4 of
// k = 9 are 3 of 3 (ceil_div(9, 4) = 3 leaves 3 ranges); on 2 blocks at most 2.
TEST(RecurrentKernelLayout, KRangesAreClampedToKAndTheBlocks) {
  MatmulPartition p = partition_grid(8, 8, 16, 6, 6, 3);
  EXPECT_EQ(p.k_splits, 3);
  EXPECT_EQ(p.k_per_split, 6);
  EXPECT_EQ(p.col_groups, 2);  // 6 blocks / 3 ranges
  EXPECT_EQ(matmul_tile(p, 8, 8, 16, 5).k_begin, 12);
  EXPECT_EQ(matmul_tile(p, 8, 8, 16, 5).k_end, 16);
  EXPECT_EQ(matmul_tile(p, 8, 8, 16, 5).split, 2);
  p = partition_grid(8, 8, 4, 6, 6, 5);
  EXPECT_EQ(p.k_splits, 4);
  EXPECT_EQ(p.k_per_split, 1);
  p = partition_grid(8, 8, 9, 6, 6, 4);
  EXPECT_EQ(p.k_splits, 3);
  EXPECT_EQ(p.k_per_split, 3);
  EXPECT_EQ(partition_grid(8, 8, 64, 2, 2, 5).k_splits, 2);
}

TEST(RecurrentKernelLayout, ColumnsAreSplitFirstThenRows) {
  // An LSTM step's gates (batch 64, 4H = 1024) on 132 blocks: 8 columns each, one row group.
  MatmulPartition p = partition_matmul(64, 1024, 256, 132);
  EXPECT_EQ(p.cols_per_block, 8);
  EXPECT_EQ(p.col_groups, 128);
  EXPECT_EQ(p.row_groups, 1);
  // Four columns on 132 blocks: one column each, the spare 33 blocks per column on rows.
  p = partition_matmul(64, 4, 256, 132);
  EXPECT_EQ(p.col_groups, 4);
  EXPECT_EQ(p.rows_per_block, 2);
  EXPECT_EQ(p.row_groups, 32);
  EXPECT_EQ(partition_matmul(0, 4, 256, 3).row_groups, 0);  // an empty C: no tiles
  EXPECT_EQ(matmul_tile(p, 64, 4, 256, 200).row_end, 0);     // a block past the tiles idles
}

TEST(RecurrentKernelLayout, PanelsFillTheBlockWithMicroTilesThenSplitK) {
  // The suite's LSTM forward block tile (128 × 8 on 264 blocks): 32 × 2 micro-tiles of
  // 4 × 4 in one panel, each over 4 threads' share of k.
  MatmulPanelShape s = matmul_panel_shape(128, 8, kRecurrentThreads);
  EXPECT_EQ(s.tile_cols, 4);
  EXPECT_EQ(s.micro_rows, 32);
  EXPECT_EQ(s.micro_cols, 2);
  EXPECT_EQ(s.splits, 4);
  // Its backward (128 × 2): micro-tiles 4 × 2, 8 splits.
  s = matmul_panel_shape(128, 2, kRecurrentThreads);
  EXPECT_EQ(s.tile_cols, 2);
  EXPECT_EQ(s.micro_rows * s.micro_cols, 32);
  EXPECT_EQ(s.splits, 8);
  // A wide tile: panels of 16 × 16 micro-tiles (64 × 64 outputs), one thread each.
  s = matmul_panel_shape(1000, 1000, kRecurrentThreads);
  EXPECT_EQ(s.micro_cols * s.tile_cols, kPanelCols);
  EXPECT_EQ(s.micro_rows, 16);
  EXPECT_EQ(s.splits, 1);
  // One output: one micro-tile of 4 × 1, k split kChunkK ways at most.
  s = matmul_panel_shape(1, 1, kRecurrentThreads);
  EXPECT_EQ(s.tile_cols, 1);
  EXPECT_EQ(s.micro_rows * s.micro_cols, 1);
  EXPECT_EQ(s.splits, kChunkK);
  // Every shape: no more micro-tiles × splits than threads, and a reduction that fits the
  // stage.
  for (int threads : {32, 64, 128, 256}) {
    for (int64_t rows : {1, 3, 4, 5, 127, 128, 129, 1000}) {
      for (int64_t cols : {1, 2, 3, 4, 5, 63, 64, 65, 1000}) {
        s = matmul_panel_shape(rows, cols, threads);
        ASSERT_GE(s.splits, 1);
        ASSERT_LE(s.micro_rows * s.micro_cols * s.splits, threads);
        ASSERT_LE(uint64_t(s.micro_rows) * s.micro_cols * s.splits * kTileRows * s.tile_cols * sizeof(float),
                  kMatmulStageBytes);
        ASSERT_LE(s.micro_rows * kTileRows, kPanelRows);
        ASSERT_LE(s.micro_cols * s.tile_cols, kPanelCols);
      }
    }
  }
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
  // On 4 blocks each takes 2 columns: slices of 4·2·4 = 32 and 16·2·4 = 128 bytes, after
  // the matmul stage, which every block takes whatever the limit.
  const uint64_t stage = kMatmulStageBytes;
  EXPECT_EQ(matmul_stage_bytes(view), stage);
  EXPECT_EQ(b_slice_bytes(matmul_partition(view, program.phases[0], 4, 0)), 32u);
  EXPECT_EQ(b_slice_bytes(matmul_partition(view, program.phases[2], 4, 0)), 128u);
  EXPECT_EQ(recurrent_shared_bytes(view, 4, 1 << 20), stage + 160);
  EXPECT_EQ(recurrent_shared_bytes(view, 4, stage + 100), stage + 32);  // phase 2's does not fit after phase 0's
  EXPECT_EQ(recurrent_shared_bytes(view, 4, stage + 20), stage);
  EXPECT_EQ(recurrent_shared_bytes(view, 4, 0), stage);
  // The kernel's walk under the planned bytes keeps the same slices, at these offsets.
  SharedWalk walk = shared_walk(view, stage + 160);
  EXPECT_EQ(walk.place(view, program.phases[0], matmul_partition(view, program.phases[0], 4, 0)),
            static_cast<int64_t>(stage));
  EXPECT_EQ(walk.place(view, program.phases[1], matmul_partition(view, program.phases[1], 4, 0)), -1);  // B moves: global memory
  EXPECT_EQ(walk.place(view, program.phases[2], matmul_partition(view, program.phases[2], 4, 0)),
            static_cast<int64_t>(stage + 32));
  const CachedPhases some = count_cached_phases(view, 4, stage + 32);
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
  EXPECT_EQ(recurrent_shared_bytes(program.view(), 4, 1 << 20), kMatmulStageBytes);  // phases 0 and 2 read that B
}

// The table the host works out for the kernel (matmul_placements: each matmul phase's
// partition and slice offset, once per launch) is, entry by entry, what the kernel worked
// out itself at its start before (choose_matmul_partition per phase, the shared-memory
// walk): for every kernel case in f32 and bf16, on the case's blocks, 6 and an H200's
// 264, k ranges as chosen and forced (2, 3, 5), with every slice that fits on chip, with
// the stage alone and with room for about one slice; and the three matmuls' table here.
TEST(RecurrentKernelLayout, PlacementsAreWhatTheKernelWorkedOutItself) {
  for (const recurrent_testing::Case& f32 : recurrent_testing::kernel_cases()) {
    for (const recurrent_testing::Case& c : {f32, recurrent_testing::in_type(f32, ElementType::bf16)}) {
      SCOPED_TRACE(c.name);
      recurrent_testing::Storage storage = c.initial;
      const recurrent_testing::Program program = c.build(recurrent_testing::host_bases(storage));
      const RecurrentProgramView view = program.view();
      for (int64_t blocks : {static_cast<int64_t>(c.blocks), int64_t{6}, int64_t{264}}) {
        for (int k_splits : {0, 2, 3, 5}) {
          SCOPED_TRACE(std::to_string(blocks) + " blocks, k_splits " + std::to_string(k_splits));
          const uint64_t all = recurrent_shared_bytes(view, blocks, 1 << 20, k_splits);
          EXPECT_EQ(recurrent_testing::expect_placements_as_the_kernel_worked_them_out(view, blocks, all, k_splits),
                    count_cached_phases(view, blocks, all, k_splits).cached);
          recurrent_testing::expect_placements_as_the_kernel_worked_them_out(view, blocks, kMatmulStageBytes, k_splits);
          recurrent_testing::expect_placements_as_the_kernel_worked_them_out(view, blocks, kMatmulStageBytes + 64,
                                                                             k_splits);
        }
      }
    }
  }
  const ThreeMatmuls program;
  const std::vector<MatmulPlacement> table = matmul_placements(program.view(), 4, kMatmulStageBytes + 160);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].slice_offset, static_cast<int64_t>(kMatmulStageBytes));
  EXPECT_EQ(table[1].slice_offset, -1);  // B moves: global memory
  EXPECT_EQ(table[2].slice_offset, static_cast<int64_t>(kMatmulStageBytes + 32));
  EXPECT_EQ(table[2].partition.cols_per_block, 2);
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
  const uint64_t stage = kMatmulStageBytes;
  // 64 KiB per multiprocessor: at 4 blocks per multiprocessor (16 KiB each) only the stage
  // fits; at 3 (12 blocks: 8 columns → 1 each) the stage and both slices, 4·4 + 16·4 = 80
  // bytes.
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), device(4, 1 << 16, 4));
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 12);
  EXPECT_EQ(launch->threads, kRecurrentThreads);
  EXPECT_EQ(launch->shared_bytes, stage + 80);
  // The stage and 100 bytes per multiprocessor: at 4, 3 or 2 blocks per multiprocessor no
  // block with the stage is resident; at 1 (4 blocks, 32 + 128 = 160 bytes > 100) only
  // phase 0's slice fits.
  launch = choose_recurrent_launch(program.view(), device(4, stage + 100, 4));
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 4);
  EXPECT_EQ(launch->shared_bytes, stage + 32);
  // A device on which any slice beside the stage leaves no block resident: one block per
  // multiprocessor, every B from global memory, the stage only.
  RecurrentDeviceLimits tight = device(4, 1 << 16, 4);
  tight.blocks_per_multiprocessor = [=](uint64_t bytes) { return bytes <= stage ? 4 : 0; };
  launch = choose_recurrent_launch(program.view(), tight);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 4);
  EXPECT_EQ(launch->shared_bytes, stage);
}

// The cost model on ThreeMatmuls at 4 blocks: each block's tile is 2 × 2 (micro-tiles
// 4 × 2: two rows computed, not stored); phase 0's and 2's B on chip, phase 1's staged.
TEST(RecurrentKernelLayout, CostCountsTheLargestBlocksWork) {
  const ThreeMatmuls program;
  const RecurrentLaunch launch{4, kRecurrentThreads, kMatmulStageBytes + 160};
  const RecurrentCost cost = recurrent_cost(program.view(), launch);
  ASSERT_EQ(cost.matmuls.size(), 3u);
  EXPECT_TRUE(cost.matmuls[0].b_on_chip);
  EXPECT_FALSE(cost.matmuls[1].b_on_chip);
  EXPECT_TRUE(cost.matmuls[2].b_on_chip);
  EXPECT_EQ(cost.matmuls[2].fma, 2u * 2 * 16);
  EXPECT_EQ(cost.matmuls[2].issued_fma, 4u * 2 * 16);
  EXPECT_EQ(cost.matmuls[2].a_bytes, 2u * 16 * 4);
  EXPECT_EQ(cost.matmuls[1].b_bytes, 4u * 2 * 4);
  EXPECT_EQ(cost.matmuls[2].block_syncs, 2u * 1 + 2);
  EXPECT_EQ(cost.fma, 2u * 2 * (4 + 4 + 16));
  EXPECT_EQ(cost.b_bytes, 4u * 2 * 4);
  EXPECT_EQ(cost.grid_barriers, 3);
  const std::string text = describe_recurrent_cost(cost);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "phase 0: partition 1 row x 4 column groups x 1 k ranges, A 128 B across the grid, 0 B of partials, "
            "modelled 0 ns; block tile 2x2 k 4, 16 FMA (32 issued), A 32 B, B on chip, 4 block syncs");
}

// The model of the register program's phases, by hand (recurrent_kernel_layout.h's
// assumptions: 16 lane cycles per instruction and element, 126,000 lane cycles per µs
// per block, 1/blocks of 5.5 TB/s per block, 0.16 µs per block sum, 1 µs per barrier).
// Phase 0, a row phase of 3 rows × 300 f32 columns (x - mean(x)): on 2 blocks of 256
// threads the busiest block runs 2 rows of 2 column rounds; the mean's pass runs the
// load (1 instruction), the last pass all 4: 2·2·256·5·16 = 81,920 lane cycles
// (650,158 ps); it loads x in both passes and stores once, 2·300·12 = 7,200 bytes
// (7,200·2 / 5.5 B/ps = 2,618 ps); 2 block sums (320,000 ps). Phase 1, an elementwise
// copy of the same 900 elements: 2 rounds of 512 threads, 2·256·2·16 = 16,384 lane
// cycles (130,031 ps), ceil(900 / 2)·8 = 3,600 bytes (1,309 ps). With the row phase's
// term dropped the iteration would be 2,131,340 ps.
TEST(RecurrentKernelLayout, CostModelsRowAndElementwisePhasesAndBarriers) {
  using namespace recurrent_testing;
  Program program;
  program.buffers = {{0x1000}, {0x2000}, {0x3000}};
  const ElementMap x{0, 0, 300, 1}, y{1, 0, 300, 1}, z{2, 0, 300, 1};
  program.row(3, 300, {x}, {y},
              {load(0, 0), row_reduce(1, 0, kRowMean), op(Op::Sub, 2, 0, 1), store(0, 2)});
  program.elementwise(3, 300, {y}, {z}, {load(0, 0), store(0, 0)});
  RecurrentCost cost = recurrent_cost(program.view(), RecurrentLaunch{2, kRecurrentThreads, kMatmulStageBytes});
  ASSERT_EQ(cost.programs.size(), 2u);
  const ProgramPhaseModel& row = cost.programs[0].model;
  EXPECT_EQ(cost.programs[0].kind, PhaseKind::row);
  EXPECT_EQ(row.busy_blocks, 2);
  EXPECT_EQ(row.passes, 2);
  EXPECT_EQ(row.lane_cycles, 81'920u);
  EXPECT_EQ(row.bytes, 7'200u);
  EXPECT_EQ(row.block_sums, 2u);
  EXPECT_EQ(row.ps, 650'158u + 2'618u + 320'000u);
  const ProgramPhaseModel& copy = cost.programs[1].model;
  EXPECT_EQ(copy.busy_blocks, 2);
  EXPECT_EQ(copy.passes, 1);
  EXPECT_EQ(copy.lane_cycles, 16'384u);
  EXPECT_EQ(copy.bytes, 3'600u);
  EXPECT_EQ(copy.ps, 130'031u + 1'309u);
  EXPECT_EQ(cost.row_ps, 972'776u);
  EXPECT_EQ(cost.elementwise_ps, 131'340u);
  EXPECT_EQ(cost.modelled_ps, 0u);
  EXPECT_EQ(cost.barrier_ps, 2'000'000u);
  EXPECT_EQ(cost.iteration_ps, 3'104'116u);
  const std::string text = describe_recurrent_cost(cost);
  EXPECT_NE(text.find("phase 0: row, 2 blocks busy, 2 passes, 81920 lane cycles, 7200 B, 2 block sums, modelled 972 ns\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("per iteration, modelled: matmuls 0 ns + row phases 972 ns + elementwise phases 131 ns + 2 grid "
                      "barriers 2000 ns = 3104 ns\n"),
            std::string::npos)
      << text;
  // On 4 blocks a row phase of 3 rows keeps 3 busy, and the busy block gets only its
  // quarter of the bandwidth: 1 row, 2·256·5·16 = 40,960 lane cycles (325,079 ps), 3,600
  // bytes at 4 shares (2,618 ps), one block sum.
  cost = recurrent_cost(program.view(), RecurrentLaunch{4, kRecurrentThreads, kMatmulStageBytes});
  EXPECT_EQ(cost.programs[0].model.busy_blocks, 3);
  EXPECT_EQ(cost.programs[0].model.ps, 325'079u + 2'618u + 160'000u);
}

// The chooser's model on a small case: one k range when the barrier a split adds costs
// more than the bytes it saves, and no 1-row tiles whose 4-row micro-tiles waste FMAs
// (ThreeMatmuls keeps today's columns-first partition); forced ranges are taken as asked.
TEST(RecurrentKernelLayout, ChooserKeepsColumnsFirstWhenSplittingCostsMore) {
  const ThreeMatmuls program;
  const RecurrentProgramView view = program.view();
  for (const RecurrentPhase& ph : program.phases) {
    const MatmulPartition chosen = matmul_partition(view, ph, 4, 0), today = partition_matmul(ph.m, ph.n, ph.k, 4);
    EXPECT_EQ(chosen.k_splits, 1);
    EXPECT_EQ(chosen.col_groups, today.col_groups);
    EXPECT_EQ(chosen.row_groups, today.row_groups);
  }
  EXPECT_EQ(matmul_partition(view, program.phases[2], 4, 2).k_splits, 2);
  EXPECT_EQ(recurrent_workspace_bytes(view, 4), 0u);
  EXPECT_EQ(recurrent_workspace_bytes(view, 4, 2), 2u * 2 * 8 * 4);  // 2 ranges of a 2 × 8 C
}

// The suite's lstm_seq at the paper preset (batch 128, hidden 512) on an H200 (132
// multiprocessors, 227 KiB of shared memory per block, 228 KiB per multiprocessor, 1 KiB
// of it reserved per block; 2 blocks of 256 threads at ptxas's 125–128 registers): one
// layer's forward iteration (gates = h·W, 128 × 2048 × 512, then the cell) and backward
// iteration (the cell's gradient, dh = dgates·Wᵀ, 128 × 512 × 2048, then dh + dy). The
// figures runtime/cuda/README.md quotes.
// lstm_seq's loops at the paper preset, one layer (batch 128, hidden 512, gates 2048), in
// `type`: the forward's h·W_hhᵀ then its cell, the backward's cell gradient, dgates·W_hh
// and the next one; h's slot advances by one [128, 512] per iteration.
recurrent_testing::Program lstm_forward(ElementType type) {
  const int64_t h_bytes = 128 * 512 * (type == ElementType::f32 ? 4 : 2);
  recurrent_testing::Program forward;
  forward.buffers = {{0x1000, h_bytes, 0, 0, type}, {0x100000, 0, 0, 0, type}, {0x200000, 0, 0, 0, type}};
  forward.phases = {recurrent_testing::matmul(0, 1, 2, 128, 2048, 512)};
  forward.elementwise(128, 512, {}, {}, {});
  return forward;
}

recurrent_testing::Program lstm_backward(ElementType type) {
  const int64_t h_bytes = 128 * 512 * (type == ElementType::f32 ? 4 : 2);
  recurrent_testing::Program backward;
  backward.buffers = {{0x1000, h_bytes, 0, 0, type}, {0x100000, 0, 0, 0, type}, {0x200000, 0, 0, 0, type}};
  backward.elementwise(128, 512, {}, {}, {});
  RecurrentPhase dh = recurrent_testing::matmul(0, 1, 2, 128, 512, 2048);
  dh.transpose_b = 1, dh.ldb = 2048;
  backward.phases.push_back(dh);
  backward.elementwise(128, 512, {}, {}, {});
  return backward;
}

TEST(RecurrentKernelLayout, CostOfTheSuitesLstmOnAnH200) {
  const RecurrentDeviceLimits h200 = recurrent_testing::h200_limits();
  recurrent_testing::Program forward = lstm_forward(ElementType::f32);
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(forward.view(), h200);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 264);
  // The chosen partition: 2 row groups × 32 column groups × 4 k ranges (256 blocks), each
  // block 64 × 64 outputs over 128 of k, its 128 × 64 slice of W (32 KiB) on chip.
  EXPECT_EQ(launch->shared_bytes, kMatmulStageBytes + 128 * 64 * 4);
  EXPECT_EQ(launch->workspace_bytes, 4u * 128 * 2048 * 4);  // 4 partial Cs
  RecurrentCost cost = recurrent_cost(forward.view(), *launch);
  std::printf("lstm_seq forward, %d blocks, %zu shared bytes:\n%s", launch->blocks, launch->shared_bytes,
              describe_recurrent_cost(cost).c_str());
  ASSERT_EQ(cost.matmuls.size(), 1u);
  EXPECT_EQ(cost.matmuls[0].partition.row_groups, 2);
  EXPECT_EQ(cost.matmuls[0].partition.col_groups, 32);
  EXPECT_EQ(cost.matmuls[0].partition.k_splits, 4);
  EXPECT_EQ(cost.fma, 64u * 64 * 128);
  EXPECT_EQ(cost.a_bytes, 64u * 128 * 4);
  EXPECT_EQ(cost.b_bytes, 0u);
  EXPECT_EQ(cost.grid_a_bytes, 8u << 20);  // A across the grid: 8 MiB (columns first: 64 MiB)
  EXPECT_EQ(cost.matmuls[0].model.partial_bytes, 8u << 20);
  EXPECT_EQ(cost.grid_barriers, 3);  // one more: before the partials are summed
  const MatmulModel today = model_matmul(128, 2048, partition_matmul(128, 2048, 512, 264), true);
  std::printf("columns first: A %llu B across the grid, modelled %llu ns\n",
              static_cast<unsigned long long>(today.a_bytes), static_cast<unsigned long long>(today.ps / 1000));
  EXPECT_EQ(today.a_bytes, 64u << 20);  // 256 column groups of 8, each reading all of h (256 KiB)
  EXPECT_LT(cost.modelled_ps, today.ps);

  recurrent_testing::Program backward = lstm_backward(ElementType::f32);
  launch = choose_recurrent_launch(backward.view(), h200);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_EQ(launch->blocks, 264);
  // 2 row groups × 8 column groups × 16 k ranges (256 blocks): 64 × 64 outputs over 128
  // of k, the 128 × 64 slice of Wᵀ on chip.
  EXPECT_EQ(launch->shared_bytes, kMatmulStageBytes + 128 * 64 * 4);
  EXPECT_EQ(launch->workspace_bytes, 16u * 128 * 512 * 4);
  cost = recurrent_cost(backward.view(), *launch);
  std::printf("lstm_seq backward, %d blocks, %zu shared bytes:\n%s", launch->blocks, launch->shared_bytes,
              describe_recurrent_cost(cost).c_str());
  ASSERT_EQ(cost.matmuls.size(), 1u);
  EXPECT_EQ(cost.matmuls[0].partition.row_groups, 2);
  EXPECT_EQ(cost.matmuls[0].partition.col_groups, 8);
  EXPECT_EQ(cost.matmuls[0].partition.k_splits, 16);
  EXPECT_EQ(cost.fma, 64u * 64 * 128);
  EXPECT_EQ(cost.grid_a_bytes, 8u << 20);  // columns first: 256 MiB
  EXPECT_EQ(cost.matmuls[0].model.partial_bytes, 8u << 20);
  EXPECT_EQ(cost.grid_barriers, 4);
  const MatmulModel today_dh = model_matmul(128, 512, partition_matmul(128, 512, 2048, 264), true);
  std::printf("columns first: A %llu B across the grid, modelled %llu ns\n",
              static_cast<unsigned long long>(today_dh.a_bytes), static_cast<unsigned long long>(today_dh.ps / 1000));
  EXPECT_EQ(today_dh.a_bytes, 256u << 20);  // 256 column groups of 2, each reading all of dgates (1 MiB)
  EXPECT_LT(cost.modelled_ps, today_dh.ps);
}

// bf16 and f16 matmuls run on tensor cores from sm_80 (the launch's choice, and what the
// loop's description says), as SIMT FMAs before; f32 programs never ask for them.
TEST(RecurrentKernelLayout, TensorCoresOnSm80AndLaterForLowPrecisionMatmuls) {
  recurrent_testing::Program program;
  program.buffers = {{0x1000, 0x40000, 0, 0, ElementType::bf16}, {0x100000, 0, 0, 0, ElementType::bf16},
                     {0x200000}};
  program.phases = {recurrent_testing::matmul(0, 1, 2, 16, 64, 32), recurrent_testing::matmul(0, 1, 2, 16, 64, 32)};
  RecurrentDeviceLimits limits = device(4, 1 << 16, 4);
  limits.compute_capability = 75;
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(program.view(), limits);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_FALSE(launch->tensor_cores);
  EXPECT_EQ(describe_matmul_math(program.view(), *launch), "2 bf16 matmuls as SIMT FMAs (no tensor cores before sm_80)");
  limits.compute_capability = 90;
  launch = choose_recurrent_launch(program.view(), limits);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_TRUE(launch->tensor_cores);
  EXPECT_EQ(describe_matmul_math(program.view(), *launch), "2 bf16 matmuls on tensor cores (mma.sync m16n8k16)");
  // A of f16 and B of bf16: no mma takes both, so SIMT; one f16 matmul left.
  program.buffers[0].type = ElementType::f16;
  program.phases[1].a = 2;
  program.buffers[2].type = ElementType::f16;
  program.phases[1].b = 2;
  EXPECT_FALSE(tensor_core_phase(program.view(), program.phases[0]));
  EXPECT_EQ(describe_matmul_math(program.view(), *launch), "1 f16 matmul on tensor cores (mma.sync m16n8k16)");
  for (StepAddress& b : program.buffers) b.type = ElementType::f32;
  launch = choose_recurrent_launch(program.view(), limits);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_FALSE(launch->tensor_cores);
  EXPECT_EQ(describe_matmul_math(program.view(), *launch), "");
}

// An elementwise phase has no A or B (a and b are -1): matmul_math and tensor_core_phase
// answer f32 without reading buffers[-1] (here a bf16 sentinel before the view's array).
TEST(RecurrentKernelLayout, MatmulMathOfAnElementwisePhaseReadsNoBuffer) {
  const StepAddress buffers[2] = {{0x1000, 0, 0, 0, ElementType::bf16}, {0x2000}};
  RecurrentProgramView view;
  view.buffers = buffers + 1;
  view.buffer_count = 1;
  const RecurrentPhase elementwise;  // kind elementwise, a = b = -1
  const MatmulMath math = matmul_math(view, elementwise);
  EXPECT_EQ(math.a_bytes, 4);
  EXPECT_EQ(math.b_bytes, 4);
  EXPECT_FALSE(math.tensor_cores);
  EXPECT_FALSE(tensor_core_phase(view, elementwise));
}

// The tensor-core panel: tiles down first (up to 128 rows), then across as the warps'
// 8 tiles each allow (up to 64 columns).
TEST(RecurrentKernelLayout, MmaPanelsFillTheWarpsTilesDownFirst) {
  const auto shape = [](int64_t rows, int64_t cols, int warps) {
    const MmaPanelShape s = mma_panel_shape(rows, cols, warps);
    return std::pair{s.down, s.across};
  };
  EXPECT_EQ(shape(1, 1, 8), std::pair(1, 1));
  EXPECT_EQ(shape(17, 9, 8), std::pair(2, 2));
  EXPECT_EQ(shape(64, 64, 8), std::pair(4, 8));
  EXPECT_EQ(shape(300, 300, 8), std::pair(8, 8));  // 64 tiles: 8 per warp
  EXPECT_EQ(shape(300, 300, 2), std::pair(8, 2));  // 16 tiles: 8 per warp
  EXPECT_EQ(shape(300, 300, 1), std::pair(8, 1));
  EXPECT_EQ(shape(16, 300, 2), std::pair(1, 8));   // 8 across at most (64 columns)
}

// The suite's lstm_seq at the paper preset (batch 128, hidden 512) with its loop body in
// bf16 (h, W and the gates bf16: autocast's loop bodies), on an H200 model (sm_90:
// tensor cores), forward and backward: the model's figures runtime/cuda/README.md and
// bench/RESULTS.md quote (a model, not a measurement).
TEST(RecurrentKernelLayout, CostOfTheSuitesLstmInBf16OnAnH200) {
  const RecurrentDeviceLimits h200 = recurrent_testing::h200_limits();
  recurrent_testing::Program forward = lstm_forward(ElementType::bf16);
  StatusOr<RecurrentLaunch> launch = choose_recurrent_launch(forward.view(), h200);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  EXPECT_TRUE(launch->tensor_cores);
  RecurrentCost cost = recurrent_cost(forward.view(), *launch);
  std::printf("lstm_seq forward in bf16, %d blocks, %zu shared bytes, %s:\n%s", launch->blocks, launch->shared_bytes,
              describe_matmul_math(forward.view(), *launch).c_str(), describe_recurrent_cost(cost).c_str());
  ASSERT_EQ(cost.matmuls.size(), 1u);
  const MatmulPhaseCost& gates = cost.matmuls[0];
  // Whole mma tiles: a block's tile rounded up to 16 × 8 × 16 issues no more than its FMAs
  // here (the paper sizes tile evenly).
  EXPECT_EQ(gates.issued_fma, gates.fma);
  // A is bf16: 2 bytes an element across the grid and per block.
  EXPECT_EQ(gates.a_bytes, static_cast<uint64_t>(gates.rows) * static_cast<uint64_t>(gates.k) * 2 *
                               static_cast<uint64_t>(ceil_div(gates.cols, kPanelCols)));
  const MatmulModel as_f32 = model_matmul(128, 2048, gates.partition, true);
  EXPECT_LT(gates.model.ps, as_f32.ps);  // the same partition costs less on tensor cores

  recurrent_testing::Program backward = lstm_backward(ElementType::bf16);
  launch = choose_recurrent_launch(backward.view(), h200);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  cost = recurrent_cost(backward.view(), *launch);
  std::printf("lstm_seq backward in bf16, %d blocks, %zu shared bytes:\n%s", launch->blocks, launch->shared_bytes,
              describe_recurrent_cost(cost).c_str());
  ASSERT_EQ(cost.matmuls.size(), 1u);
  EXPECT_EQ(cost.matmuls[0].issued_fma, cost.matmuls[0].fma);
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
  // Not even the matmul stage leaves a block resident.
  limits = device(4, 1 << 16, 4);
  limits.blocks_per_multiprocessor = [](uint64_t bytes) { return bytes == 0 ? 4 : 0; };
  launch = choose_recurrent_launch(program.view(), limits);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().message, "persistent loop kernel: the device holds no block of " +
                                        std::to_string(kRecurrentThreads) + " threads with the " +
                                        std::to_string(kMatmulStageBytes) +
                                        " bytes of shared memory its matmul phases stage through");
}

}  // namespace
}  // namespace weft::cuda

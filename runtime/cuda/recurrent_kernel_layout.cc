#include "runtime/cuda/recurrent_kernel_layout.h"

#include <string>
#include <utility>

namespace weft::cuda {

uint64_t recurrent_shared_bytes(const RecurrentProgramView& program, int64_t blocks, uint64_t limit) {
  SharedWalk walk = shared_walk(program, limit);
  for (int32_t i = 0; i < program.phase_count; ++i) walk.place(program, program.phases[i], blocks);
  return walk.used;
}

CachedPhases count_cached_phases(const RecurrentProgramView& program, int64_t blocks, uint64_t shared_bytes) {
  CachedPhases count;
  SharedWalk walk = shared_walk(program, shared_bytes);
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (walk.place(program, ph, blocks) >= 0) ++count.cached;
    if (constant_b(program, ph) && b_slice_bytes(ph, blocks) > 0) {
      ++count.cacheable;
    }
  }
  return count;
}

RecurrentCost recurrent_cost(const RecurrentProgramView& program, const RecurrentLaunch& launch) {
  RecurrentCost cost;
  cost.grid_barriers = program.phase_count;
  SharedWalk walk = shared_walk(program, launch.shared_bytes);
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    const bool on_chip = walk.place(program, ph, launch.blocks) >= 0;
    if (ph.kind != PhaseKind::matmul) continue;
    const MatmulPartition part = partition_matmul(ph.m, ph.n, launch.blocks);
    const MatmulTile tile = matmul_tile(part, ph.m, ph.n, 0);
    MatmulPhaseCost c;
    c.phase = i, c.b_on_chip = on_chip, c.k = ph.k;
    c.rows = tile.row_end - tile.row_begin, c.cols = tile.col_end - tile.col_begin;
    if (c.rows > 0 && c.cols > 0 && launch.threads > 0) {
      const MatmulPanelShape shape = matmul_panel_shape(c.rows, c.cols, launch.threads);
      const int64_t panel_rows = int64_t{shape.micro_rows} * kTileRows;
      const int64_t panel_cols = int64_t{shape.micro_cols} * shape.tile_cols;
      const auto k = static_cast<uint64_t>(ph.k);
      const auto row_panels = static_cast<uint64_t>(ceil_div(c.rows, panel_rows));
      const auto col_panels = static_cast<uint64_t>(ceil_div(c.cols, panel_cols));
      c.fma = static_cast<uint64_t>(c.rows * c.cols) * k;
      c.issued_fma = static_cast<uint64_t>(ceil_div(c.rows, kTileRows) * kTileRows *
                                           ceil_div(c.cols, shape.tile_cols) * shape.tile_cols) * k;
      c.a_bytes = col_panels * static_cast<uint64_t>(c.rows) * k * sizeof(float);
      c.b_bytes = on_chip ? 0 : row_panels * static_cast<uint64_t>(c.cols) * k * sizeof(float);
      c.block_syncs = row_panels * col_panels * (2 * static_cast<uint64_t>(ceil_div(ph.k, kChunkK)) + 2);
    }
    cost.fma += c.fma, cost.issued_fma += c.issued_fma, cost.a_bytes += c.a_bytes, cost.b_bytes += c.b_bytes;
    cost.matmuls.push_back(c);
  }
  return cost;
}

std::string describe_recurrent_cost(const RecurrentCost& cost) {
  std::string text;
  for (const MatmulPhaseCost& c : cost.matmuls) {
    text += "phase " + std::to_string(c.phase) + ": block tile " + std::to_string(c.rows) + "x" +
            std::to_string(c.cols) + " k " + std::to_string(c.k) + ", " + std::to_string(c.fma) + " FMA (" +
            std::to_string(c.issued_fma) + " issued), A " + std::to_string(c.a_bytes) + " B, B " +
            (c.b_on_chip ? std::string("on chip") : std::to_string(c.b_bytes) + " B") + ", " +
            std::to_string(c.block_syncs) + " block syncs\n";
  }
  text += "per iteration, per block: " + std::to_string(cost.fma) + " FMA (" + std::to_string(cost.issued_fma) +
          " issued), " + std::to_string(cost.a_bytes) + " B of A and " + std::to_string(cost.b_bytes) +
          " B of B from global memory, " + std::to_string(cost.grid_barriers) + " grid barriers\n";
  return text;
}

StatusOr<RecurrentLaunch> choose_recurrent_launch(const RecurrentProgramView& program,
                                                  const RecurrentDeviceLimits& limits) {
  if (!limits.cooperative) {
    return Error("persistent loop kernel: the device cannot launch cooperative kernels (cudaDevAttrCooperativeLaunch "
                 "is 0), which its grid-wide barrier needs");
  }
  const int most = limits.blocks_per_multiprocessor(0);
  if (most < 1 || limits.multiprocessors < 1) {
    return Error("persistent loop kernel: the device holds no block of " + std::to_string(kRecurrentThreads) +
                 " threads of it (occupancy 0)");
  }
  // The most blocks per multiprocessor at which every constant B stays on chip; else one
  // block per multiprocessor, the most shared memory each, keeping what fits (nothing,
  // when even that does not leave the block resident: every B from global memory, the
  // matmul stage all the shared memory).
  const auto launch_at = [&](int per_sm) {
    const int64_t blocks = static_cast<int64_t>(per_sm) * limits.multiprocessors;
    const uint64_t shared = recurrent_shared_bytes(program, blocks, limits.shared_per_block / per_sm);
    const bool resident = limits.blocks_per_multiprocessor(shared) >= per_sm;
    const CachedPhases count = count_cached_phases(program, blocks, shared);
    return std::pair{RecurrentLaunch{static_cast<int>(blocks), kRecurrentThreads, resident ? shared : 0},
                     resident && count.cached == count.cacheable};
  };
  for (int per_sm = most; per_sm > 1; --per_sm) {
    if (const auto [launch, all_on_chip] = launch_at(per_sm); all_on_chip) return launch;
  }
  if (const auto [launch, all_on_chip] = launch_at(1); launch.shared_bytes > 0 || all_on_chip) return launch;
  const uint64_t stage = matmul_stage_bytes(program);
  if (stage > limits.shared_per_block || limits.blocks_per_multiprocessor(stage) < 1) {
    return Error("persistent loop kernel: the device holds no block of " + std::to_string(kRecurrentThreads) +
                 " threads with the " + std::to_string(stage) +
                 " bytes of shared memory its matmul phases stage through");
  }
  return RecurrentLaunch{limits.multiprocessors, kRecurrentThreads, stage};
}

}  // namespace weft::cuda

#include "runtime/cuda/recurrent_kernel_layout.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace weft::cuda {

uint64_t recurrent_workspace_bytes(const RecurrentProgramView& program, int64_t blocks, int k_splits) {
  uint64_t most = 0;
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (ph.kind != PhaseKind::matmul) continue;
    const MatmulPartition part = matmul_partition(program, ph, blocks, k_splits);
    if (part.k_splits < 2) continue;
    const uint64_t bytes = static_cast<uint64_t>(part.k_splits * ph.m * ph.n) * sizeof(float);
    most = bytes > most ? bytes : most;
  }
  return most;
}

namespace {

/// The kernel's table and the bytes the walk over `shared_bytes` used: the one walk of
/// the phases that matmul_placements and recurrent_shared_bytes each read half of.
struct SharedLayout {
  std::vector<MatmulPlacement> table;
  uint64_t used = 0;
};

SharedLayout shared_layout(const RecurrentProgramView& program, int64_t blocks, uint64_t shared_bytes,
                           int k_splits) {
  SharedLayout layout{std::vector<MatmulPlacement>(static_cast<size_t>(program.phase_count))};
  SharedWalk walk = shared_walk(program, shared_bytes);
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (ph.kind != PhaseKind::matmul) continue;
    MatmulPlacement& entry = layout.table[static_cast<size_t>(i)];
    entry.partition = matmul_partition(program, ph, blocks, k_splits);
    entry.slice_offset = walk.place(program, ph, entry.partition);
  }
  layout.used = walk.used;
  return layout;
}

}  // namespace

std::vector<MatmulPlacement> matmul_placements(const RecurrentProgramView& program, int64_t blocks,
                                               uint64_t shared_bytes, int k_splits) {
  return shared_layout(program, blocks, shared_bytes, k_splits).table;
}

uint64_t recurrent_shared_bytes(const RecurrentProgramView& program, int64_t blocks, uint64_t limit, int k_splits) {
  return shared_layout(program, blocks, limit, k_splits).used;
}

CachedPhases count_cached_phases(const RecurrentProgramView& program, int64_t blocks, uint64_t shared_bytes,
                                 int k_splits) {
  CachedPhases count;
  const std::vector<MatmulPlacement> table = matmul_placements(program, blocks, shared_bytes, k_splits);
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    const MatmulPlacement& place = table[static_cast<size_t>(i)];
    if (place.slice_offset >= 0) ++count.cached;
    // constant_b first: an elementwise phase has no B to ask the type of.
    if (constant_b(program, ph) && b_slice_bytes(place.partition, element_bytes(program.buffers[ph.b].type)) > 0) {
      ++count.cacheable;
    }
  }
  return count;
}

namespace {

// The bytes one element's loads (instructions [0, end) of `ph`'s program) or stores move.
struct ElementBytes {
  uint64_t loads = 0, stores = 0;
};
ElementBytes element_bytes_moved(const RecurrentProgramView& p, const RecurrentPhase& ph, int32_t end) {
  ElementBytes bytes;
  for (int32_t i = 0; i < end; ++i) {
    const CellInstr& in = p.instrs[ph.first_instr + i];
    if (in.op != kLoadOp && in.op != kStoreOp) continue;
    const int32_t map = ph.first_map + in.a + (in.op == kStoreOp ? ph.operand_count : 0);
    const auto size = static_cast<uint64_t>(element_bytes(p.buffers[p.maps[map].buffer].type));
    (in.op == kLoadOp ? bytes.loads : bytes.stores) += size;
  }
  return bytes;
}

}  // namespace

ProgramPhaseModel model_program_phase(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t blocks,
                                      int threads) {
  ProgramPhaseModel m;
  if (blocks <= 0 || threads <= 0 || ph.rows <= 0 || ph.cols <= 0 || ph.kind == PhaseKind::matmul) return m;
  const auto lanes = static_cast<uint64_t>(threads);
  const ElementBytes all = element_bytes_moved(p, ph, ph.instr_count);
  if (ph.kind == PhaseKind::elementwise) {
    const int64_t elements = ph.rows * ph.cols;
    m.busy_blocks = std::min(blocks, ceil_div(elements, threads));
    m.passes = 1;
    m.lane_cycles = static_cast<uint64_t>(ceil_div(elements, blocks * threads)) * lanes *
                    static_cast<uint64_t>(ph.instr_count) * kModelInstrLaneCycles;
    m.bytes = static_cast<uint64_t>(ceil_div(elements, blocks)) * (all.loads + all.stores);
  } else {
    // One pass per reduction over the instructions before it, then the whole program.
    uint64_t instrs = static_cast<uint64_t>(ph.instr_count), loads = all.loads, reductions = 0;
    for (int32_t i = 0; i < ph.instr_count; ++i) {
      if (p.instrs[ph.first_instr + i].op != kRowReduceOp) continue;
      instrs += static_cast<uint64_t>(i);
      loads += element_bytes_moved(p, ph, i).loads;
      ++reductions;
    }
    const auto rows = static_cast<uint64_t>(ceil_div(ph.rows, blocks));
    m.busy_blocks = std::min(blocks, ph.rows);
    m.passes = static_cast<int64_t>(reductions) + 1;
    m.lane_cycles = rows * static_cast<uint64_t>(ceil_div(ph.cols, threads)) * lanes * instrs * kModelInstrLaneCycles;
    m.bytes = rows * static_cast<uint64_t>(ph.cols) * (loads + all.stores);
    m.block_sums = rows * reductions;
  }
  m.ps = m.lane_cycles * 1'000'000 / kModelBlockFmaPerUs +
         m.bytes * static_cast<uint64_t>(blocks) * 1'000'000 / kModelL2BytesPerUs + m.block_sums * kModelBlockSumPs;
  return m;
}

RecurrentCost recurrent_cost(const RecurrentProgramView& program, const RecurrentLaunch& launch) {
  RecurrentCost cost;
  cost.grid_barriers = program.phase_count;
  cost.barrier_ps = static_cast<uint64_t>(program.phase_count) * kModelGridBarrierPs;
  const std::vector<MatmulPlacement> table =
      matmul_placements(program, launch.blocks, launch.shared_bytes, launch.k_splits);
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (ph.kind != PhaseKind::matmul) {
      const ProgramPhaseCost c{i, ph.kind, model_program_phase(program, ph, launch.blocks, launch.threads)};
      (ph.kind == PhaseKind::row ? cost.row_ps : cost.elementwise_ps) += c.model.ps;
      cost.programs.push_back(c);
      continue;
    }
    const MatmulPartition& part = table[static_cast<size_t>(i)].partition;
    const bool on_chip = table[static_cast<size_t>(i)].slice_offset >= 0;
    const MatmulTile tile = matmul_tile(part, ph.m, ph.n, ph.k, 0);
    MatmulPhaseCost c;
    c.phase = i, c.b_on_chip = on_chip, c.k = tile.k_end - tile.k_begin;
    c.partition = part;
    const MatmulMath math = matmul_math(program, ph);
    c.model = model_matmul(ph.m, ph.n, part, on_chip, math);
    cost.grid_barriers += c.model.barriers;
    cost.grid_a_bytes += c.model.a_bytes, cost.modelled_ps += c.model.ps;
    c.rows = tile.row_end - tile.row_begin, c.cols = tile.col_end - tile.col_begin;
    if (c.rows > 0 && c.cols > 0 && launch.threads > 0) {
      const bool mma = launch.tensor_cores && math.tensor_cores;
      const MatmulPanelShape shape = matmul_panel_shape(c.rows, c.cols, launch.threads);
      const MmaPanelShape mma_shape = mma_panel_shape(c.rows, c.cols, launch.threads / 32);
      const int64_t panel_rows = mma ? int64_t{mma_shape.down} * kMmaRows : int64_t{shape.micro_rows} * kTileRows;
      const int64_t panel_cols =
          mma ? int64_t{mma_shape.across} * kMmaCols : int64_t{shape.micro_cols} * shape.tile_cols;
      const auto k = static_cast<uint64_t>(c.k);
      const auto row_panels = static_cast<uint64_t>(ceil_div(c.rows, panel_rows));
      const auto col_panels = static_cast<uint64_t>(ceil_div(c.cols, panel_cols));
      c.fma = static_cast<uint64_t>(c.rows * c.cols) * k;
      c.issued_fma = mma ? issued_mma_fma(c.rows, c.cols, c.k) : issued_fma(c.rows, c.cols, c.k);
      c.a_bytes = col_panels * static_cast<uint64_t>(c.rows) * k * static_cast<uint64_t>(math.a_bytes);
      c.b_bytes = on_chip ? 0 : row_panels * static_cast<uint64_t>(c.cols) * k * static_cast<uint64_t>(math.b_bytes);
      c.block_syncs = row_panels * col_panels * (2 * static_cast<uint64_t>(ceil_div(c.k, kChunkK)) + 2);
    }
    cost.fma += c.fma, cost.issued_fma += c.issued_fma, cost.a_bytes += c.a_bytes, cost.b_bytes += c.b_bytes;
    cost.matmuls.push_back(c);
  }
  cost.iteration_ps = cost.modelled_ps + cost.row_ps + cost.elementwise_ps + cost.barrier_ps;
  return cost;
}

std::string describe_recurrent_cost(const RecurrentCost& cost) {
  std::string text;
  for (const MatmulPhaseCost& c : cost.matmuls) {
    const MatmulPartition& p = c.partition;
    text += "phase " + std::to_string(c.phase) + ": partition " + std::to_string(p.row_groups) + " row x " +
            std::to_string(p.col_groups) + " column groups x " + std::to_string(p.k_splits) + " k ranges, A " +
            std::to_string(c.model.a_bytes) + " B across the grid, " + std::to_string(c.model.partial_bytes) +
            " B of partials, modelled " + std::to_string(c.model.ps / 1000) + " ns; block tile " + std::to_string(c.rows) + "x" +
            std::to_string(c.cols) + " k " + std::to_string(c.k) + ", " + std::to_string(c.fma) + " FMA (" +
            std::to_string(c.issued_fma) + " issued), A " + std::to_string(c.a_bytes) + " B, B " +
            (c.b_on_chip ? std::string("on chip") : std::to_string(c.b_bytes) + " B") + ", " +
            std::to_string(c.block_syncs) + " block syncs\n";
  }
  for (const ProgramPhaseCost& c : cost.programs) {
    const ProgramPhaseModel& m = c.model;
    text += "phase " + std::to_string(c.phase) + ": " + (c.kind == PhaseKind::row ? "row" : "elementwise") + ", " +
            std::to_string(m.busy_blocks) + " blocks busy, " + std::to_string(m.passes) + " passes, " +
            std::to_string(m.lane_cycles) + " lane cycles, " + std::to_string(m.bytes) + " B, " +
            std::to_string(m.block_sums) + " block sums, modelled " + std::to_string(m.ps / 1000) + " ns\n";
  }
  text += "per iteration, per block: " + std::to_string(cost.fma) + " FMA (" + std::to_string(cost.issued_fma) +
          " issued), " + std::to_string(cost.a_bytes) + " B of A and " + std::to_string(cost.b_bytes) +
          " B of B from global memory, " + std::to_string(cost.grid_barriers) + " grid barriers; A " + std::to_string(cost.grid_a_bytes) +
          " B across the grid, the matmuls modelled at " + std::to_string(cost.modelled_ps / 1000) + " ns\n";
  text += "per iteration, modelled: matmuls " + std::to_string(cost.modelled_ps / 1000) + " ns + row phases " +
          std::to_string(cost.row_ps / 1000) + " ns + elementwise phases " + std::to_string(cost.elementwise_ps / 1000) +
          " ns + " + std::to_string(cost.programs.size() + cost.matmuls.size()) + " grid barriers " +
          std::to_string(cost.barrier_ps / 1000) + " ns = " + std::to_string(cost.iteration_ps / 1000) + " ns\n";
  return text;
}

namespace {

StatusOr<RecurrentLaunch> choose_blocks(const RecurrentProgramView& program, const RecurrentDeviceLimits& limits) {
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
    return std::pair{RecurrentLaunch{static_cast<int>(blocks), kRecurrentThreads, resident ? shared : 0,
                                     recurrent_workspace_bytes(program, blocks)},
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
  return RecurrentLaunch{limits.multiprocessors, kRecurrentThreads, stage,
                         recurrent_workspace_bytes(program, limits.multiprocessors)};
}

}  // namespace

/// sm_80's mma.sync.aligned.m16n8k16 with bf16 or f16 inputs.
constexpr int kTensorCoreCapability = 80;

int tensor_core_phases(const RecurrentProgramView& program) {
  int count = 0;
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    count += ph.kind == PhaseKind::matmul && tensor_core_phase(program, ph) ? 1 : 0;
  }
  return count;
}

StatusOr<RecurrentLaunch> choose_recurrent_launch(const RecurrentProgramView& program,
                                                  const RecurrentDeviceLimits& limits) {
  StatusOr<RecurrentLaunch> launch = choose_blocks(program, limits);
  if (launch.ok()) {
    launch->tensor_cores = limits.compute_capability >= kTensorCoreCapability && tensor_core_phases(program) > 0;
  }
  return launch;
}

std::string describe_matmul_math(const RecurrentProgramView& program, const RecurrentLaunch& launch) {
  const int count = tensor_core_phases(program);
  if (count == 0) return "";
  // The first such phase's type names them (a program mixing bf16 and f16 matmuls says
  // the first's).
  ElementType type = ElementType::bf16;
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (ph.kind == PhaseKind::matmul && tensor_core_phase(program, ph)) {
      type = program.buffers[ph.a].type;
      break;
    }
  }
  return std::to_string(count) + (type == ElementType::bf16 ? " bf16" : " f16") +
         (count == 1 ? " matmul" : " matmuls") +
         (launch.tensor_cores ? " on tensor cores (mma.sync m16n8k16)" : " as SIMT FMAs (no tensor cores before sm_80)");
}

}  // namespace weft::cuda

#pragma once
// How the persistent loop kernel (recurrent_kernel.h) lays a program out on its grid: the
// decisions its host planning makes, as WEFT_HD functions of plain data so that the host
// tests them without a GPU. The host works each matmul phase's partition and slice out
// once per launch (matmul_placements) and the kernel reads that table
// (RecurrentProgramView::placements); the kernel's own code calls none of the choosing.
//
//  - A matmul phase's C[m, n] = op(A)·op(B) over k is split over the grid in 3-D
//    (MatmulPartition): row groups × column groups × k ranges. Block b takes k range
//    b / (row_groups · col_groups), and within it row group (b mod that) / col_groups and
//    column group (b mod that) % col_groups (matmul_tile); blocks past the product idle in
//    that phase. A block so reads only its rows of A and only its columns of B, over its
//    k range. With more than one k range every block writes its partial tile to a
//    scratch in global memory (the launch's workspace_bytes, after the barrier's
//    counter), and after a grid barrier the grid sums each output's partials in range
//    order (deterministic). The partition is the one a static cost model
//    (model_matmul, choose_matmul_partition: FMAs, L2 bytes of A, of staged B and of
//    the partials, barriers; constants named and stated there) costs least, a function of
//    (m, n, k, blocks, whether B is a constant) — or of a forced number of k ranges
//    (matmul_partition), worked out on the host for the launch (matmul_placements).
//  - The shared-memory rule (SharedWalk): walking an iteration's phases in order, a matmul
//    phase whose B is a constant of the loop (constant_b: its address invariant,
//    recurrent_program.h, and no phase writing it) keeps its block's slice of op(B) —
//    k_per_split × cols_per_block floats, [k][cols_per_block] row-major, its k range's
//    rows — in dynamic shared memory
//    across iterations when the slice fits what the budget still leaves; any other matmul
//    reads B from global memory. The slices lie after the matmul stage
//    (kMatmulStageBytes at offset 0, which every program with a matmul takes: the chunks
//    of A and B the register-tiled matmul stages, and its partial sums). The kernel's
//    budget is its launch's shared bytes; the plan sizes that as the stage plus the sum
//    of the slices that fit under the device's limit (recurrent_shared_bytes), and the
//    same walk under that sum keeps the same slices.
//  - Within its tile a block works in panels (matmul_panel_shape, below), and
//    recurrent_cost is the static cost model of an iteration under a launch.
//
// Example: the suite's lstm_seq forward gates = h·W (m = batch 128, n = 4H = 2048,
// k = H = 512) on 264 blocks (an H200 at two blocks per multiprocessor): the model picks
// 2 row groups × 32 column groups × 4 k ranges (256 blocks); each block keeps W[its 128
// rows of k, its 64 columns], 32 KiB, in shared memory for all time steps (after the
// 16 KiB stage), computes a 64 × 64 partial tile, and A is read 8 MiB per iteration across
// the grid instead of the columns-first rule's 64 MiB (recurrent_kernel_layout_test,
// CostOfTheSuitesLstmOnAnH200).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/host_device.h"
#include "ir/status.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda {

/// Threads per block of the persistent loop kernel (its __launch_bounds__).
inline constexpr int kRecurrentThreads = 256;

/// A matmul phase's C[m, n] = Σ_k op(A)·op(B) split over the grid in three dimensions:
/// row_groups × col_groups tiles of rows_per_block × cols_per_block (the last row and
/// column groups may be shorter), each computed over k_splits ranges of k_per_split (the
/// last may be shorter). Block b takes k range b / (row_groups · col_groups) and, within
/// it, row group and column group as below (matmul_tile); blocks past row_groups ·
/// col_groups · k_splits idle in the phase. All zero when C is empty (k_splits 1).
struct MatmulPartition {
  int64_t row_groups = 0, col_groups = 0;
  int64_t rows_per_block = 0, cols_per_block = 0;
  int64_t k_splits = 1, k_per_split = 0;
};

/// One block's tile of C: rows [row_begin, row_end) × columns [col_begin, col_end), summed
/// over k in [k_begin, k_end), the partition's k range `split`; empty when the block idles.
struct MatmulTile {
  int64_t row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  int64_t k_begin = 0, k_end = 0, split = 0;
};

WEFT_HD inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
WEFT_HD inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/// The partition of C[m, n] (inner dimension k) on `blocks` blocks with about `splits`
/// k ranges (at most k and blocks of them; as many as ceil_div(k, k_per_split) leaves)
/// and about `col_groups` column groups (at most n, and the blocks a k range has); the
/// blocks a column group then has in its k range split the rows.
WEFT_HD inline MatmulPartition partition_grid(int64_t m, int64_t n, int64_t k, int64_t blocks, int64_t col_groups,
                                              int64_t splits) {
  MatmulPartition p;
  if (m <= 0 || n <= 0 || blocks <= 0) return p;
  int64_t s = splits < 1 ? 1 : min64(splits, blocks);
  if (k <= 0) s = 1;
  else s = min64(s, k);
  p.k_per_split = k > 0 ? ceil_div(k, s) : 0;
  p.k_splits = k > 0 ? ceil_div(k, p.k_per_split) : 1;
  const int64_t per_range = blocks / p.k_splits;  // at least 1
  const int64_t groups = col_groups < 1 ? 1 : min64(min64(col_groups, n), per_range);
  p.cols_per_block = ceil_div(n, groups);
  p.col_groups = ceil_div(n, p.cols_per_block);
  const int64_t spare = per_range / p.col_groups;  // at least 1
  p.rows_per_block = ceil_div(m, min64(m, spare));
  p.row_groups = ceil_div(m, p.rows_per_block);
  return p;
}

/// Today's 2-D rule, one candidate of the chooser: columns first, one group per block
/// while n allows, the spare blocks split the rows; k whole.
WEFT_HD inline MatmulPartition partition_matmul(int64_t m, int64_t n, int64_t k, int64_t blocks) {
  return partition_grid(m, n, k, blocks, blocks, 1);
}

/// Block `block`'s tile of C[m, n] (inner dimension k) under `p`.
WEFT_HD inline MatmulTile matmul_tile(const MatmulPartition& p, int64_t m, int64_t n, int64_t k, int64_t block) {
  MatmulTile tile;
  const int64_t tiles = p.row_groups * p.col_groups;
  if (tiles == 0 || block >= tiles * p.k_splits) return tile;
  tile.split = block / tiles;
  const int64_t b = block % tiles;
  tile.row_begin = b / p.col_groups * p.rows_per_block;
  tile.col_begin = b % p.col_groups * p.cols_per_block;
  tile.row_end = min64(tile.row_begin + p.rows_per_block, m);
  tile.col_end = min64(tile.col_begin + p.cols_per_block, n);
  tile.k_begin = min64(tile.split * p.k_per_split, k > 0 ? k : 0);
  tile.k_end = min64(tile.k_begin + p.k_per_split, k > 0 ? k : 0);
  return tile;
}

/// How a block computes its tile of a matmul phase (recurrent_kernel_device.inc,
/// run_matmul): in *panels* of at most kPanelRows × kPanelCols outputs, each thread a
/// micro-tile of kTileRows × tile_cols outputs in f32 registers (tile_cols 4, or 2 or 1
/// when the tile is that narrow), k in chunks of kChunkK staged through shared memory;
/// threads left over when the panel has fewer micro-tiles than the block has threads
/// split each chunk's k (k ≡ split mod splits), their partial sums added in split order.
inline constexpr int kTileRows = 4;
inline constexpr int kTileCols = 4;
inline constexpr int kPanelRows = 128;
inline constexpr int kPanelCols = 64;
inline constexpr int kChunkK = 16;
/// The shared memory every block of a program with a matmul phase stages through, at
/// offset 0 of its dynamic shared memory: a chunk of op(A)'s panel rows and of op(B)'s
/// panel columns ([kChunkK][rows + 1] and [kChunkK][cols + 1]), and after a panel's last
/// chunk the splits' partial sums (at most kTileRows · kTileCols floats per thread).
inline constexpr uint64_t kMatmulStageBytes = uint64_t{kRecurrentThreads} * kTileRows * kTileCols * sizeof(float);
static_assert(kChunkK * (kPanelRows + 1 + kPanelCols + 1) * sizeof(float) <= kMatmulStageBytes,
              "a staged chunk fits the stage");

/// The columns of a thread's micro-tile in a block tile `cols` wide: kTileCols, or 2 or 1
/// when the tile is that narrow.
WEFT_HD inline int micro_tile_cols(int64_t cols) { return cols >= kTileCols ? kTileCols : cols >= 2 ? 2 : 1; }

/// The FMAs a block's threads issue for a rows × cols tile over k: whole micro-tiles (the
/// edges computed, not stored).
WEFT_HD inline uint64_t issued_fma(int64_t rows, int64_t cols, int64_t k) {
  const int tile_cols = micro_tile_cols(cols);
  return static_cast<uint64_t>(ceil_div(rows, kTileRows) * kTileRows * ceil_div(cols, tile_cols) * tile_cols) *
         static_cast<uint64_t>(k);
}

/// A panel of a block's tile: micro_rows × micro_cols micro-tiles of kTileRows ×
/// tile_cols outputs, each computed by `splits` threads.
struct MatmulPanelShape {
  int tile_cols = 0;
  int micro_rows = 0, micro_cols = 0;
  int splits = 0;
};

/// The panel for a block tile of tile_rows × tile_cols outputs (both ≥ 1) on `threads`
/// threads (1 … kRecurrentThreads).
WEFT_HD inline MatmulPanelShape matmul_panel_shape(int64_t tile_rows, int64_t tile_cols, int threads) {
  MatmulPanelShape s;
  s.tile_cols = micro_tile_cols(tile_cols);
  const int64_t across = ceil_div(tile_cols, s.tile_cols), down = ceil_div(tile_rows, kTileRows);
  const int64_t most_cols = kPanelCols / s.tile_cols < threads ? kPanelCols / s.tile_cols : threads;
  s.micro_cols = static_cast<int>(across < most_cols ? across : most_cols);
  const int64_t most_rows = kPanelRows / kTileRows < threads / s.micro_cols ? kPanelRows / kTileRows
                                                                             : threads / s.micro_cols;
  s.micro_rows = static_cast<int>(down < most_rows ? down : most_rows);
  const int splits = threads / (s.micro_rows * s.micro_cols);
  s.splits = splits < kChunkK ? splits : kChunkK;
  return s;
}

/// The tensor-core matmul (recurrent_kernel_device.inc's matmul_panel_mma, PTX's
/// mma.sync.aligned.m16n8k16 on sm_80 and later): a panel of down × across tiles of
/// kMmaRows × kMmaCols outputs, at most kPanelRows × kPanelCols, each warp taking every
/// warps-th tile (at most kMmaTilesPerWarp, 4 f32 accumulators each per lane); k in the
/// same staged chunks of kChunkK, one mma's k.
inline constexpr int kMmaRows = 16;
inline constexpr int kMmaCols = 8;
inline constexpr int kMmaTilesPerWarp = 8;
static_assert(kChunkK == 16, "one staged chunk is one m16n8k16's k");

struct MmaPanelShape {
  int down = 0, across = 0;
};

/// The tensor-core panel for a block tile of tile_rows × tile_cols outputs (both ≥ 1) on
/// `warps` warps (≥ 1): as many tiles down as the tile needs up to kPanelRows, then
/// across as many as the warps' kMmaTilesPerWarp leave, up to kPanelCols.
WEFT_HD inline MmaPanelShape mma_panel_shape(int64_t tile_rows, int64_t tile_cols, int warps) {
  MmaPanelShape s;
  s.down = static_cast<int>(min64(ceil_div(tile_rows, kMmaRows), kPanelRows / kMmaRows));
  const int64_t room = static_cast<int64_t>(warps) * kMmaTilesPerWarp / s.down;
  s.across = static_cast<int>(min64(min64(ceil_div(tile_cols, kMmaCols), kPanelCols / kMmaCols), room > 0 ? room : 1));
  return s;
}

/// Whether matmul phase `ph` runs on tensor cores when the launch allows them
/// (RecurrentLaunch::tensor_cores): A and B both bf16 or both f16.
WEFT_HD inline bool tensor_core_phase(const RecurrentProgramView& p, const RecurrentPhase& ph) {
  if (ph.kind != PhaseKind::matmul) return false;
  const ElementType a = p.buffers[ph.a].type;
  return a != ElementType::f32 && a == p.buffers[ph.b].type;
}

/// The stage a program's blocks need: kMatmulStageBytes when it has a matmul phase or a
/// row phase (whose block sums take a float per thread of it).
WEFT_HD inline uint64_t matmul_stage_bytes(const RecurrentProgramView& p) {
  for (int32_t i = 0; i < p.phase_count; ++i) {
    if (p.phases[i].kind != PhaseKind::elementwise) return kMatmulStageBytes;
  }
  return 0;
}

/// Bytes of one block's slice of op(B) under partition `p`: its k range × its columns.
/// Elements of B's type (`element_bytes` each: f32 4, bf16 and f16 2, kept in B's own
/// type), rounded up to 16 bytes so that the next slice stays aligned.
WEFT_HD inline uint64_t b_slice_bytes(const MatmulPartition& p, int64_t element_bytes = 4) {
  const uint64_t bytes = static_cast<uint64_t>(p.k_per_split) * static_cast<uint64_t>(p.cols_per_block) *
                         static_cast<uint64_t>(element_bytes);
  return (bytes + 15) / 16 * 16;
}

/// Whether buffer `buffer`'s address is `address` in some iteration of `p`.
WEFT_HD inline bool lies_at(const RecurrentProgramView& p, int32_t buffer, uint64_t address) {
  const StepAddress& a = p.buffers[buffer];
  if ((a.first != 0 && a.first == address) || (a.last != 0 && a.last == address)) return true;
  if (a.stride == 0) return a.base == address;
  const auto delta = static_cast<int64_t>(address - a.base);
  return delta % a.stride == 0 && delta / a.stride >= 0 && delta / a.stride < p.length;
}

/// Whether some phase of `p` writes where buffer `buffer` starts: a matmul's C or an
/// elementwise result that is that buffer, or lies at its address in some iteration.
WEFT_HD inline bool written_in_loop(const RecurrentProgramView& p, int32_t buffer) {
  const uint64_t address = p.buffers[buffer].base;
  const auto writes = [&](int32_t w) { return w == buffer || lies_at(p, w, address); };
  for (int32_t i = 0; i < p.phase_count; ++i) {
    const RecurrentPhase& ph = p.phases[i];
    if (ph.kind == PhaseKind::matmul) {
      if (writes(ph.c)) return true;
      continue;
    }
    for (int32_t j = 0; j < ph.result_count; ++j) {
      if (writes(p.maps[ph.first_map + ph.operand_count + j].buffer)) return true;
    }
  }
  return false;
}

/// Whether matmul phase `ph`'s B is a constant of the loop, which may stay on chip: its
/// address invariant and no phase writing it (an invariant scratch buffer, such as a
/// gradient computed in each iteration, is read from global memory). Writes are found by
/// buffer and by start address; a buffer entry that starts inside B (a window of it) is
/// not, so a program must not write into a weight through one.
WEFT_HD inline bool constant_b(const RecurrentProgramView& p, const RecurrentPhase& ph) {
  return ph.kind == PhaseKind::matmul && invariant(p.buffers[ph.b]) && !written_in_loop(p, ph.b);
}

/// The matmul partition's cost model (choose_matmul_partition), in integer picoseconds so
/// that every run chooses alike (no float rounding). Assumptions for an H100 / H200 (SXM), not
/// measured here (the device notes, HOPPER.md, give none of these figures):
///  - a block's f32 FMA rate: half a multiprocessor's 128 FP32 lanes (two blocks per
///    multiprocessor at ptxas's ~128 registers) at ~1.98 GHz ≈ 126 FMA per ns;
///  - the chip's L2 → multiprocessor bandwidth, which A, B staged from global memory and
///    the split-K partials share: ≈ 5.5 TB/s (published microbenchmarks of an H100 SXM
///    give 5.5–7);
///  - one grid barrier (264 blocks on one counter): ≈ 1 µs;
///  - a constant B's slice stays on chip when it is at most kSliceBudgetBytes, so that the
///    stage and two or three slices fit the ~113 KiB a block has at two per
///    multiprocessor; a larger one is modelled as staged from global memory.
inline constexpr uint64_t kModelBlockFmaPerUs = 126'000;
/// A block's FMA rate on tensor cores (matmul_panel_mma), assumed: not the tensor cores'
/// own (~989 dense bf16 TFLOP/s on an H200 ≈ 1,870 FMA per ns per block at two blocks per
/// multiprocessor) but the issue of building fragments from the f32 stage — about 30
/// instructions per lane for each 2,048-FMA mma.sync (12 shared-memory loads, 8
/// conversions, packing, the mma), at 4 warp instructions per clock per multiprocessor:
/// 4 / 30 · 2,048 ≈ 273 FMA per clock ≈ 540 per ns per multiprocessor, ≈ 270 per block.
/// Rounded down to 256.
inline constexpr uint64_t kModelBlockMmaFmaPerUs = 256'000;
inline constexpr uint64_t kModelL2BytesPerUs = 5'500'000;
inline constexpr uint64_t kModelGridBarrierPs = 1'000'000;
inline constexpr uint64_t kSliceBudgetBytes = 48 * 1024;
/// The most k ranges the chooser tries (powers of two, each range at least one chunk).
inline constexpr int64_t kMaxKSplits = 64;

/// The model's parts for one partition of a matmul phase (per iteration, whole grid).
struct MatmulModel {
  uint64_t fma = 0;              ///< The largest block's issued FMAs: its whole micro-tiles × k_per_split.
  uint64_t a_bytes = 0;          ///< op(A) read by every working block (once per column panel of its tile).
  uint64_t b_bytes = 0;          ///< op(B) staged by every working block (once per row panel); 0 on chip.
  uint64_t partial_bytes = 0;    ///< Split-K: partials written and read back, 2 · k_splits · m · n · 4.
  int64_t barriers = 0;          ///< Split-K: the barrier before the partials are summed.
  bool b_on_chip = false;
  uint64_t ps = 0;               ///< fma / rate + bytes / bandwidth + barriers · barrier.
};

/// What a matmul phase's model needs beyond its shape: the bytes of an element of A and
/// of B as read from global memory (the on-chip slice and the partials are f32 whatever
/// the type) and whether it is a tensor-core phase (tensor_core_phase: modelled at
/// kModelBlockMmaFmaPerUs over whole 16 × 8 × 16 mma tiles, as on sm_80 and later — the
/// model assumes such a device; the SIMT fallback before sm_80 is modelled the same).
struct MatmulMath {
  int64_t a_bytes = 4, b_bytes = 4;
  bool tensor_cores = false;
};

WEFT_HD inline MatmulMath matmul_math(const RecurrentProgramView& p, const RecurrentPhase& ph) {
  if (ph.kind != PhaseKind::matmul) return {};  // no buffers to ask (a, b are -1)
  return {element_bytes(p.buffers[ph.a].type), element_bytes(p.buffers[ph.b].type), tensor_core_phase(p, ph)};
}

/// The FMAs one block's tensor-core panels issue for rows × cols outputs over k: whole
/// 16 × 8 tiles, k in whole chunks of 16 (a short last chunk is zero-padded).
WEFT_HD inline uint64_t issued_mma_fma(int64_t rows, int64_t cols, int64_t k) {
  return static_cast<uint64_t>(ceil_div(rows, kMmaRows) * kMmaRows * ceil_div(cols, kMmaCols) * kMmaCols) *
         static_cast<uint64_t>(ceil_div(k, kChunkK) * kChunkK);
}

/// The model (above) of C[m, n] over k under `p`; `b_constant` when B may stay on chip;
/// `math` the operands' bytes and tensor cores (f32 SIMT by default).
WEFT_HD inline MatmulModel model_matmul(int64_t m, int64_t n, const MatmulPartition& p, bool b_constant,
                                        const MatmulMath& math = {}) {
  MatmulModel c;
  if (p.row_groups == 0) return c;
  const auto blocks = static_cast<uint64_t>(p.row_groups * p.col_groups * p.k_splits);
  const auto rows = static_cast<uint64_t>(p.rows_per_block), cols = static_cast<uint64_t>(p.cols_per_block);
  const auto k = static_cast<uint64_t>(p.k_per_split);
  c.fma = math.tensor_cores ? issued_mma_fma(p.rows_per_block, p.cols_per_block, p.k_per_split)
                            : issued_fma(p.rows_per_block, p.cols_per_block, p.k_per_split);
  const auto a_element = static_cast<uint64_t>(math.a_bytes), b_element = static_cast<uint64_t>(math.b_bytes);
  c.a_bytes = blocks * static_cast<uint64_t>(ceil_div(p.cols_per_block, kPanelCols)) * rows * k * a_element;
  c.b_on_chip = b_constant && b_slice_bytes(p, math.b_bytes) <= kSliceBudgetBytes;
  c.b_bytes =
      c.b_on_chip ? 0 : blocks * static_cast<uint64_t>(ceil_div(p.rows_per_block, kPanelRows)) * cols * k * b_element;
  if (p.k_splits > 1) {
    c.partial_bytes = 2 * static_cast<uint64_t>(p.k_splits * m * n) * sizeof(float);
    c.barriers = 1;
  }
  c.ps = c.fma * 1'000'000 / (math.tensor_cores ? kModelBlockMmaFmaPerUs : kModelBlockFmaPerUs) +
         (c.a_bytes + c.b_bytes + c.partial_bytes) * 1'000'000 / kModelL2BytesPerUs +
         static_cast<uint64_t>(c.barriers) * kModelGridBarrierPs;
  return c;
}

/// The partition of C[m, n] over k on `blocks` blocks that the model (model_matmul) costs
/// least: today's columns-first rule (partition_matmul) first, then k ranges 1, 2, 4, …
/// (at most kMaxKSplits, and the k's chunks of kChunkK) × column groups 1, 2, 4, … and
/// as many as the range's blocks allow, the spare blocks on rows; the first of equal
/// cost kept. `k_splits` > 0 forces that many k ranges (partition_grid clamps it).
WEFT_HD inline MatmulPartition choose_matmul_partition(int64_t m, int64_t n, int64_t k, int64_t blocks,
                                                       bool b_constant, int k_splits, const MatmulMath& math = {}) {
  MatmulPartition best = k_splits > 0 ? partition_grid(m, n, k, blocks, blocks, k_splits)
                                      : partition_matmul(m, n, k, blocks);
  if (best.row_groups == 0) return best;
  uint64_t best_ps = model_matmul(m, n, best, b_constant, math).ps;
  const int64_t chunks = ceil_div(k > 0 ? k : 1, kChunkK);
  for (int64_t s = 1; s <= kMaxKSplits && s <= blocks; s *= 2) {
    if (k_splits > 0 ? s != 1 : s > chunks) break;
    const int64_t per_range = blocks / (k_splits > 0 ? best.k_splits : s);
    for (int64_t g = 1;; g = g * 2 < per_range ? g * 2 : per_range) {
      const MatmulPartition p = partition_grid(m, n, k, blocks, g, k_splits > 0 ? k_splits : s);
      const uint64_t ps = model_matmul(m, n, p, b_constant, math).ps;
      if (ps < best_ps) best = p, best_ps = ps;
      if (g >= per_range || g >= n) break;
    }
  }
  return best;
}

/// Matmul phase `ph`'s partition on `blocks` blocks (choose_matmul_partition; k_splits as
/// there): the one rule; the host works it out for the kernel (matmul_placements), and
/// the shared bytes, the scratch and the cost are planned with it.
WEFT_HD inline MatmulPartition matmul_partition(const RecurrentProgramView& p, const RecurrentPhase& ph,
                                                int64_t blocks, int k_splits) {
  return choose_matmul_partition(ph.m, ph.n, ph.k, blocks, constant_b(p, ph), k_splits, matmul_math(p, ph));
}

/// The shared-memory rule (see the top of this file): walk an iteration's phases in order
/// through `place`, which gives each phase's slice offset in bytes, or -1 when that phase
/// reads B from global memory. Start it with shared_walk.
struct SharedWalk {
  uint64_t budget = 0;
  uint64_t used = 0;

  /// Phase `ph` under its partition `part` (matmul_partition).
  WEFT_HD int64_t place(const RecurrentProgramView& p, const RecurrentPhase& ph, const MatmulPartition& part) {
    if (!constant_b(p, ph)) return -1;
    const uint64_t bytes = b_slice_bytes(part, element_bytes(p.buffers[ph.b].type));
    if (bytes == 0 || used > budget || bytes > budget - used) return -1;
    const uint64_t offset = used;
    used += bytes;
    return static_cast<int64_t>(offset);
  }
};

/// The walk over a block's `shared_bytes`: the matmul stage first (matmul_stage_bytes, at
/// offset 0), the slices after it.
WEFT_HD inline SharedWalk shared_walk(const RecurrentProgramView& p, uint64_t shared_bytes) {
  return SharedWalk{shared_bytes, matmul_stage_bytes(p)};
}

/// Matmul phase i's layout on one launch, which the host works out once per launch
/// (matmul_placements) and the kernel only reads (RecurrentProgramView::placements): its
/// partition (matmul_partition) and its B slice's offset in bytes in dynamic shared
/// memory under the shared-memory rule (SharedWalk::place; -1: B from global memory). A
/// phase that is not a matmul has the default entry.
struct MatmulPlacement {
  MatmulPartition partition;
  int64_t slice_offset = -1;
};

/// The kernel's table for `program` (host arrays) on `blocks` blocks with `shared_bytes`
/// of dynamic shared memory: one entry per phase, in order, each matmul phase's
/// matmul_partition (`k_splits` as there: 0 as the cost model chooses, > 0 forced) and
/// the offset the walk over `shared_bytes` (shared_walk, then SharedWalk::place phase by
/// phase) gives its slice.
std::vector<MatmulPlacement> matmul_placements(const RecurrentProgramView& program, int64_t blocks,
                                               uint64_t shared_bytes, int k_splits = 0);

/// `view` reading `table` as its placements (RecurrentProgramView::placements), the
/// table worked out by matmul_placements for `blocks` and `shared_bytes` and lying where
/// the kernel reads it (host memory under emulation, device memory on a GPU).
inline RecurrentProgramView with_placements(RecurrentProgramView view, const MatmulPlacement* table, int64_t blocks,
                                            uint64_t shared_bytes) {
  view.placements = table;
  view.placed_blocks = blocks;
  view.placed_shared_bytes = shared_bytes;
  return view;
}

/// The dynamic shared memory a block needs on `blocks` blocks when at most `limit` bytes
/// are available: the matmul stage (needed whatever the limit) and the constant B slices
/// that fit under the rule after it (each phase's slice under matmul_partition with
/// `k_splits`).
uint64_t recurrent_shared_bytes(const RecurrentProgramView& program, int64_t blocks, uint64_t limit,
                                int k_splits = 0);

/// The split-K scratch a launch on `blocks` blocks needs after the barrier's counter: the
/// largest k_splits · m · n floats of a matmul phase whose partition splits k (phases run
/// one after another, so they share it); 0 when none does.
uint64_t recurrent_workspace_bytes(const RecurrentProgramView& program, int64_t blocks, int k_splits = 0);

/// How many matmul phases of `program` keep their B on chip with `shared_bytes` on
/// `blocks` blocks, and how many could (a constant B, a non-empty slice).
struct CachedPhases {
  int cached = 0;
  int cacheable = 0;
};
CachedPhases count_cached_phases(const RecurrentProgramView& program, int64_t blocks, uint64_t shared_bytes,
                                 int k_splits = 0);

/// A launch of the persistent loop kernel (recurrent_kernel.h).
struct RecurrentLaunch {
  int blocks = 0;
  int threads = 0;
  size_t shared_bytes = 0;
  /// The split-K scratch (recurrent_workspace_bytes) the kernel uses after the barrier's
  /// counter: launch_recurrent's `barrier` points at recurrent_barrier_bytes() +
  /// workspace_bytes of device memory.
  size_t workspace_bytes = 0;
  /// 0: each matmul phase's k ranges as the cost model chooses (choose_matmul_partition);
  /// otherwise that many forced on every matmul phase (tests).
  int k_splits = 0;
  /// Whether matmul phases of bf16 or f16 A and B (tensor_core_phase) run on tensor cores
  /// (mma.sync m16n8k16: sm_80 and later); otherwise they run the SIMT matmul on values
  /// converted as loaded.
  bool tensor_cores = false;
};

/// What choose_recurrent_launch needs of a device.
struct RecurrentDeviceLimits {
  int multiprocessors = 0;
  uint64_t shared_per_block = 0;  ///< The opt-in maximum of dynamic shared memory per block.
  bool cooperative = false;       ///< cudaDevAttrCooperativeLaunch.
  int compute_capability = 0;     ///< major · 10 + minor (sm_80: 80).
  /// Blocks of kRecurrentThreads threads with `shared_bytes` each that one multiprocessor
  /// holds at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor for the kernel).
  std::function<int(uint64_t shared_bytes)> blocks_per_multiprocessor;
};

/// The model of an elementwise or row phase (the register program's phases), per
/// iteration, for the busiest block. Assumptions beside the matmul model's (its L2
/// bandwidth and grid barrier above), not measured here:
///  - the program is interpreted (recurrent_kernel_device.inc): each instruction run on one
///    element costs a lane kModelInstrLaneCycles cycles — the dispatch over its op, its
///    registers in local memory (ptxas reports the frame spilled), a transcendental
///    op's math — whatever the op; a block issues kModelBlockFmaPerUs lane cycles per µs
///    (half a multiprocessor's 128 lanes at ~1.98 GHz, as for FMAs), and a thread round
///    costs every thread of the block whether it has an element or not;
///  - loads and stores move their element's bytes (its buffer's type) through L2, a
///    broadcast load too, and each block gets 1/blocks of kModelL2BytesPerUs: a phase
///    that keeps fewer blocks busy does not get the idle blocks' bandwidth;
///  - an elementwise phase spreads rows × cols over every block's threads (grid-stride);
///  - a row phase keeps at most `rows` blocks busy (a block owns whole rows, its threads
///    stride over the columns) and runs one pass per reduction, recomputing the program
///    before it, then a last pass over the whole program that stores: the busiest block
///    runs ceil(rows / blocks) rows, each reduction of a row a block sum costing
///    kModelBlockSumPs (log2(256) = 8 pairwise steps through shared memory, each a
///    __syncthreads, ~40 cycles).
inline constexpr uint64_t kModelInstrLaneCycles = 16;
inline constexpr uint64_t kModelBlockSumPs = 160'000;

struct ProgramPhaseModel {
  int64_t busy_blocks = 0;   ///< Blocks with any element (a row phase: min(rows, blocks)).
  int64_t passes = 0;        ///< 1 for an elementwise phase; a row phase's reductions + 1.
  uint64_t lane_cycles = 0;  ///< The busiest block's: thread rounds × threads × instructions × kModelInstrLaneCycles.
  uint64_t bytes = 0;        ///< The busiest block's loads and stores (a row phase's loads once per pass).
  uint64_t block_sums = 0;   ///< The busiest block's reductions over a row.
  uint64_t ps = 0;           ///< lane_cycles / rate + bytes · blocks / L2 bandwidth + block_sums · kModelBlockSumPs.
};

/// The model (above) of elementwise or row phase `ph` of `p` on `blocks` blocks of
/// `threads` threads.
ProgramPhaseModel model_program_phase(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t blocks,
                                      int threads);

/// A static cost model of one iteration of a program under a launch, so that a measured
/// time can be set against it: for each matmul phase, the block with the largest tile
/// (block 0's), what it computes and what it reads from global memory; for each
/// elementwise or row phase, model_program_phase; and a grid barrier per phase.
struct MatmulPhaseCost {
  int32_t phase = 0;
  int64_t rows = 0, cols = 0, k = 0;  ///< The largest block tile.
  bool b_on_chip = false;
  uint64_t fma = 0;         ///< rows · cols · k.
  uint64_t issued_fma = 0;  ///< FMAs its threads issue: whole micro-tiles, or whole 16 × 8 × 16 mma tiles on
                            ///< tensor cores (edges computed, not stored).
  uint64_t a_bytes = 0;     ///< op(A)'s tile rows, staged once per column panel.
  uint64_t b_bytes = 0;     ///< op(B)'s tile columns, once per row panel; 0 when on chip.
  uint64_t block_syncs = 0; ///< __syncthreads: two per chunk and two per panel.
  MatmulPartition partition;  ///< The phase's partition (matmul_partition).
  MatmulModel model;          ///< Its modelled cost; model.a_bytes is A's reads across the grid.
};
struct ProgramPhaseCost {
  int32_t phase = 0;
  PhaseKind kind = PhaseKind::elementwise;
  ProgramPhaseModel model;
};
struct RecurrentCost {
  std::vector<MatmulPhaseCost> matmuls;
  std::vector<ProgramPhaseCost> programs;  ///< The elementwise and row phases, in order.
  uint64_t fma = 0, issued_fma = 0, a_bytes = 0, b_bytes = 0;  ///< Summed over the matmul phases.
  uint64_t grid_a_bytes = 0;  ///< Summed model.a_bytes: A read across the whole grid.
  uint64_t modelled_ps = 0;   ///< Summed model.ps of the matmul phases (split-K barriers included).
  uint64_t row_ps = 0;          ///< Summed model.ps of the row phases.
  uint64_t elementwise_ps = 0;  ///< Summed model.ps of the elementwise phases (a `full`'s, a copy's included).
  uint64_t barrier_ps = 0;      ///< One grid barrier per phase: phases · kModelGridBarrierPs.
  uint64_t iteration_ps = 0;    ///< The iteration: modelled_ps + row_ps + elementwise_ps + barrier_ps.
  int64_t grid_barriers = 0;  ///< Per iteration: one before each phase (the first iteration one fewer),
                              ///< and one in each split-K phase before its partials are summed.
};
RecurrentCost recurrent_cost(const RecurrentProgramView& program, const RecurrentLaunch& launch);
/// The cost in a few lines, one per matmul phase, one per elementwise or row phase, then
/// the iteration's totals.
std::string describe_recurrent_cost(const RecurrentCost& cost);

/// The launch for `program` on a device with `limits`: kRecurrentThreads threads per
/// block; the most blocks per multiprocessor (× multiprocessors: all of them resident at
/// once, as a cooperative launch requires) at which every constant B slice fits in shared
/// memory, else one block per multiprocessor, where each block has the most shared memory
/// and keeps what fits (the rest read from global memory), or, when that leaves no block
/// resident, only the matmul stage. An error saying why when the device cannot run it at
/// all (no cooperative launch, no block resident, not even with the stage alone).
/// Matmul phases of bf16 or f16 A and B run on tensor cores (tensor_cores) when the
/// device's compute capability is 80 or more and the program has any.
StatusOr<RecurrentLaunch> choose_recurrent_launch(const RecurrentProgramView& program,
                                                  const RecurrentDeviceLimits& limits);

/// How `launch` runs `program`'s low-precision matmuls, for a launch's description:
/// "" when it has none, else e.g. "2 bf16 matmuls on tensor cores (mma.sync m16n8k16)" or
/// "1 f16 matmul as SIMT FMAs (no tensor cores before sm_80)".
std::string describe_matmul_math(const RecurrentProgramView& program, const RecurrentLaunch& launch);

}  // namespace weft::cuda

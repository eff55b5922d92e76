// The persistent loop kernel (recurrent_kernel_device.inc) run on the host without a GPU:
// every block's threads alive at once (cuda_emulation.h's cooperative launch), each CUDA
// thread a fiber, on small grids (2–6 blocks of 64, 128 or 256 threads). Each case of
// recurrent_testing.h runs from the same data on the kernel and on the host oracle
// (recurrent_reference.h), and every array is compared (relative 1e-5; the oracle sums
// matmuls in f64, the kernel in f32 FMAs), with the loop's constant weights kept in shared
// memory and read from global memory; the tiling's cases bit for bit against the matmul's
// documented order of accumulation; then every supported op over NaN, ±inf and ±0, bit
// for bit. Every case again in bf16 and f16 (at their types' tolerance), on the SIMT
// matmul and on the tensor-core one (cuda_emulation.h's mma.sync).
#include "runtime/cuda/cuda_emulation.h"  // first: CUDA's built-ins for the kernel's source

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/recurrent_kernel_device.inc"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/cuda/recurrent_testing.h"

namespace weft::cuda {
namespace {

using emulation::run_cooperative_grid;
using namespace recurrent_testing;

/// Runs `program` on the emulated kernel: `blocks` × `threads`, with the shared memory the
/// layout's rule gives under `shared_limit`, the launch's k_splits `k_splits` (0: as the
/// cost model chooses) and the split-K scratch after the barrier's counter. Returns how
/// many matmuls kept B on chip. `tensor_cores` as the launch's (bf16/f16 matmuls on the
/// emulated mma.sync).
int run_kernel(const RecurrentProgramView& program, unsigned blocks, unsigned threads, uint64_t shared_limit,
               int k_splits = 0, bool tensor_cores = false) {
  const uint64_t shared = recurrent_shared_bytes(program, blocks, shared_limit, k_splits);
  const uint64_t workspace = recurrent_workspace_bytes(program, blocks, k_splits);
  std::vector<unsigned> barrier(1 + workspace / sizeof(unsigned), 0);
  // The table the host works out for the launch (as persistent_loop.cc does), in host memory.
  const std::vector<MatmulPlacement> table = matmul_placements(program, blocks, shared, k_splits);
  const RecurrentProgramView placed = with_placements(program, table.data(), blocks, shared);
  run_cooperative_grid(blocks, threads, shared, [&] { recurrent_loop(placed, barrier.data(), tensor_cores); });
  EXPECT_EQ(barrier[0] & ~kSenseBit, 0u) << "the barrier's low bits are zero again after the launch";
  return count_cached_phases(program, blocks, shared, k_splits).cached;
}

constexpr uint64_t kPlentyOfShared = 1 << 20;

/// Runs case `c` on the kernel (`blocks` × `threads`, `k_splits` as run_kernel) and on the
/// oracle, for B on chip and in global memory, and compares every array; c.cacheable
/// matmuls keep B on chip with plenty of shared memory.
void expect_matches_oracle(const Case& c, unsigned blocks, unsigned threads, int k_splits = 0,
                           bool tensor_cores = false) {
  Storage want = c.initial;
  const Program oracle = c.build(host_bases(want));
  const Status s = run_recurrent_on_host(oracle.view());
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (uint64_t limit : {kPlentyOfShared, uint64_t{0}}) {
    SCOPED_TRACE(limit == 0 ? "B from global memory" : "B in shared memory");
    Storage got = c.initial;
    const Program program = c.build(host_bases(got));
    EXPECT_EQ(run_kernel(program.view(), blocks, threads, limit, k_splits, tensor_cores), limit == 0 ? 0 : c.cacheable);
    for (size_t a = 0; a < want.size(); ++a) {
      const std::vector<float> got_values = values(got[a], c.type), want_values = values(want[a], c.type);
      for (size_t i = 0; i < want[a].size(); ++i) {
        ASSERT_TRUE(close(got_values[i], want_values[i], c.type))
            << "array " << a << " element " << i << ": kernel " << got_values[i] << ", oracle " << want_values[i];
      }
    }
  }
}

TEST(RecurrentKernelEmulated, ProgramsMatchTheOracleWithBOnChipAndInGlobalMemory) {
  for (const Case& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    expect_matches_oracle(c, c.blocks, /*threads=*/64);
    SCOPED_TRACE("6 blocks of 128 threads");
    expect_matches_oracle(c, /*blocks=*/6, /*threads=*/128);
  }
}

// A program of 10 matmul phases (20 phases; the kernel once worked out only the first 8
// phases' placements at its start and the rest again each time they ran, and now reads
// every phase's from the host's table): each layer's weight on chip and in global memory,
// on 4 blocks of 64 threads, on 6 of 128, and with k forced into 2 and 3 ranges.
TEST(RecurrentKernelEmulated, TenMatmulPhasesMatchTheOracle) {
  const Case c{"deep (10 matmul phases)", deep_storage(10, 3, 6), deep(3, 10, 3, 6), 10, 4};
  expect_matches_oracle(c, c.blocks, /*threads=*/64);
  SCOPED_TRACE("6 blocks of 128 threads");
  expect_matches_oracle(c, /*blocks=*/6, /*threads=*/128);
  for (int k_splits : {2, 3}) {
    SCOPED_TRACE(std::to_string(k_splits) + " k ranges");
    expect_matches_oracle(c, /*blocks=*/6, /*threads=*/64, k_splits);
  }
}

// Every case with all its buffers bf16, then f16 (recurrent_testing.h's in_type): loads
// converted, stores rounded to nearest even. On the kernel's SIMT matmul (convert on
// load, as on a device older than sm_80) on the case's own blocks of 64 threads; on its
// tensor-core matmul (the emulated mma.sync) on those (2 warps), with 2 k ranges, and the
// tiling's edges on 2 blocks of 256 threads (8 warps: panels up to 128 × 64).
TEST(RecurrentKernelEmulated, LowPrecisionProgramsMatchTheOracleAsSimt) {
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    for (const Case& f32 : kernel_cases()) {
      const Case c = in_type(f32, type);
      SCOPED_TRACE(c.name);
      expect_matches_oracle(c, c.blocks, /*threads=*/64);
    }
  }
}

TEST(RecurrentKernelEmulated, LowPrecisionProgramsMatchTheOracleOnTensorCores) {
  for (ElementType type : {ElementType::bf16, ElementType::f16}) {
    for (const Case& f32 : kernel_cases()) {
      const Case c = in_type(f32, type);
      SCOPED_TRACE(c.name);
      expect_matches_oracle(c, c.blocks, /*threads=*/64, /*k_splits=*/0, /*tensor_cores=*/true);
      SCOPED_TRACE("2 k ranges");
      expect_matches_oracle(c, /*blocks=*/6, /*threads=*/64, /*k_splits=*/2, /*tensor_cores=*/true);
    }
    for (const Case& f32 : tiling_cases()) {
      const Case c = in_type(f32, type);
      SCOPED_TRACE(c.name + " on 256 threads");
      expect_matches_oracle(c, /*blocks=*/2, /*threads=*/kRecurrentThreads, /*k_splits=*/0, /*tensor_cores=*/true);
    }
  }
}

// The tiling's cases also on 2 blocks of the kernel's own 256 threads: panels of up to
// 128 rows, k split over up to 16 threads (recurrent_kernel_layout.h).
TEST(RecurrentKernelEmulated, TilingEdgesMatchTheOracleOnBlocksOf256Threads) {
  for (const Case& c : tiling_cases()) {
    SCOPED_TRACE(c.name);
    expect_matches_oracle(c, /*blocks=*/2, /*threads=*/kRecurrentThreads);
  }
}

// Split-K (recurrent_kernel_layout.h's partition_grid): every case with k forced into
// kForcedKSplits ranges (recurrent_testing.h) on 6 blocks of 64 threads, each range's
// partial written to the scratch, summed after a grid barrier.
TEST(RecurrentKernelEmulated, ForcedKSplitsMatchTheOracle) {
  for (const Case& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    for (int k_splits : kForcedKSplits) {
      SCOPED_TRACE(std::to_string(k_splits) + " k ranges");
      expect_matches_oracle(c, /*blocks=*/6, /*threads=*/64, k_splits);
    }
  }
}

// The GPU test's launch past 48 KiB of dynamic shared memory (recurrent_testing.h's
// kLargeSlice): on the same 2 blocks (of 256 threads) and 2 k ranges, the 80 KiB slice
// (40 KiB in bf16 and f16, on the tensor-core matmul) on chip and in global memory,
// against the oracle; the layout gives the shared bytes that test expects.
TEST(RecurrentKernelEmulated, TheLargeSliceOnTwoBlocksMatchesTheOracle) {
  for (ElementType type : {ElementType::f32, ElementType::bf16, ElementType::f16}) {
    const Case c = type == ElementType::f32 ? large_slice_case() : in_type(large_slice_case(), type);
    SCOPED_TRACE(c.name);
    Storage storage = c.initial;
    const Program program = c.build(host_bases(storage));
    EXPECT_EQ(recurrent_shared_bytes(program.view(), kLargeSliceBlocks, kPlentyOfShared, kLargeSliceKSplits),
              large_slice_shared_bytes(type));
    EXPECT_GT(large_slice_shared_bytes(type), 48u * 1024);
    expect_matches_oracle(c, kLargeSliceBlocks, kRecurrentThreads, kLargeSliceKSplits,
                          /*tensor_cores=*/type != ElementType::f32);
  }
}

bool same(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::memcmp(&got, &want, sizeof(float)) == 0;  // -0 is not +0
}

// op(A)·op(B) of a tiling case (A and B at `a` and `b`, C [m, n + pad] at `c`) summed in
// the order recurrent_kernel_device.inc documents, under partition `part`: for each
// output, the panel shape of its block's tile on `threads` threads; within the block's k
// range [k_begin, k_end), split s adds, by FMA from 0, the k whose place in their chunk
// of kChunkK (counted from k_begin) is s, s + splits, …, in increasing order; split 0's
// sum, then + split 1's, + split 2's …; then, when the partition has several k ranges,
// range 0's sum + range 1's + ….
void matmul_in_kernel_order(const TilingShape& t, const float* a, const float* b, float* c, unsigned blocks,
                            int threads, const MatmulPartition& part) {
  const int64_t lda = (t.transpose_a ? t.m : t.k) + t.pad, ldb = (t.transpose_b ? t.k : t.n) + t.pad;
  std::vector<float> partial(static_cast<size_t>(part.k_splits * t.m * t.n));
  for (unsigned block = 0; block < blocks; ++block) {
    const MatmulTile tile = matmul_tile(part, t.m, t.n, t.k, block);
    if (tile.row_end <= tile.row_begin || tile.col_end <= tile.col_begin) continue;
    const MatmulPanelShape shape =
        matmul_panel_shape(tile.row_end - tile.row_begin, tile.col_end - tile.col_begin, threads);
    for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
      for (int64_t j = tile.col_begin; j < tile.col_end; ++j) {
        float sum = 0.0f;
        for (int s = 0; s < shape.splits; ++s) {
          float part_sum = 0.0f;
          for (int64_t q = tile.k_begin; q < tile.k_end; ++q) {
            if ((q - tile.k_begin) % kChunkK % shape.splits != s) continue;
            const float x = t.transpose_a ? a[q * lda + r] : a[r * lda + q];
            const float y = t.transpose_b ? b[j * ldb + q] : b[q * ldb + j];
            part_sum = std::fma(x, y, part_sum);
          }
          sum = s == 0 ? part_sum : sum + part_sum;
        }
        partial[static_cast<size_t>((tile.split * t.m + r) * t.n + j)] = sum;
      }
    }
  }
  for (int64_t r = 0; r < t.m; ++r) {
    for (int64_t j = 0; j < t.n; ++j) {
      float sum = partial[static_cast<size_t>(r * t.n + j)];
      for (int64_t s = 1; s < part.k_splits; ++s) sum += partial[static_cast<size_t>((s * t.m + r) * t.n + j)];
      c[r * (t.n + t.pad) + j] = sum;
    }
  }
}

// The tiling's cases bit for bit against the documented order of accumulation: the
// kernel's sums depend only on the shapes, the partition and the block's threads — with
// the partition the cost model chooses and with k forced into 3 ranges.
TEST(RecurrentKernelEmulated, TilingSumsInTheDocumentedOrder) {
  for (const TilingCase& tc : tiling_shapes()) {
    const TilingShape& t = tc.t;
    SCOPED_TRACE(std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k));
    for (int k_splits : {0, 3}) {
      for (const auto& [blocks, threads] : {std::pair{tc.blocks, 64u}, std::pair{2u, 256u}, std::pair{6u, 64u}}) {
        Storage want = tiling_storage(t);
        const Program shapes = tiling(t)(host_bases(want));
        const RecurrentProgramView view = shapes.view();
        const MatmulPartition moving = matmul_partition(view, view.phases[0], blocks, k_splits);
        const MatmulPartition weight = matmul_partition(view, view.phases[1], blocks, k_splits);
        for (int64_t step = 0; step < 2; ++step) {
          const float* a = want[0].data() + step * t.a_floats();
          matmul_in_kernel_order(t, a, want[1].data() + step * t.b_floats(), want[3].data() + step * t.c_floats(),
                                 blocks, static_cast<int>(threads), moving);
          matmul_in_kernel_order(t, a, want[2].data(), want[4].data() + step * t.c_floats(), blocks,
                                 static_cast<int>(threads), weight);
        }
        for (uint64_t limit : {kPlentyOfShared, uint64_t{0}}) {
          Storage got = tiling_storage(t);
          const Program program = tiling(t)(host_bases(got));
          run_kernel(program.view(), blocks, threads, limit, k_splits);
          for (size_t array : {3u, 4u}) {
            for (size_t i = 0; i < want[array].size(); ++i) {
              ASSERT_TRUE(same(got[array][i], want[array][i]))
                  << blocks << " blocks of " << threads << ", " << k_splits << " k ranges, array " << array
                  << " element " << i << ": kernel " << got[array][i] << ", in order " << want[array][i];
            }
          }
        }
      }
    }
  }
}

// Values whose every op is defined and those where they are not.
std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.0f, 1e-30f,
          88.7f, -100.0f};
}

// The ops the kernel computes (cell_op, shared with the oracle: recurrent_cell_op.h) are
// the supported ones, each reading as many registers as the op table gives it operands.
TEST(RecurrentKernelEmulated, DeviceOpsAreTheSupportedOnesWithTheirOpTableArity) {
  for (int code = 0; code < kNumOps; ++code) {
    const Op o = static_cast<Op>(code);
    float out = 0;
    const bool computed = cell_op(static_cast<uint16_t>(code), 1.0f, 2.0f, 3.0f, &out);
    EXPECT_EQ(computed, recurrent_op_supported(o)) << op_name(o);
    if (computed) {
      EXPECT_EQ(recurrent_op_arity(o), op_info(o).arity) << op_name(o);
    }
  }
}

// One instruction over every value (unary), every pair (binary) or every triple of a
// value, a value and a value in reverse order (select), against the oracle bit for bit.
TEST(RecurrentKernelEmulated, EveryOpOverSpecialValuesMatchesTheOracle) {
  const std::vector<float> values = special_values();
  const auto count = static_cast<int64_t>(values.size());
  std::vector<float> reversed(values.rbegin(), values.rend());
  for (int code = 0; code < kNumOps; ++code) {
    const Op o = static_cast<Op>(code);
    if (!recurrent_op_supported(o)) continue;
    SCOPED_TRACE(std::string(op_name(o)));
    const int arity = recurrent_op_arity(o);
    const Builder build = [&](const Bases& s) {
      Program p;
      p.buffers = {{at(s, 0)}, {at(s, 1)}, {at(s, 2)}};
      std::vector<ElementMap> operands = {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}};
      if (arity == 1) operands = {{0, 0, 0, 1}};
      operands.resize(static_cast<size_t>(arity));
      std::vector<CellInstr> code_ = {};
      for (int j = 0; j < arity; ++j) code_.push_back(load(j, j));
      code_.push_back(op(o, 3, 0, 1, 2));
      code_.push_back(store(0, 3));
      p.elementwise(arity == 1 ? 1 : count, count, operands, {{2, 0, count, 1}}, code_);
      return p;
    };
    Storage want = {values, reversed, std::vector<float>(static_cast<size_t>(count * count), 7.0f)};
    const Program oracle = build(host_bases(want));
    ASSERT_TRUE(run_recurrent_on_host(oracle.view()).ok());
    Storage got = {values, reversed, std::vector<float>(static_cast<size_t>(count * count), 7.0f)};
    const Program program = build(host_bases(got));
    run_kernel(program.view(), /*blocks=*/2, /*threads=*/32, /*shared_limit=*/0);
    for (size_t i = 0; i < want[2].size(); ++i) {
      ASSERT_TRUE(same(got[2][i], want[2][i])) << "element " << i << ": kernel " << got[2][i] << ", oracle "
                                                << want[2][i];
    }
  }
}

}  // namespace
}  // namespace weft::cuda

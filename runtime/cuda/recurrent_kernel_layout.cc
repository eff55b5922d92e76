#include "runtime/cuda/recurrent_kernel_layout.h"

#include <string>
#include <utility>

namespace weft::cuda {

uint64_t recurrent_shared_bytes(const RecurrentProgramView& program, int64_t blocks, uint64_t limit) {
  SharedWalk walk{limit};
  for (int32_t i = 0; i < program.phase_count; ++i) walk.place(program, program.phases[i], blocks);
  return walk.used;
}

CachedPhases count_cached_phases(const RecurrentProgramView& program, int64_t blocks, uint64_t shared_bytes) {
  CachedPhases count;
  SharedWalk walk{shared_bytes};
  for (int32_t i = 0; i < program.phase_count; ++i) {
    const RecurrentPhase& ph = program.phases[i];
    if (walk.place(program, ph, blocks) >= 0) ++count.cached;
    if (constant_b(program, ph) && b_slice_bytes(ph, blocks) > 0) {
      ++count.cacheable;
    }
  }
  return count;
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
  // when even that does not leave the block resident: every B from global memory).
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
  return launch_at(1).first;
}

}  // namespace weft::cuda

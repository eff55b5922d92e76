#pragma once
// CUDA's built-ins for the host compiler, so that a test can run a kernel's source on the
// host without a GPU (attention_kernels_emulation_test): every thread of a block is a
// std::thread, __syncthreads a barrier of the block, a warp shuffle two barriers of the
// warp around a slot array, and `extern __shared__` memory the test's own array. Blocks
// run one after another. It checks a kernel's arithmetic, indexing and synchronization
// as written, not its speed, its memory model or its compiler; include it before the
// kernels' source, and only in tests (slow: a thread per CUDA thread).

#include <barrier>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __launch_bounds__(threads)
#define __shared__

namespace weft::cuda::emulation {

struct Dim3 {
  unsigned x = 0;
};

/// The block being run: its barrier, one per warp, and each warp's shuffle slots.
struct Block {
  explicit Block(unsigned threads) : sync(threads), slots(threads) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<std::barrier<>>(32));
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> slots;
};

inline thread_local Dim3 thread_index, block_index;
inline Dim3 block_dim;
inline Block* block = nullptr;

/// Runs `kernel()` as `blocks` blocks of `threads` threads (a multiple of 32).
template <typename Kernel>
void run_grid(unsigned blocks, unsigned threads, Kernel&& kernel) {
  block_dim.x = threads;
  for (unsigned b = 0; b < blocks; ++b) {
    Block current(threads);
    block = &current;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        thread_index.x = t;
        block_index.x = b;
        kernel();
      });
    }
    for (std::thread& t : pool) t.join();
  }
  block = nullptr;
}

}  // namespace weft::cuda::emulation

#define threadIdx ::weft::cuda::emulation::thread_index
#define blockIdx ::weft::cuda::emulation::block_index
#define blockDim ::weft::cuda::emulation::block_dim

inline void __syncthreads() { weft::cuda::emulation::block->sync.arrive_and_wait(); }

/// Lane `source`'s x, all 32 lanes taking part (the kernels' masks are all full).
inline float __shfl_sync(unsigned /*mask*/, float x, int source) {
  using namespace weft::cuda::emulation;
  const unsigned warp = thread_index.x / 32;
  block->warps[warp]->arrive_and_wait();  // The slots' last reads are done.
  block->slots[thread_index.x] = x;
  block->warps[warp]->arrive_and_wait();
  return block->slots[warp * 32 + source];
}

inline float __shfl_xor_sync(unsigned mask, float x, int lane_mask) {
  return __shfl_sync(mask, x, static_cast<int>(threadIdx.x % 32) ^ lane_mask);
}

/// CUDA's min, for the integer types its kernels compare.
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

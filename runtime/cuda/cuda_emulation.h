#pragma once
// CUDA's built-ins for the host compiler, so that a test can run a kernel's source on the
// host without a GPU (attention_kernels_emulation_test, library_kernels_emulation_test,
// pool_emulation_test, recurrent_kernel_emulation_test): every thread of a block is a
// std::thread, __syncthreads a barrier of the block, a warp shuffle two barriers of the
// warp around a slot array. It checks a kernel's arithmetic, indexing and synchronization
// as written, not its speed, its memory model or its compiler; include it before the
// kernels' source, and only in tests (slow: a thread per CUDA thread).
//
// Two launches, all one-dimensional (x only):
// - run_grid(blocks, threads, kernel): blocks run one after another, `extern __shared__`
//   memory is the test's own array (below).
// - run_cooperative_grid(blocks, threads, shared_bytes, kernel), as cudaLaunchKernelEx
//   with cudaLaunchAttributeCooperative: every block's threads are alive at once, so a
//   grid-wide barrier works, and each block has its own `shared_bytes` of dynamic shared
//   memory (filled with garbage, as on a device), which a kernel names through
//   WEFT_DYNAMIC_SHARED(type, name) (a `type*`; nvcc's side is `extern __shared__ type
//   name[]`, defined by the kernel source).
//
// What it gives:
// - threadIdx, blockIdx, blockDim, gridDim.
// - __syncthreads; __shfl_sync and __shfl_xor_sync of any type of up to 8 bytes (float,
//   double, ints), all 32 lanes of the warp taking part (the kernels' masks are full).
// - float4 and double2 (16-byte aligned, as CUDA's), for the kernels' 16-byte loads.
// - atomicCAS (int) and atomicAdd (int, unsigned, unsigned long long, float, double),
//   through std::atomic_ref; __threadfence (a sequentially consistent fence) and
//   __nanosleep (a yield), for a grid barrier that polls a counter through a volatile
//   load (plain C++ volatile: a load the compiler neither drops nor hoists, which x86
//   makes atomic for an aligned word).
// - The math library's float overloads (exp(float) is expf, as in device code) beside
//   libm's double functions, and min of int64_t.
// - `__shared__`: by default nothing, for `extern __shared__` arrays, which the test
//   defines itself (one array, every block's: run_grid's blocks run one at a time). A
//   kernel source that declares a fixed-size `__shared__` array in a function defines
//   WEFT_CUDA_EMULATION_STATIC_SHARED before including this header: `__shared__` is then
//   `static`, one array that every thread of the running block shares. One translation
//   unit cannot have both kinds, and neither is per block under run_cooperative_grid:
//   there, use WEFT_DYNAMIC_SHARED.

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __launch_bounds__(threads)
#if defined(WEFT_CUDA_EMULATION_STATIC_SHARED)
#define __shared__ static
#else
#define __shared__
#endif

namespace weft::cuda::emulation {

struct Dim3 {
  unsigned x = 0;
};

/// 16 bytes of a block's dynamic shared memory (its alignment, as CUDA's).
struct alignas(16) SharedChunk {
  unsigned char bytes[16];
};

/// A block being run: its barrier, one per warp, each thread's shuffle slot and its
/// dynamic shared memory (run_cooperative_grid's; empty under run_grid).
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes = 0)
      : sync(threads), slots(threads), shared((shared_bytes + sizeof(SharedChunk) - 1) / sizeof(SharedChunk)) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<std::barrier<>>(32));
    if (!shared.empty()) std::memset(static_cast<void*>(shared.data()), 0x7f, shared.size() * sizeof(SharedChunk));
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<uint64_t> slots;  ///< Up to 8 bytes per thread.
  std::vector<SharedChunk> shared;
};

inline thread_local Dim3 thread_index, block_index;
inline Dim3 block_dim, grid_dim;
/// The calling thread's block.
inline thread_local Block* block = nullptr;

/// Runs `kernel()` as `blocks` blocks of `threads` threads (a multiple of 32).
template <typename Kernel>
void run_grid(unsigned blocks, unsigned threads, Kernel&& kernel) {
  block_dim.x = threads;
  grid_dim.x = blocks;
  for (unsigned b = 0; b < blocks; ++b) {
    Block current(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        thread_index.x = t;
        block_index.x = b;
        block = &current;
        kernel();
      });
    }
    for (std::thread& t : pool) t.join();
  }
}

/// Runs `kernel()` as `blocks` blocks of `threads` threads (a multiple of 32), all alive
/// at once (a cooperative launch: a grid-wide barrier may hold them), each block with its
/// own `shared_bytes` of dynamic shared memory (WEFT_DYNAMIC_SHARED).
template <typename Kernel>
void run_cooperative_grid(unsigned blocks, unsigned threads, size_t shared_bytes, Kernel&& kernel) {
  block_dim.x = threads;
  grid_dim.x = blocks;
  std::vector<std::unique_ptr<Block>> grid;
  for (unsigned b = 0; b < blocks; ++b) grid.push_back(std::make_unique<Block>(threads, shared_bytes));
  std::vector<std::thread> pool;
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, b, t] {
        thread_index.x = t;
        block_index.x = b;
        block = grid[b].get();
        kernel();
      });
    }
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace weft::cuda::emulation

#define threadIdx ::weft::cuda::emulation::thread_index
#define blockIdx ::weft::cuda::emulation::block_index
#define blockDim ::weft::cuda::emulation::block_dim
#define gridDim ::weft::cuda::emulation::grid_dim

inline void __syncthreads() { weft::cuda::emulation::block->sync.arrive_and_wait(); }

/// The running block's dynamic shared memory as a `type*` named `name`
/// (run_cooperative_grid's `shared_bytes`).
#define WEFT_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::weft::cuda::emulation::block->shared.data())

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned /*ns*/) { std::this_thread::yield(); }

/// Lane `source`'s x, all 32 lanes taking part.
template <typename T>
T __shfl_sync(unsigned /*mask*/, T x, int source) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t));
  using namespace weft::cuda::emulation;
  const unsigned warp = thread_index.x / 32;
  block->warps[warp]->arrive_and_wait();  // The slots' last reads are done.
  std::memcpy(&block->slots[thread_index.x], &x, sizeof(T));
  block->warps[warp]->arrive_and_wait();
  T out;
  std::memcpy(&out, &block->slots[warp * 32 + static_cast<unsigned>(source)], sizeof(T));
  return out;
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T x, int lane_mask) {
  return __shfl_sync(mask, x, static_cast<int>(threadIdx.x % 32) ^ lane_mask);
}

/// CUDA's 16-byte vector types.
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};

inline int atomicCAS(int* at, int compare, int value) {
  std::atomic_ref<int>(*at).compare_exchange_strong(compare, value);
  return compare;  // The old value, whether or not it was swapped.
}
inline int atomicAdd(int* at, int v) { return std::atomic_ref<int>(*at).fetch_add(v); }
inline unsigned atomicAdd(unsigned* at, unsigned v) { return std::atomic_ref<unsigned>(*at).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* at, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*at).fetch_add(v);
}
inline float atomicAdd(float* at, float v) { return std::atomic_ref<float>(*at).fetch_add(v); }
inline double atomicAdd(double* at, double v) { return std::atomic_ref<double>(*at).fetch_add(v); }

// Device code's math: the float overloads next to libm's double functions.
using std::cos;
using std::erf;
using std::exp;
using std::fmax;
using std::log;
using std::log1p;
using std::pow;
using std::sin;
using std::tanh;

/// CUDA's min, for the integer types its kernels compare.
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

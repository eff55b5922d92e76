#pragma once
// CUDA's built-ins for the host compiler, so that a test can run a kernel's source on the
// host without a GPU (attention_kernels_emulation_test, library_kernels_emulation_test,
// pool_emulation_test): every thread of a block is a std::thread, __syncthreads a barrier
// of the block, a warp shuffle two barriers of the warp around a slot array, and
// `extern __shared__` memory the test's own array. Blocks run one after another. It
// checks a kernel's arithmetic, indexing and synchronization as written, not its speed,
// its memory model or its compiler; include it before the kernels' source, and only in
// tests (slow: a thread per CUDA thread).
//
// What it gives, all one-dimensional (x only):
// - threadIdx, blockIdx, blockDim, gridDim; run_grid(blocks, threads, kernel) launches.
// - __syncthreads; __shfl_sync and __shfl_xor_sync of any type of up to 8 bytes (float,
//   double, ints), all 32 lanes of the warp taking part (the kernels' masks are full).
// - float4 and double2 (16-byte aligned, as CUDA's), for the kernels' 16-byte loads.
// - atomicCAS (int) and atomicAdd (int, unsigned long long, float, double), through
//   std::atomic_ref.
// - The math library's float overloads (exp(float) is expf, as in device code) beside
//   libm's double functions, and min of int64_t.
// - `__shared__`: by default nothing, for `extern __shared__` arrays, which the test
//   defines itself (one array, every block's: blocks run one at a time). A kernel source
//   that declares a fixed-size `__shared__` array in a function defines
//   WEFT_CUDA_EMULATION_STATIC_SHARED before including this header: `__shared__` is then
//   `static`, one array that every thread of the running block shares. One translation
//   unit cannot have both kinds.

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

/// The block being run: its barrier, one per warp, and each thread's shuffle slot.
struct Block {
  explicit Block(unsigned threads) : sync(threads), slots(threads) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<std::barrier<>>(32));
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<uint64_t> slots;  ///< Up to 8 bytes per thread.
};

inline thread_local Dim3 thread_index, block_index;
inline Dim3 block_dim, grid_dim;
inline Block* block = nullptr;

/// Runs `kernel()` as `blocks` blocks of `threads` threads (a multiple of 32).
template <typename Kernel>
void run_grid(unsigned blocks, unsigned threads, Kernel&& kernel) {
  block_dim.x = threads;
  grid_dim.x = blocks;
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
#define gridDim ::weft::cuda::emulation::grid_dim

inline void __syncthreads() { weft::cuda::emulation::block->sync.arrive_and_wait(); }

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

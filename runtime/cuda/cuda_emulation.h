#pragma once
// CUDA's built-ins for the host compiler, so that a test can run a kernel's source on the
// host without a GPU (attention_kernels_emulation_test, library_kernels_emulation_test,
// pool_emulation_test, recurrent_kernel_emulation_test): every thread of a block is a
// fiber (its own stack and registers, ucontext's) on the launching thread, __syncthreads a
// barrier of the block, a warp shuffle two barriers of the warp around a slot array. A
// fiber runs until it waits (a barrier, a shuffle, an mma, __nanosleep) or returns; then
// the next one that can run does, in thread order, block by block. It checks a kernel's
// arithmetic, indexing and synchronization as written (a grid whose threads all wait and
// none can go on is a deadlock, reported and aborted), not its speed, its memory model or
// its compiler; include it before the kernels' source, and only in tests (slow: a stack
// and a context switch per CUDA thread). Fibers, not one std::thread per CUDA thread: on
// a few cores, hundreds of threads spent most of recurrent_kernel_emulation_test's CPU
// time in the kernel, spinning, yielding and switching at every barrier. Under
// AddressSanitizer (tools/sanitize asan) each switch between stacks is announced to it
// (leaving, arrived).
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
// - The warp-level tensor-core product PTX's `mma.sync.aligned.m16n8k16.row.col.f32
//   .{bf16,f16}.{bf16,f16}.f32` as emulation::mma_m16n8k16 (a warp collective like the
//   shuffles: every lane gives its fragments, every lane gets its part of D), each
//   lane's fragments as the PTX ISA lays them out (below). Products are exact (a product
//   of two bf16 or two f16 fits a float) and summed in double, then rounded to f32 once:
//   the hardware's f32 accumulation order and rounding are not specified, so a kernel
//   is checked at a tolerance, while the emulation's own test (cuda_emulation_test) is
//   exact on values whose sums no rounding touches.
// - float4 and double2 (16-byte aligned, as CUDA's), for the kernels' 16-byte loads.
// - atomicCAS (int) and atomicAdd (int, unsigned, unsigned long long, float, double),
//   through std::atomic_ref; __threadfence (a sequentially consistent fence) and
//   __nanosleep (the other fibers run), for a grid barrier that polls a counter through a volatile
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

#include <sys/mman.h>
#include <ucontext.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

// AddressSanitizer (tools/sanitize asan): GCC says so by __SANITIZE_ADDRESS__, clang by
// __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define WEFT_CUDA_EMULATION_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_CUDA_EMULATION_ASAN 1
#endif
#endif
#if defined(WEFT_CUDA_EMULATION_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/// Defined for a kernel source that has to tell emulation from nvcc's host pass.
#define WEFT_CUDA_EMULATION 1
#define __global__
#define __device__
#define __launch_bounds__(...)
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

struct Block;

/// Each fiber's stack, with a page below it that faults on overflow.
constexpr size_t kFiberStackBytes = 256 * 1024, kGuardBytes = 4096;

/// A stack that one side of a switch leaves and the other runs on: where it is (`bottom`,
/// its lowest address, and `size`) and AddressSanitizer's fake stack of the side that
/// left it (its frames kept apart for detect_stack_use_after_return).
struct Stack {
  const void* bottom = nullptr;
  size_t size = 0;
  void* fake = nullptr;
};

/// AddressSanitizer follows one stack per thread; every swapcontext between the
/// scheduler's stack and a fiber's is announced to it, before (`leaving`: `to` is the
/// stack about to run; a fiber that has returned passes no `from`, and its fake stack
/// goes) and after (`arrived`, on the new stack, which learns where the one it came from
/// is). Unannounced, it takes the thread's stack for the one running: an unwinding on a
/// fiber's stack (an exception) is ignored ("False positive error reports may follow")
/// and leaves its redzones poisoned, where later calls report stack errors that are not
/// there (cuda_emulation_test's AFibersStackIsKnownToAddressSanitizer). Without the
/// sanitizer both do nothing; UndefinedBehaviorSanitizer needs neither.
inline void leaving(Stack* from, const Stack& to) {
#if defined(WEFT_CUDA_EMULATION_ASAN)
  __sanitizer_start_switch_fiber(from != nullptr ? &from->fake : nullptr, to.bottom, to.size);
#else
  (void)from, (void)to;
#endif
}
inline void arrived(const Stack& here, Stack* from = nullptr) {
#if defined(WEFT_CUDA_EMULATION_ASAN)
  __sanitizer_finish_switch_fiber(here.fake, from != nullptr ? &from->bottom : nullptr,
                                  from != nullptr ? &from->size : nullptr);
#else
  (void)here, (void)from;
#endif
}

/// One CUDA thread: its context, stack and place in the grid.
struct Fiber {
  ucontext_t context;
  void* mapping = nullptr;  ///< Its stack's guard page and the stack above it.
  Stack stack;
  Dim3 thread, block_id;
  Block* block = nullptr;
  bool waiting = false, done = false;
};

/// The fibers of the launch being run (on the launching thread), the one running and the
/// context they return to, on the launching thread's stack.
struct Launch {
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  ucontext_t scheduler;
  Stack scheduler_stack;  ///< Where it is, as the first fiber to run learns.
  const std::function<void()>* kernel = nullptr;
};
inline thread_local Launch* launch = nullptr;

/// The running fiber gives way to the next one that can run (it stays runnable unless it
/// set its `waiting`).
inline void switch_to_scheduler() {
  Fiber* me = launch->running;
  leaving(&me->stack, launch->scheduler_stack);
  swapcontext(&me->context, &launch->scheduler);
  arrived(me->stack);
}

/// A barrier of `count` fibers: each one to arrive waits until the last one does.
class Barrier {
 public:
  explicit Barrier(unsigned count) : count_(count) {}
  void arrive_and_wait() {
    if (waiters_.size() + 1 == count_) {
      for (Fiber* f : waiters_) f->waiting = false;
      waiters_.clear();
      return;
    }
    Fiber* me = launch->running;
    me->waiting = true;
    waiters_.push_back(me);
    switch_to_scheduler();
  }

 private:
  const size_t count_;
  std::vector<Fiber*> waiters_;
};

/// A block being run: its barrier, one per warp, each thread's shuffle slot and its
/// dynamic shared memory (run_cooperative_grid's; empty under run_grid).
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes = 0)
      : sync(threads), slots(threads), shared((shared_bytes + sizeof(SharedChunk) - 1) / sizeof(SharedChunk)) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
    if (!shared.empty()) std::memset(static_cast<void*>(shared.data()), 0x7f, shared.size() * sizeof(SharedChunk));
  }
  Barrier sync;
  std::vector<std::unique_ptr<Barrier>> warps;
  std::vector<uint64_t> slots;  ///< Up to 8 bytes per thread.
  std::vector<SharedChunk> shared;
  /// Each thread's mma fragments (mma_m16n8k16): 4 registers of A, 2 of B, 4 of C.
  std::vector<std::array<uint32_t, 10>> fragments{slots.size()};
};

inline thread_local Dim3 thread_index, block_index;
inline Dim3 block_dim, grid_dim;
/// The running fiber's block.
inline thread_local Block* block = nullptr;

inline void fiber_main() {
  arrived(launch->running->stack, &launch->scheduler_stack);
  (*launch->kernel)();
  launch->running->done = true;
  leaving(/*from=*/nullptr, launch->scheduler_stack);
}  // then on to uc_link, the scheduler

/// Gives `f` its stack and a context that starts in fiber_main and ends in `scheduler`.
/// (A function of its own: getcontext returns twice, and GCC warns that the locals of a
/// function calling it, a loop's index, might be clobbered.)
inline void make_fiber(Fiber& f, ucontext_t* scheduler) {
  f.mapping = mmap(nullptr, kFiberStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (f.mapping == MAP_FAILED || mprotect(f.mapping, kGuardBytes, PROT_NONE) != 0 || getcontext(&f.context) != 0) {
    std::perror("cuda_emulation: a fiber's stack");
    std::abort();
  }
  f.stack.bottom = f.context.uc_stack.ss_sp = static_cast<char*>(f.mapping) + kGuardBytes;
  f.stack.size = f.context.uc_stack.ss_size = kFiberStackBytes;
  f.context.uc_link = scheduler;
  makecontext(&f.context, fiber_main, 0);
}

/// Runs `kernel()` on one fiber per thread of each block of `grid` (blockIdx.x from
/// `first_block` on), all alive at once, until every one has returned; aborts, naming a
/// waiting thread, when every fiber left waits on a barrier (a deadlock: on a device, a
/// hang).
inline void run_fibers(std::vector<std::unique_ptr<Block>>& grid, unsigned threads,
                       const std::function<void()>& kernel, unsigned first_block = 0) {
  Launch current;
  current.kernel = &kernel;
  current.fibers.resize(grid.size() * threads);
  for (size_t i = 0; i < current.fibers.size(); ++i) {
    Fiber& f = current.fibers[i];
    f.block_id.x = first_block + static_cast<unsigned>(i / threads);
    f.thread.x = static_cast<unsigned>(i % threads);
    f.block = grid[i / threads].get();
    make_fiber(f, &current.scheduler);
  }
  Launch* const outer = launch;
  launch = &current;
  for (size_t finished = 0; finished < current.fibers.size();) {
    bool ran = false;
    for (Fiber& f : current.fibers) {
      if (f.done || f.waiting) continue;
      ran = true;
      current.running = &f;
      thread_index = f.thread;
      block_index = f.block_id;
      block = f.block;
      leaving(&current.scheduler_stack, f.stack);
      swapcontext(&current.scheduler, &f.context);
      arrived(current.scheduler_stack);
      finished += f.done;
    }
    if (!ran) {
      for (const Fiber& f : current.fibers) {
        if (f.done) continue;
        std::fprintf(stderr, "cuda_emulation: deadlock: every thread left waits on a barrier, block %u thread %u "
                     "among them\n", f.block_id.x, f.thread.x);
        break;
      }
      std::abort();
    }
  }
  launch = outer;
  block = nullptr;
  for (Fiber& f : current.fibers) {
#if defined(WEFT_CUDA_EMULATION_ASAN)
    // Its frames' poisoned redzones must not outlive it: the next mapping at this address
    // would start out with them.
    ASAN_UNPOISON_MEMORY_REGION(f.stack.bottom, f.stack.size);
#endif
    munmap(f.mapping, kFiberStackBytes + kGuardBytes);
  }
}

/// Runs `kernel()` as `blocks` blocks of `threads` threads (a multiple of 32).
template <typename Kernel>
void run_grid(unsigned blocks, unsigned threads, Kernel&& kernel) {
  block_dim.x = threads;
  grid_dim.x = blocks;
  const std::function<void()> body = kernel;
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<std::unique_ptr<Block>> one;
    one.push_back(std::make_unique<Block>(threads));
    run_fibers(one, threads, body, /*first_block=*/b);
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
  run_fibers(grid, threads, std::function<void()>(kernel));
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
/// The other fibers run (a poll's wait).
inline void __nanosleep(unsigned /*ns*/) { weft::cuda::emulation::switch_to_scheduler(); }

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

namespace weft::cuda::emulation {

/// The 16-bit element type of an mma's A and B (PTX's .bf16 or .f16).
enum class MmaType { bf16, f16 };

/// One 16-bit element of a fragment register as a float (exact).
inline float mma_element(uint32_t reg, int half, MmaType type) {
  const uint32_t bits = half == 0 ? reg & 0xffffu : reg >> 16;  // the lower half is the lower index
  if (type == MmaType::bf16) {
    const uint32_t u = bits << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  }
  // binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits.
  const int exponent = static_cast<int>((bits >> 10) & 0x1fu), mantissa = static_cast<int>(bits & 0x3ffu);
  const float sign = (bits & 0x8000u) != 0 ? -1.0f : 1.0f;
  if (exponent == 0x1f) return mantissa != 0 ? std::nanf("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  return sign * std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
}

/// PTX's `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 {d}, {a}, {b}, {c}` with T bf16
/// or f16, D[16×8] = A[16×16]·B[16×8] + C, called by all 32 lanes of a warp at once (a
/// collective, like __shfl_sync). Each lane holds, as the PTX ISA's "Matrix Fragments for
/// mma.m16n8k16 with floating point type" (PTX ISA 8.x, section 9.7.14.5.8) lays them out,
/// with groupID = lane / 4 and threadID_in_group = lane % 4:
/// - A: four .b32 registers holding a0 … a7 (a[i / 2], a[i] in its lower half for even i);
///   ai is A[row][col] with row = groupID for a0, a1, a4, a5 and groupID + 8 for a2, a3, a6,
///   a7; col = threadID_in_group · 2 + (i & 1) for a0 … a3 and that + 8 for a4 … a7.
/// - B: two .b32 registers holding b0 … b3; bi is B[row][col] with row = threadID_in_group
///   · 2 + (i & 1) for b0, b1 and that + 8 for b2, b3; col = groupID.
/// - C and D: four f32 c0 … c3; ci is C[row][col] with row = groupID for c0, c1 and
///   groupID + 8 for c2, c3; col = threadID_in_group · 2 + (i & 1).
inline void mma_m16n8k16(MmaType type, float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
  const unsigned lane = thread_index.x % 32, warp = thread_index.x / 32;
  std::array<uint32_t, 10>& mine = block->fragments[thread_index.x];
  block->warps[warp]->arrive_and_wait();  // The fragments' last reads are done.
  for (int i = 0; i < 4; ++i) mine[static_cast<size_t>(i)] = a[i];
  for (int i = 0; i < 2; ++i) mine[static_cast<size_t>(4 + i)] = b[i];
  for (int i = 0; i < 4; ++i) std::memcpy(&mine[static_cast<size_t>(6 + i)], &c[i], sizeof(float));
  block->warps[warp]->arrive_and_wait();
  const int group = static_cast<int>(lane / 4), in_group = static_cast<int>(lane % 4);
  // This lane's rows of A and C (group, group + 8) are in its group's lanes' fragments,
  // its columns of B (in_group · 2, + 1) in groups in_group · 2 and + 1: only those are
  // read (the rest of A, B and C is not used).
  float A[16][16], B[16][8], C[16][8];
  for (unsigned l = 0; l < 32; ++l) {
    const std::array<uint32_t, 10>& f = block->fragments[warp * 32 + l];
    const int l_group = static_cast<int>(l / 4), l_in_group = static_cast<int>(l % 4);
    if (l_group == group) {
      for (int i = 0; i < 8; ++i) {
        const int row = l_group + ((i / 2) % 2 == 1 ? 8 : 0), col = l_in_group * 2 + (i & 1) + (i >= 4 ? 8 : 0);
        A[row][col] = mma_element(f[static_cast<size_t>(i / 2)], i & 1, type);
      }
      for (int i = 0; i < 4; ++i) {
        std::memcpy(&C[l_group + (i >= 2 ? 8 : 0)][l_in_group * 2 + (i & 1)], &f[static_cast<size_t>(6 + i)],
                    sizeof(float));
      }
    }
    if (l_group / 2 == in_group) {
      for (int i = 0; i < 4; ++i) {
        B[l_in_group * 2 + (i & 1) + (i >= 2 ? 8 : 0)][l_group] =
            mma_element(f[static_cast<size_t>(4 + i / 2)], i & 1, type);
      }
    }
  }
  for (int i = 0; i < 4; ++i) {
    const int row = group + (i >= 2 ? 8 : 0), col = in_group * 2 + (i & 1);
    double sum = C[row][col];
    for (int q = 0; q < 16; ++q) sum += static_cast<double>(A[row][q]) * B[q][col];
    d[i] = static_cast<float>(sum);
  }
}

}  // namespace weft::cuda::emulation

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

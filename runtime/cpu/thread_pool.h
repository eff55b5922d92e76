#pragma once
// One persistent thread pool for the CPU runtime: N-1 worker threads plus the thread
// that calls in. Kernels split their loops with `parallel_for`; reductions use
// `parallel_reduce`, whose result is bitwise reproducible for a given thread count.
//
//   weft::cpu::ThreadPool pool(/*num_threads=*/2);
//   std::vector<float> a(1 << 20, 1.0f), b(1 << 20, 2.0f), c(1 << 20);
//   pool.parallel_for(c.size(), /*grain=*/4096, [&](int64_t begin, int64_t end) {
//     for (int64_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
//   });
//   float sum = pool.parallel_reduce(
//       c.size(), /*grain=*/4096, /*identity=*/0.0f,
//       [&](int64_t begin, int64_t end) {
//         float s = 0.0f;
//         for (int64_t i = begin; i < end; ++i) s += c[i];
//         return s;
//       },
//       [](float x, float y) { return x + y; });  // sum == 3 * 2^20, every run
//
// Determinism. The range [0, n) is cut into `Partition::make(n, grain, num_threads())`:
// at most one chunk per thread, each at least `grain` long (unless n < grain), sizes
// differing by at most one. The boundaries depend only on (n, grain, thread count),
// never on timing; chunk i always runs on thread i (0 = the caller). A reduction
// reduces each chunk in index order and folds the partials left to right, chunk 0
// first, so float sums come out bitwise identical run after run.
//
// Waiting. Idle workers block on a condition variable, so they leave the core to other
// work (ENVIRONMENT.md: two busy-waiting pools fight on 2 cores). Before blocking they
// may spin for `Options::spin_us` microseconds, which cuts dispatch latency when calls
// come back to back; thread_pool_bench measures what that buys.
//
// Inline cases. A pool of 1 thread runs everything on the caller. A call made from
// inside a chunk (nested), or from a second thread while the pool is busy, runs inline
// on its caller over the same partition, so its result matches the parallel one.

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace weft::cpu {

/// The static split of [0, n) into chunks; a pure function of (n, grain, threads).
struct Partition {
  int64_t n = 0;
  int num_chunks = 0;

  /// At most `threads` chunks of at least `grain` elements each (one chunk when
  /// 0 < n < grain, none when n == 0); `grain < 1` counts as 1.
  static Partition make(int64_t n, int64_t grain, int threads);

  /// The first index of chunk `i`; `begin(num_chunks) == n`.
  int64_t begin(int i) const {
    const int64_t base = n / num_chunks, rem = n % num_chunks;
    return i * base + (i < rem ? i : rem);
  }
  int64_t end(int i) const { return begin(i + 1); }
};

/// The thread count a pool gets by default: $WEFT_NUM_THREADS when set to a positive
/// number (thread_count_problem refuses other values where a count enters weft),
/// otherwise std::thread::hardware_concurrency() (at least 1).
int default_num_threads();

/// Why a pool of `requested` threads (0: the default) cannot be what was asked for: a
/// negative count, or $WEFT_NUM_THREADS set to anything but a positive count when the
/// default is asked for (default_num_threads() would quietly use every core). The
/// message names the value and where it came from; "" when the count is fine. Checked
/// where a count enters weft (cpu::Executor::create), since a pool cannot fail.
std::string thread_count_problem(int requested);

class ThreadPool {
 public:
  struct Options {
    /// Microseconds a worker (and a waiting caller) spins before it blocks; 0 blocks at
    /// once. On an idle 2-core machine waking a blocked worker costs 40-60 us per call
    /// and a 50 us spin cuts that to under 1 us (thread_pool_bench); the spin is bounded,
    /// so a pool left idle longer than that holds no core.
    int spin_us = 50;
  };

  /// Starts `num_threads - 1` workers; `num_threads < 1` means default_num_threads().
  explicit ThreadPool(int num_threads = 0);
  ThreadPool(int num_threads, Options options);
  /// Stops and joins the workers. Must not run while a call on this pool is in flight.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Workers plus the caller.
  int num_threads() const { return num_threads_; }

  /// Calls `f(begin, end)` once per chunk of Partition::make(n, grain, num_threads()),
  /// chunk 0 on the caller; returns when all chunks are done. The first exception a
  /// chunk throws is rethrown here (the other chunks still run).
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& f) {
    for_each_chunk(n, grain, [&f](int, int64_t begin, int64_t end) { f(begin, end); });
  }

  /// As parallel_for, but `f(chunk, begin, end)` also gets the chunk index, which is the
  /// index of the thread running it (for per-thread scratch).
  template <typename F>
  void for_each_chunk(int64_t n, int64_t grain, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run(Partition::make(n, grain, num_threads_),
        [](void* ctx, int chunk, int64_t begin, int64_t end) {
          (*static_cast<Fn*>(ctx))(chunk, begin, end);
        },
        const_cast<void*>(static_cast<const void*>(&f)));
  }

  /// Reduces [0, n): `map(begin, end)` gives one chunk's partial (it should reduce its
  /// range in index order); the partials are folded as
  /// combine(...combine(combine(identity, p0), p1)..., pk), in that order always.
  template <typename T, typename Map, typename Combine>
  T parallel_reduce(int64_t n, int64_t grain, T identity, Map&& map, Combine&& combine) {
    const Partition part = Partition::make(n, grain, num_threads_);
    // Partials live on the stack for the usual thread counts: a step allocates nothing.
    constexpr int kInline = 16;
    T inline_partials[kInline];
    std::vector<T> heap_partials;
    T* partials = inline_partials;
    if (part.num_chunks > kInline) {
      heap_partials.resize(part.num_chunks);
      partials = heap_partials.data();
    }
    auto body = [&](int chunk, int64_t begin, int64_t end) {
      partials[chunk] = map(begin, end);
    };
    run(part,
        [](void* ctx, int chunk, int64_t begin, int64_t end) {
          (*static_cast<decltype(body)*>(ctx))(chunk, begin, end);
        },
        &body);
    T acc = identity;
    for (int i = 0; i < part.num_chunks; ++i) acc = combine(acc, partials[i]);
    return acc;
  }

  /// True on a thread that is running a chunk of some pool (where calls run inline).
  static bool in_parallel_region();

 private:
  using ChunkFn = void (*)(void* ctx, int chunk, int64_t begin, int64_t end);
  struct State;

  /// Runs every chunk of `part`: in parallel when the pool is free, else inline.
  void run(const Partition& part, ChunkFn fn, void* ctx);
  static void run_inline(const Partition& part, ChunkFn fn, void* ctx);
  void worker_loop(int index);

  int num_threads_;
  Options options_;
  std::unique_ptr<State> state_;
};

}  // namespace weft::cpu

#include "runtime/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace weft::cpu {

namespace {

thread_local bool tls_in_region = false;

// Marks the current thread as running a chunk for the scope, restoring the old value.
class RegionScope {
 public:
  RegionScope() : saved_(tls_in_region) { tls_in_region = true; }
  ~RegionScope() { tls_in_region = saved_; }

 private:
  bool saved_;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until `done()` or `spin_us` have passed; returns done().
template <typename Done>
bool spin_until(int spin_us, Done done) {
  if (spin_us <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    // Reading the clock costs ~20 ns; look at it every 64 pauses.
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

Partition Partition::make(int64_t n, int64_t grain, int threads) {
  Partition p;
  p.n = n < 0 ? 0 : n;
  if (p.n == 0) return p;
  grain = std::max<int64_t>(grain, 1);
  threads = std::max(threads, 1);
  p.num_chunks = static_cast<int>(std::clamp<int64_t>(p.n / grain, 1, threads));
  return p;
}

namespace {

// $WEFT_NUM_THREADS as a count: 0 when unset or empty, -1 when set to anything but a
// positive integer (thread_count_problem names it).
int env_num_threads(const char** text) {
  const char* env = std::getenv("WEFT_NUM_THREADS");
  if (text) *text = env;
  if (!env || *env == '\0') return 0;
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || errno == ERANGE || n < 1 || n > std::numeric_limits<int>::max()) return -1;
  return static_cast<int>(n);
}

}  // namespace

int default_num_threads() {
  if (const int n = env_num_threads(nullptr); n > 0) return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string thread_count_problem(int requested) {
  if (requested < 0) {
    return "num_threads=" + std::to_string(requested) +
           " (an option): must be 0 ($WEFT_NUM_THREADS or every core) or a positive count";
  }
  const char* env = nullptr;
  if (requested == 0 && env_num_threads(&env) < 0) {
    return "WEFT_NUM_THREADS='" + std::string(env) +
           "' (the environment): must be a positive count; unset it to use every core";
  }
  return "";
}

// Shared between the caller and the workers. A job is published by bumping
// `generation` under `mu`; worker i runs chunk i of it (if there is one) and
// decrements `pending`; the caller returns when `pending` reaches 0. Because the
// caller cannot publish the next job before every chunk of this one is done, a worker
// never misses a job in which it has a chunk, even if it wakes late.
struct ThreadPool::State {
  std::mutex mu;
  std::condition_variable work_cv;  // Workers wait here for a new generation.
  std::condition_variable done_cv;  // The caller waits here for pending == 0.
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  int sleeping_workers = 0;    // Guarded by mu: notify only when someone sleeps.
  bool caller_sleeping = false;  // Guarded by mu.
  bool stop = false;             // Guarded by mu.
  // The current job; written under mu before `generation` is bumped.
  Partition part;
  ChunkFn fn = nullptr;
  void* ctx = nullptr;
  std::exception_ptr error;  // Guarded by mu: the first exception a worker's chunk threw.
  std::mutex dispatch_mu;    // Held by the one caller whose job the workers run.
  std::vector<std::thread> workers;
};

ThreadPool::ThreadPool(int num_threads) : ThreadPool(num_threads, Options{}) {}

ThreadPool::ThreadPool(int num_threads, Options options)
    : num_threads_(num_threads < 1 ? default_num_threads() : num_threads),
      options_(options),
      state_(std::make_unique<State>()) {
  state_->workers.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) {
    try {
      state_->workers.emplace_back([this, i] { worker_loop(i); });
    } catch (const std::system_error& e) {
      // The system refuses another thread (WEFT_NUM_THREADS=100000, a low `ulimit -u` or
      // `ulimit -v`): run on those started rather than terminate with them unjoined.
      std::fprintf(stderr, "weft: warning: started %d of the %d threads asked for (%s); running on %d\n", i,
                   num_threads_, e.what(), i);
      num_threads_ = i;
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->work_cv.notify_all();
  for (std::thread& t : state_->workers) t.join();
}

bool ThreadPool::in_parallel_region() { return tls_in_region; }

void ThreadPool::run_inline(const Partition& part, ChunkFn fn, void* ctx) {
  RegionScope scope;
  for (int i = 0; i < part.num_chunks; ++i) fn(ctx, i, part.begin(i), part.end(i));
}

void ThreadPool::run(const Partition& part, ChunkFn fn, void* ctx) {
  if (part.num_chunks == 0) return;
  if (part.num_chunks == 1 || tls_in_region) return run_inline(part, fn, ctx);
  State& s = *state_;
  std::unique_lock<std::mutex> dispatch(s.dispatch_mu, std::try_to_lock);
  if (!dispatch.owns_lock()) return run_inline(part, fn, ctx);  // Another caller's job.

  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.part = part;
    s.fn = fn;
    s.ctx = ctx;
    s.error = nullptr;
    s.pending.store(part.num_chunks - 1, std::memory_order_relaxed);
    s.generation.fetch_add(1, std::memory_order_release);
    // A spinning worker sees the new generation without a wake-up (a futex call).
    if (s.sleeping_workers > 0) s.work_cv.notify_all();
  }

  std::exception_ptr caller_error;
  {
    RegionScope scope;
    try {
      fn(ctx, 0, part.begin(0), part.end(0));
    } catch (...) {
      caller_error = std::current_exception();
    }
  }

  auto done = [&s] { return s.pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(options_.spin_us, done)) {
    std::unique_lock<std::mutex> lock(s.mu);
    s.caller_sleeping = true;
    s.done_cv.wait(lock, done);
    s.caller_sleeping = false;
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    error = caller_error ? caller_error : s.error;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int index) {
  State& s = *state_;
  uint64_t seen = 0;
  for (;;) {
    auto has_news = [&] { return s.generation.load(std::memory_order_acquire) != seen; };
    spin_until(options_.spin_us, has_news);
    Partition part;
    ChunkFn fn;
    void* ctx;
    {
      // The job is read under mu, so the fields and the generation are one snapshot.
      std::unique_lock<std::mutex> lock(s.mu);
      if (!has_news() && !s.stop) {
        ++s.sleeping_workers;
        s.work_cv.wait(lock, [&] { return has_news() || s.stop; });
        --s.sleeping_workers;
      }
      if (s.stop) return;
      seen = s.generation.load(std::memory_order_relaxed);
      part = s.part;
      fn = s.fn;
      ctx = s.ctx;
    }
    if (index >= part.num_chunks) continue;  // No chunk for this thread in this job.
    {
      RegionScope scope;
      try {
        fn(ctx, index, part.begin(index), part.end(index));
      } catch (...) {
        std::lock_guard<std::mutex> lock(s.mu);
        if (!s.error) s.error = std::current_exception();
      }
    }
    if (s.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taking mu orders this against the caller's check-then-wait: no lost wake-up.
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.caller_sleeping) s.done_cv.notify_one();
    }
  }
}

}  // namespace weft::cpu

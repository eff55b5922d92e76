// Prints what the thread pool costs and buys on this machine:
//   - dispatch latency of an empty parallel_for over all threads (µs per call), with
//     workers blocking at once (spin 0) or spinning a while first, for calls back to
//     back and for calls separated by 20 µs of the caller's own work (a kernel between);
//   - throughput of c[i] = a[i] + b[i] over 1M floats: a plain loop, a pool of 1 thread
//     and a pool of 2 threads (ms per call and GB/s counting 12 bytes per element).
// Figures are medians over several repeats.
//
//   bazel run -c opt //runtime/cpu:thread_pool_bench

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "runtime/cpu/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Busy work on the caller, standing in for the kernel between two parallel calls.
void busy_for_us(double us) {
  const auto t0 = Clock::now();
  while (seconds_since(t0) * 1e6 < us) {
  }
}

double dispatch_us(weft::cpu::ThreadPool& pool, double gap_us) {
  constexpr int kCalls = 5000;
  std::vector<double> per_call;
  for (int rep = 0; rep < 9; ++rep) {
    double total = 0.0;
    for (int i = 0; i < kCalls; ++i) {
      if (gap_us > 0) busy_for_us(gap_us);
      const auto t0 = Clock::now();
      pool.parallel_for(pool.num_threads(), 1, [](int64_t, int64_t) {});
      total += seconds_since(t0);
    }
    per_call.push_back(total / kCalls * 1e6);
  }
  return median(per_call);
}

template <typename Add>
double add_ms(Add add) {
  std::vector<double> times;
  add();  // Warm up: fault the pages in, wake the workers.
  for (int rep = 0; rep < 51; ++rep) {
    const auto t0 = Clock::now();
    add();
    times.push_back(seconds_since(t0) * 1e3);
  }
  return median(times);
}

}  // namespace

int main() {
  std::printf("dispatch latency of an empty parallel_for over 2 threads (median, µs/call)\n");
  std::printf("%-10s %14s %18s\n", "spin_us", "back-to-back", "after 20 µs work");
  for (int spin : {0, 10, 50, 200}) {
    weft::cpu::ThreadPool pool(2, {.spin_us = spin});
    const double b2b = dispatch_us(pool, 0.0);
    const double gap = dispatch_us(pool, 20.0);
    std::printf("%-10d %14.2f %18.2f\n", spin, b2b, gap);
  }

  constexpr int64_t kN = 1 << 20;
  constexpr int64_t kGrain = 16384;
  std::vector<float> a(kN, 1.0f), b(kN, 2.0f), c(kN, 0.0f);
  const double bytes = 3.0 * sizeof(float) * kN;
  auto kernel = [&](int64_t begin, int64_t end) {
    const float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    float* __restrict pc = c.data();
    for (int64_t i = begin; i < end; ++i) pc[i] = pa[i] + pb[i];
  };

  std::printf("\nc = a + b over %lld floats (median ms/call, GB/s at 12 B/element)\n",
              static_cast<long long>(kN));
  const double plain = add_ms([&] { kernel(0, kN); });
  std::printf("%-22s %8.3f ms %8.1f GB/s\n", "plain loop", plain, bytes / plain / 1e6);
  for (int threads : {1, 2}) {
    for (int spin : {0, 50}) {
      weft::cpu::ThreadPool pool(threads, {.spin_us = spin});
      const double ms = add_ms([&] { pool.parallel_for(kN, kGrain, kernel); });
      char label[64];
      std::snprintf(label, sizeof label, "pool %d thr, spin %d", threads, spin);
      std::printf("%-22s %8.3f ms %8.1f GB/s  (%.2fx plain)\n", label, ms,
                  bytes / ms / 1e6, plain / ms);
    }
  }
  volatile float sink = c[kN / 2];
  (void)sink;
  return 0;
}

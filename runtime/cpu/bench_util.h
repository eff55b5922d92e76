#pragma once
// Timing helpers shared by the benchmark programs (never by tests: tests do not time).
//
//   double s = weft::cpu::bench::seconds_per_call([&] { kernel->run(pool); });

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace weft::cpu::bench {

/// Median seconds per call of `f` over `repeats` runs of enough back-to-back calls to
/// last about `batch_seconds` each (one warm-up call first).
inline double seconds_per_call(const std::function<void()>& f, int repeats = 15,
                               double batch_seconds = 5e-3) {
  using Clock = std::chrono::steady_clock;
  f();
  const auto t0 = Clock::now();
  f();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int calls = std::max(1, static_cast<int>(batch_seconds / std::max(once, 1e-7)));
  std::vector<double> times;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    times.push_back(std::chrono::duration<double>(Clock::now() - t).count() / calls);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// `n` floats uniform in [lo, hi), the same for a seed.
inline std::vector<float> random_floats(int64_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace weft::cpu::bench

#include "bench/roofline.h"

#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

namespace weft::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Roofline roofline(const std::vector<GemmShape>& shapes,
                  const std::function<double(const GemmShape&)>& sgemm_flops_per_s,
                  int64_t state_bytes, double bandwidth_bytes_per_s) {
  Roofline r;
  double compute_s = 0;
  for (const GemmShape& s : shapes) {
    r.flops_per_step += double(s.count) * s.flops();
    double throughput = s.count > 0 && s.flops() > 0 ? sgemm_flops_per_s(s) : 0;
    r.sgemm_flops_per_s.push_back(throughput);
    if (throughput > 0) compute_s += double(s.count) * s.flops() / throughput;
  }
  r.memory_bytes_per_step = kStateTrafficFactor * double(state_bytes);
  r.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  r.compute_ms_per_step = compute_s * 1e3;
  r.memory_ms_per_step =
      bandwidth_bytes_per_s > 0 ? r.memory_bytes_per_step / bandwidth_bytes_per_s * 1e3 : 0;
  r.epoch_ms = kStepsPerEpoch * std::max(r.compute_ms_per_step, r.memory_ms_per_step);
  return r;
}

double measure_sgemm_flops(int64_t m, int64_t n, int64_t k, int trials) {
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n), 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.01f;
  auto call = [&] {
    dnnl_status_t st = dnnl_sgemm('N', 'N', m, n, k, /*alpha=*/1.0f, a.data(), /*lda=*/k,
                                  b.data(), /*ldb=*/n, /*beta=*/0.0f, c.data(), /*ldc=*/n);
    if (st != dnnl_success) {
      std::fprintf(stderr, "internal error: dnnl_sgemm(%lld, %lld, %lld) returned %d\n",
                   (long long)m, (long long)n, (long long)k, int(st));
      std::abort();
    }
  };
  // The first call starts the library's thread pool and JIT-compiles its kernels.
  Clock::time_point start = Clock::now();
  call();
  double once = seconds_since(start);
  start = Clock::now();
  call();
  once = std::min(once, seconds_since(start));
  int reps = int(std::clamp(0.005 / std::max(once, 1e-9), 1.0, 100000.0));
  double best = 1e30;
  for (int t = 0; t < trials; ++t) {
    start = Clock::now();
    for (int r = 0; r < reps; ++r) call();
    best = std::min(best, seconds_since(start) / reps);
  }
  return 2.0 * double(m) * double(n) * double(k) / best;
}

double measure_triad_bandwidth(size_t total_bytes, int trials) {
  const size_t n = total_bytes / (3 * sizeof(float));
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  // Each thread touches its own slice first, so pages land near the thread that uses them.
  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      size_t begin = n * t / threads, end = n * (t + 1) / threads;
      pool.emplace_back([&body, begin, end] { body(begin, end); });
    }
    for (std::thread& th : pool) th.join();
  };
  parallel([&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  });
  const float s = 3.0f;
  double best = 1e30;
  for (int t = 0; t <= trials; ++t) {
    Clock::time_point start = Clock::now();
    parallel([&](size_t begin, size_t end) {
      float* __restrict pa = a.get();
      const float* __restrict pb = b.get();
      const float* __restrict pc = c.get();
      for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + s * pc[i];
    });
    double elapsed = seconds_since(start);
    if (t > 0) best = std::min(best, elapsed);  // pass 0 is a warm-up
  }
  volatile float sink = a[n / 2];  // keeps the stores observable
  (void)sink;
  return double(3 * n * sizeof(float)) / best;
}

double SgemmTable::flops(const GemmShape& shape) {
  GemmShape key{shape.m, shape.n, shape.k, 1};
  auto it = measured_.find(key);
  if (it != measured_.end()) return it->second;
  double f = measure_sgemm_flops(shape.m, shape.n, shape.k);
  measured_.emplace(key, f);
  return f;
}

}  // namespace weft::bench

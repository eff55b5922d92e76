// Generated kernels vs plain C++ loops (this file is built at -O2, like the rest of
// weft): µs per call and G elements/s, plus each kernel's compile time (emit, lower,
// LLVM O3, JIT). Prints figures; asserts nothing.
//
//   bazel run //codegen:kernel_bench

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "codegen/kernel_compiler.h"

namespace weft::codegen {
namespace {

using Clock = std::chrono::steady_clock;

/// Best over 5 batches of the mean µs per call.
double time_us(const std::function<void()>& f, int calls) {
  f();
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
    best = std::min(best, us);
  }
  return best;
}

const CompiledKernel* compile_timed(KernelCompiler& jit, const Graph& body) {
  const auto t0 = Clock::now();
  StatusOr<const CompiledKernel*> k = jit.compile(body);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!k.ok()) {
    std::fprintf(stderr, "%s\n", k.error().to_string().c_str());
    std::exit(1);
  }
  std::printf("  compile: %.1f ms (%lld rows x %lld)\n", ms, static_cast<long long>((*k)->rows),
              static_cast<long long>((*k)->row_length));
  return *k;
}

void report(const char* what, double us, int64_t n) {
  std::printf("  %-26s %9.2f us/call  %6.2f G elements/s\n", what, us, n / us * 1e-3);
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void bench_tanh_erf(KernelCompiler& jit) {
  const int64_t rows = 64, cols = 256, n = rows * cols;
  std::printf("tanh(x+b) + erf(x+b), x f32[64,256], b f32[256]\n");
  Graph g("tanh_erf");
  auto x = g.add_input("x", {DType::f32, {rows, cols}});
  auto b = g.add_input("b", {DType::f32, {cols}});
  const Type t{DType::f32, {rows, cols}};
  auto s = g.add_node(Op::Add, {x, b}, {}, {}, t);
  g.add_output(g.add_node(Op::Add, {g.add_node(Op::Tanh, {s}, {}, {}, t),
                                    g.add_node(Op::Erf, {s}, {}, {}, t)}, {}, {}, t));
  const CompiledKernel* k = compile_timed(jit, g);
  std::vector<float> xs = random_floats(n, 1), bs = random_floats(cols, 2), y(n), z(n);
  void* buffers[] = {xs.data(), bs.data(), y.data()};
  report("generated (MLIR vector)", time_us([&] { k->fn(buffers, 0, k->rows); }, 2000), n);
  report("C++ loop, std::tanh/erf", time_us([&] {
           for (int64_t r = 0; r < rows; ++r) {
             for (int64_t c = 0; c < cols; ++c) {
               const float v = xs[r * cols + c] + bs[c];
               z[r * cols + c] = std::tanh(v) + std::erf(v);
             }
           }
         }, 200), n);
  double diff = 0;
  for (int64_t i = 0; i < n; ++i) diff = std::max(diff, static_cast<double>(std::abs(y[i] - z[i])));
  std::printf("  max |generated - C++| = %.3g\n", diff);
}

void bench_axpb(KernelCompiler& jit) {
  const int64_t n = 1 << 20;
  std::printf("x*a + b, x, a, b f32[%lld]\n", static_cast<long long>(n));
  Graph g("axpb");
  const Type t{DType::f32, {n}};
  auto x = g.add_input("x", t);
  auto a = g.add_input("a", t);
  auto b = g.add_input("b", t);
  g.add_output(g.add_node(Op::Add, {g.add_node(Op::Mul, {x, a}, {}, {}, t), b}, {}, {}, t));
  const CompiledKernel* k = compile_timed(jit, g);
  std::vector<float> xs = random_floats(n, 3), as = random_floats(n, 4), bs = random_floats(n, 5),
                     y(n), z(n);
  void* buffers[] = {xs.data(), as.data(), bs.data(), y.data()};
  report("generated (MLIR vector)", time_us([&] { k->fn(buffers, 0, k->rows); }, 200), n);
  report("C++ loop (-O2)", time_us([&] {
           for (int64_t i = 0; i < n; ++i) z[i] = xs[i] * as[i] + bs[i];
         }, 200), n);
  std::printf("  outputs equal: %s\n", y == z ? "yes" : "no");
}

}  // namespace
}  // namespace weft::codegen

int main() {
  weft::codegen::KernelCompiler jit;
  weft::codegen::bench_tanh_erf(jit);
  weft::codegen::bench_axpb(jit);
  return 0;
}

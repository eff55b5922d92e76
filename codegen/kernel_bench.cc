// Generated kernels vs plain C++ loops (this file is built at -O2, like the rest of
// weft): µs per call and G elements/s, plus each kernel's compile time (emit, lower,
// LLVM O3, JIT). Prints figures; asserts nothing.
//
//   bazel run //codegen:kernel_bench [-- --half]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "runtime/tensor.h"

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

// sum(mul(a, b), axes=[-1]) on [512,1024] f32: the fused reduction kernel vs what ran
// before reductions were fusion roots: the generated mul kernel writing the product,
// then a row sum over it (the library's algorithm: 16 f64 lanes, runtime/cpu/reduction.cc).
void bench_row_sum(KernelCompiler& jit) {
  const int64_t rows = 512, cols = 1024, n = rows * cols;
  std::printf("sum(mul(a, b), axes=[-1]), a, b f32[512,1024]\n");
  const Type t{DType::f32, {rows, cols}};
  Graph mul("mul");
  auto ma = mul.add_input("a", t);
  auto mb = mul.add_input("b", t);
  mul.add_output(mul.add_node(Op::Mul, {ma, mb}, {}, {}, t));
  Graph fused("row_sum");
  auto a = fused.add_input("a", t);
  auto b = fused.add_input("b", t);
  fused.add_output(fused.add_node(Op::Sum, {fused.add_node(Op::Mul, {a, b}, {}, {}, t)},
                                  {{"axes", IntList{-1}}}, {}, Type{DType::f32, {rows}}));
  const CompiledKernel* k = compile_timed(jit, fused);
  const CompiledKernel* km = compile_timed(jit, mul);
  std::vector<float> as = random_floats(n, 6), bs = random_floats(n, 7), prod(n), y(rows), z(rows);
  void* buffers[] = {as.data(), bs.data(), y.data()};
  void* mul_buffers[] = {as.data(), bs.data(), prod.data()};
  report("fused (mul + sum)", time_us([&] { k->fn(buffers, 0, k->rows); }, 500), n);
  report("mul kernel + row sum", time_us([&] {
           km->fn(mul_buffers, 0, km->rows);
           for (int64_t r = 0; r < rows; ++r) {
             double lanes[16] = {};
             const float* p = prod.data() + r * cols;
             for (int64_t i = 0; i < cols; i += 16) {
               for (int l = 0; l < 16; ++l) lanes[l] += p[i + l];
             }
             double s = 0;
             for (double l : lanes) s += l;
             z[r] = static_cast<float>(s);
           }
         }, 500), n);
  double diff = 0;
  for (int64_t r = 0; r < rows; ++r) diff = std::max(diff, static_cast<double>(std::abs(y[r] - z[r])));
  std::printf("  max |fused - unfused| = %.3g\n", diff);
}

// Column sums and batch-norm statistics: sum(mul(d, x)) over leading axes.
void bench_column_sums(KernelCompiler& jit, const Shape& shape, const IntList& axes,
                       const Shape& out) {
  std::printf("sum(mul(d, x), axes=%s), f32%s\n", attribute_to_string(axes).c_str(),
              shape.to_string().c_str());
  const Type t{DType::f32, shape};
  Graph g("column_sum");
  auto d = g.add_input("d", t);
  auto x = g.add_input("x", t);
  g.add_output(g.add_node(Op::Sum, {g.add_node(Op::Mul, {d, x}, {}, {}, t)}, {{"axes", axes}}, {},
                          Type{DType::f32, out}));
  const CompiledKernel* k = compile_timed(jit, g);
  const int64_t n = shape.numel();
  std::vector<float> ds = random_floats(n, 8), xs = random_floats(n, 9), y(out.numel());
  void* buffers[] = {ds.data(), xs.data(), y.data()};
  report("fused (mul + sum)", time_us([&] { k->fn(buffers, 0, k->rows); }, 500), n);
}

/// Random tensors in [-3, 3] of `type`, one per input of `g`, and one result per output.
std::vector<Tensor> buffers_for(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<Tensor> ts;
  ts.reserve(g.inputs().size() + g.outputs().size());
  for (const Input& in : g.inputs()) {
    ts.emplace_back(g.type(in.value));
    for (int64_t i = 0; i < ts.back().numel(); ++i) ts.back().set_double(i, u(rng));
  }
  for (ValueId v : g.outputs()) ts.emplace_back(g.type(v));
  return ts;
}

/// µs per call of `g` (one thread) and GB/s of the bytes it must move: its operands
/// read once and its results written once.
void report_bandwidth(KernelCompiler& jit, const Graph& g, int calls) {
  const CompiledKernel* k = compile_timed(jit, g);
  std::vector<Tensor> ts = buffers_for(g, 10);
  std::vector<void*> buffers;
  int64_t bytes = 0;
  for (Tensor& t : ts) {
    buffers.push_back(t.raw_data());
    bytes += t.bytes();
  }
  const double us = time_us([&] { k->fn(buffers.data(), 0, k->rows); }, calls);
  std::printf("  %-5s %9.1f us/call  %6.2f GB/s  (%.1f MB moved)\n",
              dtype_name(g.type(g.outputs()[0]).dtype).data(), us, bytes / us * 1e-3,
              bytes * 1e-6);
}

// The same elementwise and row kernels in f32, bf16 and f16: the half kernels load and
// store 16 bits and compute in f32 (emit_half.cc), so at the same elements per second
// they move half the bytes.
void bench_half_precision(KernelCompiler& jit) {
  for (int64_t n : {int64_t{1} << 16, int64_t{1} << 22}) {
    std::printf("x*a + b, f16/bf16/f32[%lld] (%.1f MB in f32)\n", static_cast<long long>(n),
                n * 12e-6);
    for (DType d : {DType::f16, DType::bf16, DType::f32}) {
      Graph g("axpb");
      const Type t{d, {n}};
      auto x = g.add_input("x", t);
      auto a = g.add_input("a", t);
      auto b = g.add_input("b", t);
      g.add_output(g.add_node(Op::Add, {g.add_node(Op::Mul, {x, a}, {}, {}, t), b}, {}, {}, t));
      report_bandwidth(jit, g, n < (1 << 20) ? 2000 : 20);
    }
  }
  const int64_t rows = 4096, cols = 1024;
  std::printf("softmax row kernel (max, sub, exp, sum, div), [%lld,%lld]\n",
              static_cast<long long>(rows), static_cast<long long>(cols));
  for (DType d : {DType::f16, DType::bf16, DType::f32}) {
    Graph g("softmax");
    const Type full{d, {rows, cols}}, row{d, {rows, 1}};
    const Attrs axes{{"axes", IntList{-1}}, {"keepdims", true}};
    auto x = g.add_input("x", full);
    auto m = g.add_node(Op::Max, {x}, axes, {}, row);
    auto e = g.add_node(Op::Exp, {g.add_node(Op::Sub, {x, m}, {}, {}, full)}, {}, {}, full);
    auto s = g.add_node(Op::Sum, {e}, axes, {}, row);
    g.add_output(g.add_node(Op::Div, {e, s}, {}, {}, full));
    report_bandwidth(jit, g, 10);
  }
}

}  // namespace
}  // namespace weft::codegen

int main(int argc, char** argv) {
  // --half: only the f32 vs bf16/f16 figures.
  if (argc > 1 && std::string(argv[1]) == "--half") {
    weft::codegen::KernelCompiler jit;
    weft::codegen::bench_half_precision(jit);
    return 0;
  }
  weft::codegen::KernelCompiler jit;
  weft::codegen::bench_tanh_erf(jit);
  weft::codegen::bench_axpb(jit);
  weft::codegen::bench_row_sum(jit);
  weft::codegen::bench_column_sums(jit, {128, 256}, {0}, {256});
  weft::codegen::bench_column_sums(jit, {32, 64, 14, 14}, {0, 2, 3}, {64});
  weft::codegen::bench_half_precision(jit);
  return 0;
}

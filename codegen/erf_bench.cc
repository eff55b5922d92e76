// The generated erf and what uses it (GELU "none" forward and its backward, as
// autodiff/rules_elementwise.cc builds it: g·(Φ(x) + x·φ(x))), in f32 and bf16, one
// thread, on 64×1024 elements in [-3, 3] (in L2: the math, not memory, is timed).
// Prints nanoseconds of this thread's CPU time per element (best of 7 batches, which a
// shared machine's load disturbs less than wall time) and the kernel's compile time.
// The bf16 bodies are all-bf16 graphs, every op's result rounded to bf16 as the
// reference rounds (a training step's bf16 epilogues are not built that way).
// Asserts nothing.
//
//   bazel run -c opt //codegen:erf_bench

#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "runtime/tensor.h"

namespace weft::codegen {
namespace {

constexpr int64_t kRows = 64, kCols = 1024;

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// Best over 7 batches of the mean thread-CPU nanoseconds per element.
double ns_per_element(const std::function<void()>& f, int calls, int64_t n) {
  f();
  double best = 1e30;
  for (int batch = 0; batch < 7; ++batch) {
    const double t0 = thread_seconds();
    for (int i = 0; i < calls; ++i) f();
    best = std::min(best, (thread_seconds() - t0) / calls / n * 1e9);
  }
  return best;
}

/// A kernel body and the values of its scalar inputs (a fused kernel's constants are
/// scalar operands, broadcast).
struct Body {
  Graph g{"erf_bench"};
  std::map<ValueId, double> constants;
  ValueId constant(double v, DType d) {
    const ValueId c = g.add_input("c" + std::to_string(constants.size()), Type{d, {}});
    constants[c] = v;
    return c;
  }
};

enum class Kind { erf, gelu, gelu_backward };

Body body(Kind which, DType d) {
  Body b;
  Graph& g = b.g;
  auto constant = [&](double v) { return b.constant(v, d); };
  const Type t{d, {kRows, kCols}};
  const ValueId x = g.add_input("x", t);
  auto mul = [&](ValueId a, ValueId b) { return g.add_node(Op::Mul, {a, b}, {}, {}, t); };
  auto add = [&](ValueId a, ValueId b) { return g.add_node(Op::Add, {a, b}, {}, {}, t); };
  switch (which) {
    case Kind::erf: g.add_output(g.add_node(Op::Erf, {x}, {}, {}, t)); break;
    case Kind::gelu:
      g.add_output(g.add_node(Op::Gelu, {x}, {{"approximate", std::string("none")}}, {}, t));
      break;
    case Kind::gelu_backward: {
      const ValueId dy = g.add_input("dy", t);
      const ValueId e = g.add_node(Op::Erf, {mul(x, constant(M_SQRT1_2))}, {}, {}, t);
      const ValueId cdf = mul(constant(0.5), add(constant(1), e));
      const ValueId gauss =
          g.add_node(Op::Exp, {mul(constant(-0.5), mul(x, x))}, {}, {}, t);
      const ValueId pdf = mul(gauss, constant(1 / std::sqrt(2 * M_PI)));
      g.add_output(mul(dy, add(cdf, mul(x, pdf))));
      break;
    }
  }
  return b;
}

void run(KernelCompiler& jit, Kind which, const char* name) {
  for (DType d : {DType::f32, DType::bf16}) {
    const Body b = body(which, d);
    const Graph& g = b.g;
    const double t0 = thread_seconds();
    StatusOr<const CompiledKernel*> k = jit.compile(g);
    const double ms = (thread_seconds() - t0) * 1e3;
    if (!k.ok()) {
      std::fprintf(stderr, "%s\n", k.error().to_string().c_str());
      std::exit(1);
    }
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-3, 3);
    std::vector<Tensor> ts;
    for (const Input& in : g.inputs()) {
      ts.emplace_back(g.type(in.value));
      const auto c = b.constants.find(in.value);
      for (int64_t i = 0; i < ts.back().numel(); ++i) {
        ts.back().set_double(i, c != b.constants.end() ? c->second : u(rng));
      }
    }
    ts.emplace_back(g.type(g.outputs()[0]));
    std::vector<void*> buffers;
    for (Tensor& t : ts) buffers.push_back(t.raw_data());
    const CompiledKernel* kernel = *k;
    const double ns = ns_per_element([&] { kernel->fn(buffers.data(), 0, kernel->rows); }, 200,
                                     kRows * kCols);
    std::printf("  %-14s %-5s %7.3f ns/element  (compile %.0f ms)\n", name,
                dtype_name(d).data(), ns, ms);
  }
}

}  // namespace
}  // namespace weft::codegen

int main() {
  using namespace weft::codegen;
  KernelCompiler jit;
  std::printf("64x1024 elements in [-3, 3], one thread, thread CPU time\n");
  run(jit, Kind::erf, "erf");
  run(jit, Kind::gelu, "gelu(none)");
  run(jit, Kind::gelu_backward, "gelu backward");
  return 0;
}

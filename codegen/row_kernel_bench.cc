// The composites' library kernels (runtime/cpu/composite.cc) vs the same computation
// decomposed into primitive ops, which fuse-elementwise turns into row kernels
// (emit_rows), alone and with the neighbours a model puts around them (attention's
// scale before softmax and a mask after it, the residual add before layer norm). Each
// graph goes through the CPU pipeline (compile_for_cpu) and runs on the executor (its
// default threads); µs per step, median of 15 batches. Prints figures; asserts nothing.
//
//   bazel run //codegen:row_kernel_bench

#include <cstdio>
#include <random>
#include <string>

#include "codegen/cpu_backend.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/cpu/bench_util.h"

namespace weft::codegen {
namespace {

/// µs per run of `text` compiled for the CPU, and its invocation count.
std::pair<double, int> time_graph(const std::string& text, bool decompose) {
  StatusOr<Graph> g = parse_graph(text, "bench.wir");
  if (g.ok()) {
    InferTypesPass infer;
    if (StatusOr<bool> r = infer.run(*g); !r.ok()) g = r.error();
  }
  if (!g.ok()) {
    std::fprintf(stderr, "%s\n%s\n", g.error().to_string().c_str(), text.c_str());
    std::exit(1);
  }
  CpuOptions options;
  options.lower.decompose_composites = decompose;  // The decomposed texts have no composites.
  StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(*g, options);
  if (!ex.ok()) {
    std::fprintf(stderr, "%s\n", ex.error().to_string().c_str());
    std::exit(1);
  }
  std::mt19937_64 rng(1);
  for (size_t k = 0; k < (*ex)->program().inputs.size(); ++k) {
    const Type& t = (*ex)->program().inputs[k].type;
    Tensor x(t);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set_double(i, t.dtype == DType::i64 ? static_cast<double>(rng() % 10)
                                            : std::uniform_real_distribution<double>(0.1, 2)(rng));
    }
    (void)(*ex)->set_input(static_cast<int>(k), x);
  }
  const double s = cpu::bench::seconds_per_call([&] { (void)(*ex)->run(); });
  return {s * 1e6, static_cast<int>((*ex)->program().code.size())};
}

void compare(const char* what, const std::string& library, const std::string& decomposed) {
  const auto [lib_us, lib_n] = time_graph(library, false);
  const auto [row_us, row_n] = time_graph(decomposed, true);
  std::printf("%-44s library %8.1f us (%d invocations)   row kernels %8.1f us (%d)   %.2fx\n",
              what, lib_us, lib_n, row_us, row_n, lib_us / row_us);
}

/// Softmax over the last axis of `x` (type `t`, per-row type `r`), as primitives.
std::string softmax_ops(const std::string& x, const std::string& t, const std::string& r,
                        bool log) {
  std::string s = "  %m = max(" + x + ") {axes=[-1], keepdims=true} : " + r + "\n" +
                  "  %d = sub(" + x + ", %m) : " + t + "\n" +
                  "  %e = exp(%d) : " + t + "\n" +
                  "  %s = sum(%e) {axes=[-1], keepdims=true} : " + r + "\n";
  if (log) return s + "  %l = log(%s) : " + r + "\n  %y = sub(%d, %l) : " + t + "\n";
  return s + "  %y = div(%e, %s) : " + t + "\n";
}

std::string layer_norm_ops(const std::string& x, const std::string& t, const std::string& r) {
  return "  %mu = mean(" + x + ") {axes=[-1], keepdims=true} : " + r + "\n" +
         "  %xc = sub(" + x + ", %mu) : " + t + "\n" +
         "  %sq = mul(%xc, %xc) : " + t + "\n" +
         "  %var = mean(%sq) {axes=[-1], keepdims=true} : " + r + "\n" +
         "  %ve = add(%var, %eps) : " + r + "\n" +
         "  %rs = rsqrt(%ve) : " + r + "\n" +
         "  %xh = mul(%xc, %rs) : " + t + "\n" +
         "  %yw = mul(%xh, %w) : " + t + "\n" +
         "  %y = add(%yw, %b) : " + t + "\n";
}

void run() {
  const std::string s = "f32[512,64,64]", sr = "f32[512,64,1]";
  compare("softmax [512,64,64]",
          "graph @f(%x: " + s + ") {\n  %y = softmax(%x) {axis=-1}\n  return %y\n}",
          "graph @f(%x: " + s + ") {\n" + softmax_ops("%x", s, sr, false) + "  return %y\n}");
  compare("scale, softmax, mask [512,64,64]",
          "graph @f(%x: " + s + ", %c: f32[], %k: " + s + ") {\n  %z = mul(%x, %c)\n"
          "  %y = softmax(%z) {axis=-1}\n  %o = mul(%y, %k)\n  return %o\n}",
          "graph @f(%x: " + s + ", %c: f32[], %k: " + s + ") {\n  %z = mul(%x, %c) : " + s + "\n" +
              softmax_ops("%z", s, sr, false) + "  %o = mul(%y, %k) : " + s + "\n  return %o\n}");
  const std::string l = "f32[128,10]", lr = "f32[128,1]";
  compare("log_softmax [128,10]",
          "graph @f(%x: " + l + ") {\n  %y = log_softmax(%x) {axis=-1}\n  return %y\n}",
          "graph @f(%x: " + l + ") {\n" + softmax_ops("%x", l, lr, true) + "  return %y\n}");
  compare("cross_entropy [128,10] (mean)",
          "graph @f(%x: " + l + ", %t: i64[128]) {\n  %y = cross_entropy(%x, %t)\n  return %y\n}",
          "graph @f(%x: " + l + ", %t: i64[128]) {\n  %oh = one_hot(%t) {depth=10, dtype=f32}\n" +
              softmax_ops("%x", l, lr, true) +
              "  %p = mul(%y, %oh) : " + l + "\n  %r = sum(%p) {axes=[-1], keepdims=true} : " + lr +
              "\n  %n = mean(%r) : f32[]\n  %loss = neg(%n) : f32[]\n  return %loss\n}");
  const std::string n = "f32[512,256]", nr = "f32[512,1]";
  const std::string params = ", %w: f32[256], %b: f32[256], %eps: f32[]";
  compare("layer_norm [512,256]",
          "graph @f(%x: " + n + params + ") {\n  %y = layer_norm(%x, %w, %b) {axes=[-1], eps=1e-05}\n"
          "  return %y\n}",
          "graph @f(%x: " + n + params + ") {\n" + layer_norm_ops("%x", n, nr) + "  return %y\n}");
  compare("residual add, layer_norm [512,256]",
          "graph @f(%x: " + n + ", %a: " + n + params + ") {\n  %h = add(%x, %a)\n"
          "  %y = layer_norm(%h, %w, %b) {axes=[-1], eps=1e-05}\n  return %y\n}",
          "graph @f(%x: " + n + ", %a: " + n + params + ") {\n  %h = add(%x, %a) : " + n + "\n" +
              layer_norm_ops("%h", n, nr) + "  return %y\n}");
}

}  // namespace
}  // namespace weft::codegen

int main() {
  weft::codegen::run();
  return 0;
}

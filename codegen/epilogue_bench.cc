// Prints what a GEMM's epilogue (bias add, activation, residual add) costs, in µs per
// call (medians), on the Linear-layer shapes of the bench suite's MLP (batch 128,
// 784-256-256-10) and of a transformer block (2048 tokens, d=256, ffn 1024), forward
// (x·Wᵀ, transpose_b), on a ThreadPool of 1 and of 2 threads:
//   separate  run_gemm (its own split: columns for x·Wᵀ) and then the generated epilogue
//             as a second kernel over the product (what runs without epilogue fusion)
//   rows+sep  the GEMM split by rows (gemm_rows), then the epilogue as a second kernel
//             (isolates the cost of the row split from the fusion)
//   fused     run_gemm_epilogue: each row block's sgemm, then the epilogue on that block
//             on the same thread while it is in cache (what a contraction invocation runs)
//   dnnl-po   oneDNN's matmul primitive with post-ops (bias, eltwise, binary add) called
//             per row block on the pool's threads (one OpenMP thread each), the library
//             alternative to a generated epilogue
//
// Each figure is the median over `repeats` rounds in which the four variants take turns
// (one ~5 ms batch of calls each), so a change in a shared machine's load touches all.
//
//   bazel run //codegen:epilogue_bench [-- repeats]

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <dnnl.hpp>
#include <string>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "runtime/cpu/bench_util.h"
#include "runtime/cpu/contraction_internal.h"

namespace weft::codegen {
namespace {

enum class Act { none, relu, gelu };

struct Shape3 {
  const char* what;
  int64_t m, k, n;
  Act act;
  bool residual;
};

// The epilogue body: add(c, b) [, act] [, add(r, .)].
Graph epilogue_body(const Shape3& s) {
  Graph g("epilogue");
  const Type full{DType::f32, {s.m, s.n}};
  ValueId c = g.add_input("c", full);
  ValueId b = g.add_input("b", Type{DType::f32, {s.n}});
  ValueId r = s.residual ? g.add_input("r", full) : kNoValue;
  ValueId y = g.add_node(Op::Add, {c, b}, {}, {}, full);
  if (s.act == Act::relu) y = g.add_node(Op::Relu, {y}, {}, {}, full);
  if (s.act == Act::gelu) y = g.add_node(Op::Gelu, {y}, {}, {}, full);
  if (s.residual) y = g.add_node(Op::Add, {r, y}, {}, {}, full);
  g.add_output(y);
  return g;
}

// oneDNN matmul + post-ops, one primitive per row block of the pool's partition.
class DnnlPostOps {
 public:
  DnnlPostOps(const Shape3& s, cpu::ThreadPool& pool, int64_t grain, const float* x,
              const float* w, const float* b, const float* r, float* y)
      : engine_(dnnl::engine::kind::cpu, 0) {
    using dnnl::memory;
    const cpu::Partition part = cpu::Partition::make(s.m, grain, pool.num_threads());
    for (int i = 0; i < part.num_chunks; ++i) {
      const int64_t r0 = part.begin(i), rows = part.end(i) - r0;
      memory::desc src({rows, s.k}, memory::data_type::f32, memory::format_tag::ab);
      memory::desc wei({s.k, s.n}, memory::data_type::f32, memory::format_tag::ba);  // Wᵀ
      memory::desc bias({1, s.n}, memory::data_type::f32, memory::format_tag::ab);
      memory::desc dst({rows, s.n}, memory::data_type::f32, memory::format_tag::ab);
      dnnl::post_ops po;
      if (s.act == Act::relu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      if (s.act == Act::gelu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
      if (s.residual) po.append_binary(dnnl::algorithm::binary_add, dst);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), attr, engine_);
      Block blk{dnnl::matmul(pd), dnnl::stream(engine_), {}};
      blk.args = {{DNNL_ARG_SRC, memory(src, engine_, const_cast<float*>(x + r0 * s.k))},
                  {DNNL_ARG_WEIGHTS, memory(wei, engine_, const_cast<float*>(w))},
                  {DNNL_ARG_BIAS, memory(bias, engine_, const_cast<float*>(b))},
                  {DNNL_ARG_DST, memory(dst, engine_, y + r0 * s.n)}};
      if (s.residual) {
        blk.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(s.act == Act::none ? 0 : 1) | DNNL_ARG_SRC_1] =
            memory(dst, engine_, const_cast<float*>(r + r0 * s.n));
      }
      blocks_.push_back(std::move(blk));
    }
    rows_ = s.m;
    grain_ = grain;
  }
  void run(cpu::ThreadPool& pool) {
    pool.for_each_chunk(rows_, grain_, [&](int chunk, int64_t, int64_t) {
      cpu::use_one_omp_thread();
      blocks_[chunk].prim.execute(blocks_[chunk].stream, blocks_[chunk].args);
    });
  }

 private:
  struct Block {
    dnnl::matmul prim;
    dnnl::stream stream;
    std::unordered_map<int, dnnl::memory> args;
  };
  dnnl::engine engine_;
  std::vector<Block> blocks_;
  int64_t rows_ = 0, grain_ = 1;
};

// Wall-clock and process CPU seconds per call, over a batch of calls lasting ~5 ms. On a
// loaded machine the CPU time of a 1-thread pool is the steadier figure (a process that
// waits for a core is not charged); with 2 threads it includes the workers' spinning.
std::pair<double, double> per_call(const std::function<void()>& f) {
  using Clock = std::chrono::steady_clock;
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  };
  const auto t0 = Clock::now();
  f();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int calls = std::max(1, static_cast<int>(5e-3 / std::max(once, 1e-7)));
  const auto w0 = Clock::now();
  const double c0 = cpu_now();
  for (int i = 0; i < calls; ++i) f();
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count() / calls;
  return {wall, (cpu_now() - c0) / calls};
}

void bench(const Shape3& s, int threads, int repeats) {
  cpu::ThreadPool pool(threads);
  std::vector<float> x = cpu::bench::random_floats(s.m * s.k, 1);
  std::vector<float> w = cpu::bench::random_floats(s.n * s.k, 2);
  std::vector<float> b = cpu::bench::random_floats(s.n, 3);
  std::vector<float> r = cpu::bench::random_floats(s.m * s.n, 4);
  std::vector<float> y(s.m * s.n), y2(s.m * s.n);
  Graph body = epilogue_body(s);
  StatusOr<const CompiledKernel*> k = KernelCompiler::global().compile(body);
  WEFT_CHECK(k.ok(), "epilogue_bench: " + (k.ok() ? std::string() : k.error().to_string()));
  const CompiledKernel& kernel = **k;
  std::vector<void*> buffers = {y.data(), b.data()};
  if (s.residual) buffers.push_back(r.data());
  buffers.push_back(y.data());  // in place over the product, as a contraction runs it
  const cpu::Epilogue epilogue{kernel.fn, buffers.data(), kernel.rows, kernel.row_length};
  const cpu::GemmPlan plan = cpu::GemmPlan::single(s.m, s.n, s.k, false, /*trans_b=*/true);
  const int64_t epi_grain = std::max<int64_t>(1, (int64_t{1} << 14) / kernel.row_length);
  auto epilogue_pass = [&] {
    pool.parallel_for(kernel.rows, epi_grain,
                      [&](int64_t r0, int64_t r1) { kernel.fn(buffers.data(), r0, r1); });
  };
  const int64_t row_grain = std::max<int64_t>(1, cpu::kMinChunkFlops / (2 * s.n * s.k));
  DnnlPostOps dnnl(s, pool, row_grain, x.data(), w.data(), b.data(), r.data(), y2.data());
  const std::function<void()> variants[] = {
      [&] {  // separate
        cpu::run_gemm<float>(pool, plan, x.data(), w.data(), y.data());
        epilogue_pass();
      },
      [&] {  // rows+sep
        pool.parallel_for(s.m, row_grain, [&](int64_t r0, int64_t r1) {
          cpu::gemm_rows<float>(plan, x.data(), w.data(), y.data(), r0, r1);
        });
        epilogue_pass();
      },
      [&] {  // fused
        cpu::run_gemm_epilogue<float>(pool, plan, x.data(), w.data(), y.data(), epilogue,
                                      cpu::EpilogueSplit::kRowBlocks);
      },
      [&] { dnnl.run(pool); },
  };
  // The variants take turns, one batch of calls each per round, so that a change in
  // the machine's load touches them alike; each figure is a median over the rounds.
  constexpr int kVariants = 4;
  std::vector<double> times[kVariants], cpu_times[kVariants];
  for (int v = 0; v < kVariants; ++v) variants[v]();  // warm-up
  for (int round = 0; round < repeats; ++round) {
    for (int v = 0; v < kVariants; ++v) {
      const auto [wall, cpu] = per_call(variants[v]);
      times[v].push_back(wall);
      cpu_times[v].push_back(cpu);
    }
  }
  double median[kVariants], cpu_median[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    std::sort(times[v].begin(), times[v].end());
    std::sort(cpu_times[v].begin(), cpu_times[v].end());
    median[v] = times[v][times[v].size() / 2];
    cpu_median[v] = cpu_times[v][cpu_times[v].size() / 2];
  }
  const double separate = median[0], rows_sep = median[1], fused = median[2], po = median[3];
  // The two fused forms agree (gelu: oneDNN's erf vs the generated polynomial).
  cpu::run_gemm_epilogue<float>(pool, plan, x.data(), w.data(), y.data(), epilogue,
                                cpu::EpilogueSplit::kRowBlocks);
  dnnl.run(pool);
  double diff = 0;
  for (size_t i = 0; i < y.size(); ++i) diff = std::max<double>(diff, std::abs(y[i] - y2[i]));
  const double gflop = 2.0 * s.m * s.n * s.k * 1e-9;
  std::printf("%-30s %d  %8.1f %8.1f %8.1f %8.1f  | %8.1f %8.1f %8.1f %8.1f  %6.1f %6.1f  %.0e\n",
              s.what, threads, separate * 1e6, rows_sep * 1e6, fused * 1e6, po * 1e6,
              cpu_median[0] * 1e6, cpu_median[1] * 1e6, cpu_median[2] * 1e6, cpu_median[3] * 1e6,
              gflop / separate, gflop / fused, diff);
}

}  // namespace
}  // namespace weft::codegen

int main(int argc, char** argv) {
  using weft::codegen::Act;
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 11;
  const weft::codegen::Shape3 shapes[] = {
      {"mlp 128x784->256 +b relu", 128, 784, 256, Act::relu, false},
      {"mlp 128x256->256 +b relu", 128, 256, 256, Act::relu, false},
      {"mlp 128x256->10 +b", 128, 256, 10, Act::none, false},
      {"tfm 2048x256->768 +b (qkv)", 2048, 256, 768, Act::none, false},
      {"tfm 2048x256->256 +b +res", 2048, 256, 256, Act::none, true},
      {"tfm 2048x256->1024 +b gelu", 2048, 256, 1024, Act::gelu, false},
      {"tfm 2048x1024->256 +b +res", 2048, 1024, 256, Act::none, true},
  };
  std::printf("µs per call, medians of %d rounds: wall-clock | process CPU time; then "
              "GFLOP/s (wall) of separate and fused, and max |fused - dnnl-po|\n"
              "%-30s thr separate rows+sep    fused  dnnl-po  | separate rows+sep    fused  "
              "dnnl-po\n",
              repeats, "shape");
  for (int threads : {1, 2}) {
    for (const auto& s : shapes) weft::codegen::bench(s, threads, repeats);
  }
}

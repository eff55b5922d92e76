// Prints bf16 against f32 (and f16, which converts to f32) for the library kernels that
// issue #30 made half: square GEMMs at 256, 512 and 1024 in GFLOP/s, and the convnet's
// second convolution layer (16->32, 3x3, [32,16,16,16]) forward and both gradients, in
// µs per call, on 1 and 2 threads, and the training GEMMs with their weight pre-packed.
// With --splits, only the training GEMMs with C cut by rows and by columns, in bf16
// (bf16_split) and in f32 (run_gemm's cuts_columns), least of 600 interleaved calls, on 2 and 1
// threads. Figures only; nothing is asserted.
//
//   bazel run -c opt //runtime/cpu:half_bench [-- --splits]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <cstring>
#include <optional>
#include <vector>

#include "runtime/cpu/bench_util.h"
#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/kernel.h"
#include "runtime/tensor.h"

namespace weft::cpu {
namespace {

struct Case {
  Op op;
  Attrs attrs;
  std::vector<Shape> operands;
  Shape result;
};

// Random values in `dtype` (f32, f16 or bf16 bits), as many bytes as it needs.
std::vector<std::byte> random_buffer(DType dtype, int64_t n, uint64_t seed) {
  const std::vector<float> v = bench::random_floats(n, seed);
  std::vector<std::byte> out(n * dtype_size(dtype) + 64);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::f32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t bits = dtype == DType::bf16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

// The least seconds of a single call of each of `fs`, over `rounds` rounds that call
// each in turn (after one warm-up round): interleaved, so that other processes on the
// machine disturb each about alike, and the least, which they disturb least.
std::vector<double> least_seconds_interleaved(const std::vector<std::function<void()>>& fs,
                                              int rounds = 600) {
  using Clock = std::chrono::steady_clock;
  for (const auto& f : fs) f();
  std::vector<double> best(fs.size(), 1e9);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      const auto t = Clock::now();
      fs[i]();
      best[i] = std::min(best[i], std::chrono::duration<double>(Clock::now() - t).count());
    }
  }
  return best;
}

// A library kernel bound to random operands of `c` in `dtype`, with its buffers.
struct BoundCase {
  std::vector<std::vector<std::byte>> buffers;  // operands, then the result
  std::unique_ptr<BoundKernel> kernel;
};
BoundCase bind_case(const Case& c, DType dtype) {
  BoundCase bound;
  LibraryCall call;
  call.node.op = c.op;
  call.node.attrs = c.attrs;
  std::vector<const void*> ptrs;
  for (const Shape& s : c.operands) {
    call.operand_types.push_back({dtype, s});
    bound.buffers.push_back(random_buffer(dtype, s.numel(), bound.buffers.size() + 1));
    ptrs.push_back(bound.buffers.back().data());
  }
  call.result_type = {dtype, c.result};
  bound.buffers.emplace_back(c.result.numel() * dtype_size(dtype) + 64);
  auto k = make_library_kernel(call, ptrs, bound.buffers.back().data());
  WEFT_CHECK(k.ok() && *k, "half_bench: no kernel");
  bound.kernel = std::move(*k);
  return bound;
}

// Seconds per call of `c` in `dtype` on `pool`, and the kernel's description.
double time_case(ThreadPool& pool, const Case& c, DType dtype, std::string* describe) {
  const BoundCase bound = bind_case(c, dtype);
  *describe = bound.kernel->describe();
  return bench::seconds_per_call([&] { (void)bound.kernel->run(pool); }, /*repeats=*/15,
                                 /*batch_seconds=*/5e-3);
}

// Seconds per call of the bf16 matmul `c` reading its B pre-packed (packed_weight.h; the
// packing itself not timed), or 0 when no kernel reads it packed.
double time_packed(ThreadPool& pool, const Case& c) {
  LibraryCall call;
  call.node.op = c.op;
  call.node.attrs = c.attrs;
  for (const Shape& s : c.operands) call.operand_types.push_back({DType::bf16, s});
  call.result_type = {DType::bf16, c.result};
  const std::optional<PackedWeightLayout> layout = packed_weight_layout(call);
  if (!layout) return 0;
  const std::vector<std::byte> a = random_buffer(DType::bf16, c.operands[0].numel(), 1);
  const std::vector<std::byte> b = random_buffer(DType::bf16, c.operands[1].numel(), 2);
  const bool trans_b = call.node.bool_attr("transpose_b");
  std::vector<uint16_t> packed(layout->elements());
  pack_weight(reinterpret_cast<const uint16_t*>(b.data()), trans_b, c.operands[1].dims.back(),
              *layout, packed.data());
  std::vector<std::byte> out(c.result.numel() * 2 + 64);
  auto k = make_onednn_matmul_kernel(call, {a.data(), packed.data()}, out.data(), /*b_packed=*/true);
  WEFT_CHECK(k.ok() && *k, "half_bench: no pre-packed kernel");
  return bench::seconds_per_call([&] { (void)(*k)->run(pool); }, /*repeats=*/15,
                                 /*batch_seconds=*/5e-3);
}

// The bf16 matmul `c` bound with C cut as WEFT_BF16_SPLIT says ("rows" or "columns").
BoundCase bind_split(const Case& c, const char* split) {
  setenv("WEFT_BF16_SPLIT", split, /*overwrite=*/1);
  BoundCase bound = bind_case(c, DType::bf16);
  unsetenv("WEFT_BF16_SPLIT");
  return bound;
}

// The training GEMMs of the suite's GEMM-bound models at the cpu preset (weft_worker's
// gemm_shapes): x·Wᵀ forward (NT), the input gradient dY·W (NN), the weight gradient
// dYᵀ·x (TN), and the transformer's attention products (a batch of 32).
struct Gemm {
  const char* model;
  int64_t batch, m, n, k;
  bool ta, tb;
};
constexpr Gemm kTrainingGemms[] = {
    {"mlp", 1, 64, 512, 256, false, true},            {"mlp", 1, 64, 512, 512, false, true},
    {"mlp", 1, 64, 256, 512, false, true},            {"mlp", 1, 64, 512, 512, false, false},
    {"mlp", 1, 64, 512, 256, false, false},           {"mlp", 1, 512, 512, 64, true, false},
    {"mlp", 1, 512, 256, 64, true, false},            {"mlp", 1, 256, 512, 64, true, false},
    {"residual_tower", 1, 64, 256, 256, false, true}, {"residual_tower", 1, 64, 256, 256, false, false},
    {"residual_tower", 1, 256, 256, 64, true, false},
    {"transformer", 1, 512, 384, 128, false, true},   {"transformer", 1, 512, 512, 128, false, true},
    {"transformer", 1, 512, 1024, 128, false, true},  {"transformer", 1, 512, 128, 512, false, false},
    {"transformer", 1, 512, 128, 1024, false, false}, {"transformer", 1, 128, 512, 512, true, false},
    {"transformer", 1, 384, 128, 512, true, false},   {"transformer", 1, 1024, 128, 512, true, false},
    {"transformer", 32, 64, 64, 32, false, true},     {"transformer", 32, 64, 32, 64, false, false},
};

// The f32 GEMMs of kTrainingGemms (single ones) through run_gemm, whose rule
// (cuts_columns) picks rows or 16-column blocks, beside each split forced: rows through
// gemm_rows, columns through gemm_serial on each chunk's blocks. Least us of 600 interleaved calls.
void print_f32_splits(int threads) {
  ThreadPool pool(threads);
  std::printf("f32 split of C (run_gemm), least us of 600 interleaved calls, %d thread%s\n", threads,
              threads == 1 ? "" : "s");
  constexpr int64_t kBlock = 16;  // gemm.cc's column block
  for (const Gemm& g : kTrainingGemms) {
    if (g.batch > 1) continue;
    const GemmPlan p = GemmPlan::single(g.m, g.n, g.k, g.ta, g.tb);
    const std::vector<float> a = bench::random_floats(g.m * g.k, 1), b = bench::random_floats(g.k * g.n, 2);
    std::vector<float> c(g.m * g.n);
    const int64_t row_grain = std::max<int64_t>(1, kMinChunkFlops / (2 * g.n * g.k));
    const int64_t column_grain = std::max<int64_t>(1, kMinChunkFlops / (2 * g.m * g.k * kBlock));
    const std::vector<double> t = least_seconds_interleaved({
        [&] { run_gemm<float>(pool, p, a.data(), b.data(), c.data()); },
        [&] {
          pool.parallel_for(g.m, row_grain, [&](int64_t r0, int64_t r1) {
            gemm_rows<float>(p, a.data(), b.data(), c.data(), r0, r1);
          });
        },
        [&] {
          pool.parallel_for((g.n + kBlock - 1) / kBlock, column_grain, [&](int64_t j0, int64_t j1) {
            const int64_t n0 = j0 * kBlock, n1 = std::min(g.n, j1 * kBlock);
            gemm_serial<float>(p.trans_a, p.trans_b, g.m, n1 - n0, g.k, a.data(), p.lda,
                               b.data() + (p.trans_b ? n0 * p.ldb : n0), p.ldb, 0.0f,
                               c.data() + n0, p.ldc);
          });
        }});
    const double rule = t[0], rows = t[1], columns = t[2];
    std::printf("  %-14s %s%s %4lldx%4lldx%4lld  rule (%s) %7.1f  rows %7.1f  columns %7.1f  (%.2fx)\n",
                g.model, g.ta ? "T" : "N", g.tb ? "T" : "N", static_cast<long long>(g.m),
                static_cast<long long>(g.n), static_cast<long long>(g.k),
                cuts_columns(p, threads) ? "columns" : "rows", rule * 1e6, rows * 1e6,
                columns * 1e6, columns / rows);
  }
}

// The bf16 training GEMMs of the suite's GEMM-bound models with C cut by rows and by
// columns (bf16_split; WEFT_BF16_SPLIT forces each), least us of 600 interleaved calls, beside f32,
// and the split the rule picks for a pool of `threads`.
void print_splits(int threads) {
  ThreadPool pool(threads);
  std::printf("bf16 split of C, least us of 600 interleaved calls, %d thread%s (rule: %d parts)\n", threads,
              threads == 1 ? "" : "s", bf16_split_parts());
  for (const Gemm& g : kTrainingGemms) {
    Shape a = g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k};
    Shape b = g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n};
    Shape c{g.m, g.n};
    if (g.batch > 1) {
      for (Shape* s : {&a, &b, &c}) s->dims.insert(s->dims.begin(), g.batch);
    }
    const Case gemm{Op::Matmul, {{"transpose_a", g.ta}, {"transpose_b", g.tb}}, {a, b}, c};
    const BoundCase by_rows = bind_split(gemm, "rows"), by_columns = bind_split(gemm, "columns");
    const BoundCase f32_case = bind_case(gemm, DType::f32);
    const std::vector<double> t = least_seconds_interleaved(
        {[&] { (void)by_rows.kernel->run(pool); }, [&] { (void)by_columns.kernel->run(pool); },
         [&] { (void)f32_case.kernel->run(pool); }});
    const double rows = t[0], columns = t[1], f32 = t[2];
    const std::string columns_describe = by_columns.kernel->describe();
    GemmPlan plan = GemmPlan::single(g.m, g.n, g.k, g.ta, g.tb);
    plan.a_offsets.assign(g.batch, 0);
    const bool rule_columns = bf16_split(plan, bf16_split_parts(), std::nullopt) == Bf16Split::kColumns;
    std::printf("  %-14s %s%s %4lldx%4lldx%4lld%s  rows %7.1f  columns %7.1f  (%.2fx)  f32 %7.1f"
                "  rule: %s%s\n",
                g.model, g.ta ? "T" : "N", g.tb ? "T" : "N", static_cast<long long>(g.m),
                static_cast<long long>(g.n), static_cast<long long>(g.k),
                g.batch > 1 ? (" batch " + std::to_string(g.batch)).c_str() : "", rows * 1e6,
                columns * 1e6, columns / rows, f32 * 1e6, rule_columns ? "columns" : "rows",
                columns_describe.find("(columns split)") == std::string::npos ? " (rows kept when forced)"
                                                                               : "");
  }
}

}  // namespace
}  // namespace weft::cpu

int main(int argc, char** argv) {
  using namespace weft;
  using namespace weft::cpu;
  if (argc > 1 && std::string(argv[1]) == "--splits") {
    for (int threads : {2, 1}) print_splits(threads);
    for (int threads : {2, 1}) print_f32_splits(threads);
    return 0;
  }
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f16};
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::printf("GEMM C = A·B, GFLOP/s, %d thread%s\n", threads, threads == 1 ? "" : "s");
    for (int64_t n : {256, 512, 1024}) {
      const Case c{Op::Matmul, {}, {Shape{n, n}, Shape{n, n}}, Shape{n, n}};
      std::printf("  %4lld^3", static_cast<long long>(n));
      std::string last;
      for (DType d : dtypes) {
        std::string describe;
        const double s = time_case(pool, c, d, &describe);
        std::printf("  %s %7.1f", std::string(dtype_name(d)).c_str(), 2.0 * n * n * n / s * 1e-9);
        if (d == DType::bf16) last = describe;
      }
      std::printf("   (bf16: %s)\n", last.c_str());
    }
    // The suite's GEMM-bound models' training GEMMs (bench/models.cc at the cpu preset):
    // x·Wᵀ forward (NT), the input gradient dY·W (NN) and the weight gradient dYᵀ·x (TN);
    // "packed": the same bf16 call reading its weight B pre-packed (packed_weight.h), for
    // the NT and NN ones (a TN call's B is an activation).
    std::printf("training GEMMs, us per call, %d thread%s\n", threads, threads == 1 ? "" : "s");
    struct Gemm {
      const char* model;
      int64_t m, n, k;
      bool ta, tb;
    };
    const Gemm gemms[] = {
        {"mlp", 64, 512, 256, false, true},          {"mlp", 64, 256, 512, false, true},
        {"mlp", 64, 512, 256, false, false},         {"residual_tower", 64, 256, 256, false, false},
        {"mlp", 64, 512, 512, false, true},          {"mlp", 64, 512, 512, false, false},
        {"mlp", 512, 512, 64, true, false},          {"residual_tower", 64, 256, 256, false, true},
        {"residual_tower", 256, 256, 64, true, false}, {"transformer", 512, 512, 128, false, true},
        {"transformer", 512, 128, 512, false, false},  {"transformer", 128, 512, 512, true, false},
        {"transformer", 512, 128, 512, true, false},
    };
    for (const Gemm& g : gemms) {
      const Shape a = g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k};
      const Shape b = g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n};
      const Case c{Op::Matmul, {{"transpose_a", g.ta}, {"transpose_b", g.tb}}, {a, b}, Shape{g.m, g.n}};
      std::printf("  %-14s %s%s %4lldx%4lldx%4lld", g.model, g.ta ? "T" : "N", g.tb ? "T" : "N",
                  static_cast<long long>(g.m), static_cast<long long>(g.n),
                  static_cast<long long>(g.k));
      std::string last;
      for (DType d : {DType::f32, DType::bf16}) {
        std::string describe;
        const double s = time_case(pool, c, d, &describe);
        std::printf("  %s %7.1f", std::string(dtype_name(d)).c_str(), s * 1e6);
        if (d == DType::bf16) last = describe;
      }
      if (const double packed = g.ta ? 0 : time_packed(pool, c); packed > 0) {
        std::printf("  packed %7.1f", packed * 1e6);
      }
      std::printf("   (bf16: %s)\n", last.c_str());
    }
    std::printf("convnet conv 16->32 3x3 pad 1 on [32,16,16,16], us per call, %d thread%s\n",
                threads, threads == 1 ? "" : "s");
    const Attrs conv = {{"padding", IntList{1, 1}}};
    Attrs bi = conv, bw = conv;
    bi["input_shape"] = IntList{32, 16, 16, 16};
    bw["weight_shape"] = IntList{32, 16, 3, 3};
    const Shape x{32, 16, 16, 16}, w{32, 16, 3, 3}, y{32, 32, 16, 16};
    const std::pair<const char*, Case> convs[] = {
        {"conv", {Op::Conv, conv, {x, w}, y}},
        {"conv_backward_input", {Op::ConvBackwardInput, bi, {y, w}, x}},
        {"conv_backward_weight", {Op::ConvBackwardWeight, bw, {x, y}, w}},
    };
    for (const auto& [what, c] : convs) {
      std::printf("  %-22s", what);
      std::string last;
      for (DType d : dtypes) {
        std::string describe;
        const double s = time_case(pool, c, d, &describe);
        std::printf("  %s %8.1f", std::string(dtype_name(d)).c_str(), s * 1e6);
        if (d == DType::bf16) last = describe;
      }
      std::printf("   (bf16: %s)\n", last.c_str());
    }
  }
  return 0;
}

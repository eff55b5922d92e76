// CUDA kernel generation without a GPU: the emitted MLIR, the PTX of every op × dtype
// that gpu_supports accepts (one module, all kernels linked), assembled for Hopper by
// the toolkit's ptxas, which needs no GPU; and the errors. Running the kernels against
// the reference interpreter needs a GPU: tests/cuda.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "codegen/cuda_program.h"
#include "codegen/emit_gpu.h"
#include "codegen/kernel_test_util.h"
#include "codegen/jit.h"
#include "codegen/ptx.h"
#include "third_party/cuda_archs.h"

namespace weft::codegen {
namespace {

using testing::max_half_ulps;
using testing::max_scaled_error;
using testing::op_body;
using testing::parse_typed;
using testing::random_inputs;

constexpr char kPtxas[] = "/usr/local/cuda/bin/ptxas";

/// Every body of one op over a few dtypes and broadcasts that gpu_supports accepts.
std::vector<Graph> supported_bodies() {
  std::vector<Graph> bodies;
  const std::vector<std::vector<Shape>> shapes = {{{37}}, {{4, 19}, {19}}, {{3, 1, 5}, {2, 1}}};
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    if (info.category != OpCategory::Elementwise || info.arity < 1 || info.arity > 3) continue;
    for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64,
                    DType::u8, DType::boolean}) {
      for (const std::vector<Shape>& s : shapes) {
        std::vector<Type> types;
        for (int k = 0; k < info.arity; ++k) types.push_back({d, s[k % s.size()]});
        Attrs attrs;
        std::optional<DType> result;
        if (op == Op::Gelu) attrs["approximate"] = std::string("tanh");
        if (op == Op::Cast) {  // f32 → i32, bf16 → f16, f16 → bf16, the others → f32
          result = d == DType::f32    ? DType::i32
                   : d == DType::bf16 ? DType::f16
                   : d == DType::f16  ? DType::bf16
                                      : DType::f32;
          attrs["dtype"] = *result;
        }
        if (op == Op::Select) types[0].dtype = DType::boolean;
        if (op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt ||
            op == Op::Ge) {
          result = DType::boolean;
        }
        Graph body = op_body(op, types, attrs, result);
        if (gpu_supports(body, body.nodes()[0])) bodies.push_back(std::move(body));
      }
    }
  }
  return bodies;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// ptxas ships with the CUDA toolkit on every machine (ENVIRONMENT.md) and runs without a
// GPU: the PTX must assemble for every architecture the build supports
// (third_party/cuda.bzl's CUDA_ARCHS, Turing to Blackwell).
void assemble_for_every_architecture(const std::string& name, const std::string& ptx) {
  if (!std::ifstream(kPtxas).good()) {
    std::printf("  %s not found: PTX not assembled\n", kPtxas);
    return;
  }
  const std::string path = write_temp(name, ptx);
  for (const int arch : cuda::kCudaArchs) {
    const std::string cmd = std::string(kPtxas) + " -arch=sm_" + std::to_string(arch) + " " + path + " -o " +
                            path + ".cubin";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

TEST(Ptx, EmittedKernelIsOneThreadPerVector) {
  const Graph body = op_body(Op::Add, {{DType::f32, {128, 256}}, {DType::f32, {256}}});
  const GpuKernel k = emit_gpu_kernel(body, "k0", /*vectorize=*/true);
  const std::string& mlir = k.mlir;
  EXPECT_NE(mlir.find("func.func @k0(%p0: !llvm.ptr, %p1: !llvm.ptr, %p2: !llvm.ptr)"),
            std::string::npos) << mlir;
  EXPECT_NE(mlir.find("nvvm.read.ptx.sreg.tid.x : i32"), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("nvvm.read.ptx.sreg.nctaid.x : i32"), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("arith.addf"), std::string::npos) << mlir;
  // Four f32 per 16-byte access, the addresses checked first: one thread per vector.
  EXPECT_EQ(k.width, 4);
  EXPECT_EQ(k.threads, 128 * 256 / 4);
  EXPECT_NE(mlir.find("{alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>"), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("llvm.ptrtoint %p0"), std::string::npos) << mlir;
  // Without vectors (WEFT_GPU_VECTOR=0's form): one thread per element, no vector type.
  const GpuKernel scalar = emit_gpu_kernel(body, "k0", /*vectorize=*/false);
  EXPECT_EQ(scalar.width, 1);
  EXPECT_EQ(scalar.threads, 128 * 256);
  EXPECT_EQ(scalar.mlir.find("vector<"), std::string::npos) << "scalar code expected:\n" << scalar.mlir;
  EXPECT_EQ(scalar.mlir.find("ptrtoint"), std::string::npos) << scalar.mlir;
}

/// softmax over the last axis of %x of type `type`, as a row body's text.
std::string softmax_text(const std::string& type) {
  return "graph @k(%x: " + type + ") {\n  %m = max(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n"
         "  %e = exp(%d)\n  %s = sum(%e) {axes=[-1], keepdims=true}\n  %p = div(%e, %s)\n  return %p\n}\n";
}

/// The PTX of one kernel (compiled alone).
std::string kernel_ptx(const GpuKernel& k, const std::string& symbol) {
  StatusOr<std::string> ptx = compile_ptx({k.mlir}, {symbol});
  EXPECT_TRUE(ptx.ok()) << ptx.error().to_string();
  return ptx.ok() ? *ptx : "";
}

TEST(Ptx, VectorizedKernelsLoadAndStoreSixteenBytes) {
  // f32 elementwise: ld.global.v4.f32 / st.global.v4.f32.
  const Graph f32 = parse_typed(R"(
graph @k(%x: f32[128,256], %b: f32[256]) {
  %s = add(%x, %b)
  %t = tanh(%s)
  return %t
}
)");
  const std::string f32_ptx = kernel_ptx(emit_gpu_kernel(f32, "f32", /*vectorize=*/true), "f32");
  EXPECT_NE(f32_ptx.find("ld.global.v4.f32"), std::string::npos) << f32_ptx;
  EXPECT_NE(f32_ptx.find("st.global.v4.f32"), std::string::npos) << f32_ptx;
  // bf16 (computed in f32): eight 16-bit values per 16-byte load and store.
  const Graph bf16 = parse_typed(R"(
graph @k(%x: bf16[64,512], %y: bf16[64,512]) {
  %s = mul(%x, %y)
  %g = gelu(%s) {approximate="tanh"}
  return %g
}
)");
  const GpuKernel bk = emit_gpu_kernel(bf16, "bf16", /*vectorize=*/true);
  EXPECT_EQ(bk.width, 8);
  EXPECT_EQ(bk.threads, 64 * 512 / 8);
  const std::string bf16_ptx = kernel_ptx(bk, "bf16");
  EXPECT_NE(bf16_ptx.find("ld.global.v4.b32"), std::string::npos) << bf16_ptx;
  EXPECT_NE(bf16_ptx.find("st.global.v4.b32"), std::string::npos) << bf16_ptx;
  // The vocabulary softmax (4096 rows of 8192): a warp per row, each lane reading four
  // f32 per load in all three passes and storing four per store.
  const Graph softmax = parse_typed(softmax_text("f32[4096,8192]"));
  const GpuKernel sk = emit_gpu_kernel(softmax, "softmax", /*vectorize=*/true);
  EXPECT_EQ(sk.width, 4);
  EXPECT_EQ(sk.threads, 4096 * 32);
  const std::string softmax_ptx = kernel_ptx(sk, "softmax");
  EXPECT_NE(softmax_ptx.find("ld.global.v4.f32"), std::string::npos) << softmax_ptx;
  EXPECT_NE(softmax_ptx.find("st.global.v4.f32"), std::string::npos) << softmax_ptx;
  EXPECT_NE(softmax_ptx.find("shfl.sync.bfly"), std::string::npos) << softmax_ptx;
  // The same in bf16, and a row sum (a reduction along rows): vectors too.
  const GpuKernel sb =
      emit_gpu_kernel(parse_typed(softmax_text("bf16[4096,8192]")), "softmax_bf16", /*vectorize=*/true);
  EXPECT_EQ(sb.width, 8);
  const std::string sb_ptx = kernel_ptx(sb, "softmax_bf16");
  EXPECT_NE(sb_ptx.find("ld.global.v4.b32"), std::string::npos) << sb_ptx;
  const GpuKernel rowsum = emit_gpu_kernel(
      parse_typed("graph @k(%x: f32[512,1024]) {\n  %s = sum(%x) {axes=[1]}\n  return %s\n}\n"),
      "rowsum", /*vectorize=*/true);
  EXPECT_EQ(rowsum.width, 4);
  EXPECT_NE(kernel_ptx(rowsum, "rowsum").find("ld.global.v4.f32"), std::string::npos);
  // Without vectors: scalar loads only.
  const std::string scalar_ptx =
      kernel_ptx(emit_gpu_kernel(softmax, "softmax", /*vectorize=*/false), "softmax");
  EXPECT_EQ(scalar_ptx.find(".v4."), std::string::npos) << scalar_ptx;
  EXPECT_NE(scalar_ptx.find("ld.global.f32"), std::string::npos) << scalar_ptx;
}

/// Elementwise and row bodies whose layouts allow narrower vectors, or none: rows of
/// odd length, tails, broadcast operands, f64 and bf16, with the width and threads
/// expected, a PTX access only the vector path has ("" for scalar code) and the scalar
/// access every kernel keeps (tails, unaligned buffers).
struct VectorCase {
  std::string name, text;
  int width;
  int64_t threads;
  std::string vector_access, scalar_access = "ld.global.f32";
};
std::vector<VectorCase> vector_cases() {
  return {
      // One row of 37: nine vectors and a tail of one element.
      {"tail", "graph @k(%x: f32[37]) {\n  %y = neg(%x)\n  return %y\n}\n", 4, 9, "ld.global.v4.f32"},
      // Rows of 19 (odd): no row but the first starts on a multiple of 2: scalar.
      {"odd", "graph @k(%x: f32[4,19], %b: f32[19]) {\n  %y = add(%x, %b)\n  return %y\n}\n", 1, 76, ""},
      // Rows of 6 with a per-row operand (a splat): pairs.
      {"splat", "graph @k(%x: f32[64,6], %s: f32[64,1]) {\n  %y = mul(%x, %s)\n  return %y\n}\n", 2,
       64 * 3, "ld.global.v2.f32"},
      // f64: two per access; 11 = five pairs and a tail of one.
      {"f64", "graph @k(%x: f64[11], %y: f64[11]) {\n  %z = add(%x, %y)\n  return %z\n}\n", 2, 5,
       "ld.global.v2.f64", "ld.global.f64"},
      // bf16 rows of 10: pairs (10 is no multiple of 8 or 4).
      {"bf16_pairs", "graph @k(%x: bf16[4,10], %b: bf16[10]) {\n  %y = add(%x, %b)\n  return %y\n}\n", 2,
       4 * 5, "ld.global.u32", "ld.global.u16"},
      // A cast from bf16 to f32: the wider dtype decides (four per access).
      {"widen", "graph @k(%x: bf16[8,64]) {\n  %y = cast(%x) {dtype=f32}\n  return %y\n}\n", 4,
       8 * 16, "ld.global.v4.u16", "ld.global.u16"},
      // Compares store bool bytes: eight per access at most.
      {"compare", "graph @k(%x: u8[4,64], %y: u8[4,64]) {\n  %z = lt(%x, %y)\n  return %z\n}\n", 8,
       4 * 8, "ld.global.u32", "ld.global.u8"},
      // Rows of 37 minus their maxima: a warp per row, too short for a vector per lane.
      {"softmax_odd", "graph @k(%x: f32[16,37]) {\n  %m = max(%x) {axes=[-1], keepdims=true}\n"
                      "  %d = sub(%x, %m)\n  return %d\n}\n", 1, 16 * 32, ""},
      // Rows of 300 (four per load), a per-row output beside the full one.
      {"norm_300", "graph @k(%x: f32[2048,300], %g: f32[300]) {\n  %m = mean(%x) {axes=[-1], keepdims=true}\n"
                   "  %d = sub(%x, %m)\n  %y = mul(%d, %g)\n  return %y, %m\n}\n", 4, 2048 * 32,
       "st.global.v4.f32"},
      // Few rows of 300: a block per row, too short for vectors in all 256 lanes.
      {"block_300", "graph @k(%x: f32[16,300]) {\n  %s = sum(%x) {axes=[-1]}\n  return %s\n}\n", 1,
       16 * 256, ""},
  };
}

TEST(Ptx, TailsOddSizesAndBroadcastsTakeNarrowerVectorsOrNone) {
  std::vector<std::string> modules, symbols;
  for (const VectorCase& c : vector_cases()) {
    SCOPED_TRACE(c.name);
    const GpuKernel k = emit_gpu_kernel(parse_typed(c.text), c.name, /*vectorize=*/true);
    EXPECT_EQ(k.width, c.width);
    EXPECT_EQ(k.threads, c.threads);
    EXPECT_EQ(k.mlir.find("vector<") == std::string::npos, c.width == 1) << k.mlir;
    const std::string ptx = kernel_ptx(k, c.name);
    // Vectorized kernels keep scalar loads: for the tail and the unaligned fallback.
    EXPECT_NE(ptx.find(c.scalar_access), std::string::npos) << ptx;
    if (c.width > 1) {
      EXPECT_NE(ptx.find(c.vector_access), std::string::npos) << ptx;
    } else {
      EXPECT_EQ(ptx.find(".v2."), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find(".v4."), std::string::npos) << ptx;
    }
    std::printf("  %-12s width %d:", c.name.c_str(), k.width);
    std::set<std::string> ops;
    for (size_t at = ptx.find(".global."); at != std::string::npos; at = ptx.find(".global.", at + 1)) {
      if (at >= 2 && (ptx.compare(at - 2, 2, "ld") == 0 || ptx.compare(at - 2, 2, "st") == 0)) {
        ops.insert(ptx.substr(at - 2, ptx.find_first_of(" \t", at) - at + 2));
      }
    }
    for (const std::string& op : ops) std::printf(" %s", op.c_str());
    std::printf("\n");
    modules.push_back(k.mlir);
    symbols.push_back(c.name);
  }
  StatusOr<std::string> ptx = compile_ptx(modules, symbols);
  ASSERT_TRUE(ptx.ok()) << ptx.error().to_string();
  assemble_for_every_architecture("vectors.ptx", *ptx);
}

TEST(Ptx, EveryGpuOpCompilesToOneModuleThatPtxasAssembles) {
  const std::vector<Graph> bodies = supported_bodies();
  ASSERT_GT(bodies.size(), 100u);
  std::vector<std::string> modules, symbols;
  for (size_t i = 0; i < bodies.size(); ++i) {
    symbols.push_back("k" + std::to_string(i));
    modules.push_back(emit_gpu_elementwise(bodies[i], symbols.back()));
  }
  StatusOr<std::string> ptx = compile_ptx(modules, symbols);
  ASSERT_TRUE(ptx.ok()) << ptx.error().to_string();
  EXPECT_NE(ptx->find(".target sm_75"), std::string::npos);
  EXPECT_NE(ptx->find(".version 7.8"), std::string::npos);
  for (const std::string& s : symbols) {
    EXPECT_NE(ptx->find(".visible .entry " + s + "("), std::string::npos) << s;
  }
  std::printf("  %zu kernels, %zu bytes of PTX\n", bodies.size(), ptx->size());
  assemble_for_every_architecture("all_ops.ptx", *ptx);
}

TEST(Ptx, FusedChainsAndMultipleOutputs) {
  const Graph body = parse_typed(R"(
graph @k(%x: f32[8,3,33], %b: f32[3,1], %m: bool[33]) -> (f32[8,3,33], f32[8,3,33]) {
  %s = add(%x, %b)
  %g = gelu(%s) {approximate="none"}
  %t = tanh(%g)
  %z = select(%m, %t, %s)
  return %z, %g
}
)");
  StatusOr<std::string> ptx = compile_ptx({emit_gpu_elementwise(body, "fused")}, {"fused"});
  ASSERT_TRUE(ptx.ok()) << ptx.error().to_string();
  EXPECT_NE(ptx->find(".visible .entry fused("), std::string::npos);
  // Five buffers: three operands, two results.
  EXPECT_NE(ptx->find("fused_param_4"), std::string::npos) << *ptx;
  EXPECT_EQ(ptx->find("fused_param_5"), std::string::npos) << *ptx;
}

/// Half-precision reduction and row bodies in each GPU form: a bf16 column reduction over
/// 128 rows (column groups), an f16 max along rows of 40 (a warp per row), bf16
/// batch-norm statistics (a block per row), a bf16 softmax and an f16 layer norm (a warp
/// per row), with the threads each wants.
struct HalfBody {
  std::string name, text;
  int64_t threads;
};
std::vector<HalfBody> half_reduction_bodies() {
  return {
      {"col_bf16", "graph @k(%g: bf16[128,10], %y: bf16[128,10]) {\n  %m = mul(%g, %y)\n"
                   "  %s = sum(%m) {axes=[0]}\n  return %s\n}\n", 256},
      {"row_max_f16", "graph @k(%x: f16[64,40]) {\n  %s = max(%x) {axes=[1]}\n  return %s\n}\n",
       64 * 32},
      {"stats_bf16", "graph @k(%x: bf16[32,16,32,32]) {\n  %s = sum(%x) {axes=[0, 2, 3]}\n"
                     "  return %s\n}\n", 16 * 256},
      {"softmax_bf16", "graph @k(%x: bf16[64,40]) {\n  %m = max(%x) {axes=[-1], keepdims=true}\n"
                       "  %d = sub(%x, %m)\n  %e = exp(%d)\n  %s = sum(%e) {axes=[-1], keepdims=true}\n"
                       "  %p = div(%e, %s)\n  return %p\n}\n", 64 * 32},
      {"layer_norm_f16", "graph @k(%x: f16[12,48], %g: f16[48]) {\n"
                         "  %m = mean(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n"
                         "  %q = mul(%d, %d)\n  %v = mean(%q) {axes=[-1], keepdims=true}\n"
                         "  %r = rsqrt(%v)\n  %n = mul(%d, %r)\n  %y = mul(%n, %g)\n  return %y\n}\n",
       12 * 32},
  };
}

TEST(Ptx, ReductionsAndRowBodiesSpreadOverWarpsAndBlocks) {
  // A column reduction (the bias gradient's sum over the batch): columns over lanes, rows over warps.
  const Graph column = parse_typed(
      "graph @k(%g: f32[128,10], %y: f32[128,10]) {\n  %m = mul(%g, %y)\n"
      "  %s = sum(%m) {axes=[0]}\n  return %s\n}\n");
  GpuKernel c = emit_gpu_kernel(column, "col");
  EXPECT_EQ(c.threads, 256);  // 10 columns: one block of 32 columns, rows split 8 ways
  EXPECT_NE(c.mlir.find("nvvm.barrier0"), std::string::npos) << c.mlir;
  const Graph few_rows = parse_typed(
      "graph @k(%g: f32[16,10]) {\n  %s = sum(%g) {axes=[0]}\n  return %s\n}\n");
  EXPECT_EQ(emit_gpu_kernel(few_rows, "few").threads, 10);  // under 64 rows: a thread each
  // A reduction along rows of 40: one warp per row.
  const Graph row = parse_typed(
      "graph @k(%x: f32[64,40]) {\n  %s = max(%x) {axes=[1]}\n  return %s\n}\n");
  GpuKernel r = emit_gpu_kernel(row, "row");
  EXPECT_EQ(r.threads, 64 * 32);
  EXPECT_NE(r.mlir.find("nvvm.shfl.sync bfly"), std::string::npos) << r.mlir;
  const Graph softmax = parse_typed(softmax_text("f32[64,40]"));
  ASSERT_TRUE(is_row_body(softmax));
  // Rows of 40: one warp per row (32 threads each), its statistics combined by shuffles.
  GpuKernel sm = emit_gpu_kernel(softmax, "softmax");
  EXPECT_EQ(sm.threads, 64 * 32);
  EXPECT_EQ(sm.mlir.find("vector"), std::string::npos) << sm.mlir;
  EXPECT_NE(sm.mlir.find("nvvm.shfl.sync bfly"), std::string::npos) << sm.mlir;
  // f64 statistics shuffle as two 32-bit halves; rows shorter than a warp keep one
  // thread per row.
  const Graph softmax64 = parse_typed(R"(
graph @k(%x: f64[8,300]) {
  %m = max(%x) {axes=[-1], keepdims=true}
  %d = sub(%x, %m)
  %s = sum(%d) {axes=[-1], keepdims=true}
  %p = div(%d, %s)
  return %p
}
)");
  GpuKernel sm64 = emit_gpu_kernel(softmax64, "softmax64");
  EXPECT_EQ(sm64.threads, 8 * 256);  // 8 rows of 300: a block each
  const Graph short_rows = parse_typed(R"(
graph @k(%x: f32[64,10]) {
  %m = max(%x) {axes=[-1], keepdims=true}
  %d = sub(%x, %m)
  return %d
}
)");
  // Few rows of many elements (batch-norm statistics over N, H, W): a block per row, its
  // warps combined through shared memory between barriers.
  const Graph stats = parse_typed(
      "graph @k(%x: f32[32,16,32,32]) {\n  %s = sum(%x) {axes=[0, 2, 3]}\n  return %s\n}\n");
  GpuKernel st = emit_gpu_kernel(stats, "stats");
  EXPECT_EQ(st.threads, 16 * 256);
  EXPECT_NE(st.mlir.find("nvvm.barrier0"), std::string::npos) << st.mlir;
  EXPECT_NE(st.mlir.find("addr_space = 3"), std::string::npos) << st.mlir;
  GpuKernel sr = emit_gpu_kernel(short_rows, "short_rows");
  EXPECT_EQ(sr.threads, 64);
  EXPECT_EQ(sr.mlir.find("nvvm.shfl.sync"), std::string::npos) << sr.mlir;
  // f16 and bf16 take the same forms: their statistics are f32 (max/min) or f64 (sums)
  // in the shuffles and in shared memory; loads and stores move 16 bits.
  std::vector<std::string> half_mlir, half_symbols;
  for (const auto& [name, text, threads] : half_reduction_bodies()) {
    GpuKernel k = emit_gpu_kernel(parse_typed(text), name);
    EXPECT_EQ(k.threads, threads) << name;
    EXPECT_NE(k.mlir.find("i16"), std::string::npos) << k.mlir;
    half_mlir.push_back(std::move(k.mlir));
    half_symbols.push_back(name);
  }
  std::vector<std::string> modules = {c.mlir, r.mlir, sm.mlir, sm64.mlir, sr.mlir, st.mlir};
  std::vector<std::string> symbols = {"col", "row", "softmax", "softmax64", "short_rows", "stats"};
  modules.insert(modules.end(), half_mlir.begin(), half_mlir.end());
  symbols.insert(symbols.end(), half_symbols.begin(), half_symbols.end());
  StatusOr<std::string> ptx = compile_ptx(modules, symbols);
  ASSERT_TRUE(ptx.ok()) << ptx.error().to_string();
  assemble_for_every_architecture("reductions.ptx", *ptx);
}

/// Which buffers a host run places one element past a 64-byte boundary (the GPU kernels'
/// vector code then must take its scalar path).
enum class Misalign { none, all, last };

/// Runs `body`'s GPU kernel code on the host (emit_host_scalar_kernel) in two ranges of
/// threads, its buffers placed as `misalign` says, and returns the largest scaled error
/// against the reference interpreter (NaN when one side alone is NaN).
double host_scalar_error(Jit& jit, const Graph& body, uint64_t seed, Misalign misalign = Misalign::none) {
  const GpuKernel k = emit_host_scalar_kernel(body, "scalar");
  StatusOr<JitResult> compiled = jit.compile(k.mlir, "scalar");
  EXPECT_TRUE(compiled.ok()) << compiled.error().to_string();
  if (!compiled.ok()) return NAN;
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs = random_inputs(body, rng, -3, 3);
  for (Tensor& t : inputs) {
    if (t.type().dtype == DType::u8) {
      for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::abs(t.get_double(i)));
    }
  }
  std::vector<Tensor> outputs;
  // (Half inputs are drawn as f32 values rounded to the dtype by random_tensor.)
  for (ValueId v : body.outputs()) outputs.emplace_back(body.type(v));
  std::vector<Tensor*> tensors;
  for (Tensor& t : inputs) tensors.push_back(&t);
  for (Tensor& t : outputs) tensors.push_back(&t);
  std::vector<std::vector<std::byte>> storage;
  std::vector<void*> buffers;
  for (size_t b = 0; b < tensors.size(); ++b) {
    const size_t bytes = tensors[b]->type().bytes(), element = dtype_size(tensors[b]->dtype());
    storage.emplace_back(bytes + 128);
    const auto start = reinterpret_cast<uintptr_t>(storage.back().data());
    const bool off = misalign == Misalign::all || (misalign == Misalign::last && b + 1 == tensors.size());
    buffers.push_back(reinterpret_cast<void*>((start + 63) / 64 * 64 + (off ? element : 0)));
    std::memcpy(buffers.back(), tensors[b]->raw_data(), bytes);
  }
  auto fn = reinterpret_cast<GeneratedFn>(compiled->address);
  fn(buffers.data(), 0, k.threads / 2);
  fn(buffers.data(), k.threads / 2, k.threads);
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::memcpy(outputs[o].raw_data(), buffers[inputs.size() + o], outputs[o].type().bytes());
  }
  StatusOr<reference::RunResult> want = reference::run(body, inputs);
  EXPECT_TRUE(want.ok()) << want.error().to_string();
  if (!want.ok()) return NAN;
  double worst = 0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const DType d = outputs[o].dtype();
    // f16/bf16 outputs: distance in units in the last place (testing::max_half_ulps).
    const double err = is_half(d)
                           ? max_half_ulps(outputs[o], want->outputs[o])
                           : max_scaled_error(outputs[o], want->outputs[o]);
    if (std::isnan(err)) return NAN;
    worst = std::max(worst, err);
  }
  return worst;
}

/// True when `body` has an f16/bf16 output.
bool half_output(const Graph& body) {
  for (ValueId v : body.outputs()) {
    const DType d = body.type(v).dtype;
    if (is_half(d)) return true;
  }
  return false;
}

/// True when `body` computes a transcendental function (an f32 polynomial approximation).
bool approximated(const Graph& body) {
  for (const Node& n : body.nodes()) {
    if (n.info().math == MathClass::Transcendental) return true;
  }
  return false;
}

TEST(Ptx, GpuKernelArithmeticMatchesReferenceOnTheHost) {
  // The GPU kernels' scalar code (width 1, one row per thread) with the host's ABI: every
  // op body of the all-ops module, reductions of both layouts and row bodies.
  Jit jit;
  std::vector<Graph> bodies = supported_bodies();
  for (const char* text : {
           "graph @k(%g: f32[128,10], %y: f32[128,10]) {\n  %m = mul(%g, %y)\n  %s = sum(%m) {axes=[0]}\n  return %s\n}\n",
           "graph @k(%x: f32[6,37]) {\n  %s = max(%x) {axes=[1]}\n  return %s\n}\n",
           "graph @k(%x: f32[6,37]) {\n  %a = abs(%x)\n  %s = min(%a) {axes=[0]}\n  return %s\n}\n",
           "graph @k(%x: f64[5,7,9]) {\n  %s = mean(%x) {axes=[0, 2]}\n  return %s\n}\n",
           "graph @k(%x: f32[3,4,5]) {\n  %s = sum(%x)\n  return %s\n}\n",
           "graph @k(%x: f32[64,40]) {\n  %m = max(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n"
           "  %e = exp(%d)\n  %s = sum(%e) {axes=[-1], keepdims=true}\n  %p = div(%e, %s)\n  return %p, %s\n}\n",
           "graph @k(%x: f32[12,48], %g: f32[48]) {\n  %m = mean(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n"
           "  %q = mul(%d, %d)\n  %v = mean(%q) {axes=[-1], keepdims=true}\n  %r = rsqrt(%v)\n"
           "  %n = mul(%d, %r)\n  %y = mul(%n, %g)\n  return %y\n}\n"}) {
    bodies.push_back(parse_typed(text));
  }
  for (const HalfBody& h : half_reduction_bodies()) bodies.push_back(parse_typed(h.text));
  int checked = 0, half = 0;
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(kernel_key(bodies[i]));
    const double err = host_scalar_error(jit, bodies[i], 100 + i);
    if (half_output(bodies[i])) {
      // f16/bf16: bit for bit where the f32 math is exact, within one unit in the last
      // place where it is an approximation (as the CPU's half kernels, kernel_half_test).
      EXPECT_LE(err, approximated(bodies[i]) ? 1 : 0);
      ++half;
    } else {
      // f32 math is MLIR's polynomial approximations, as on the CPU (kernel_ops_test).
      EXPECT_LE(err, 1e-5);
    }
    ++checked;
  }
  std::printf("  %d GPU kernel bodies checked on the host, %d with f16/bf16 outputs\n", checked,
              half);
}

TEST(Ptx, VectorizedKernelsMatchReferenceOnTheHostAlignedOrNot) {
  // The vector code of the kernels above (one lane per row on the host), with aligned
  // buffers (the vector path), every buffer one element off and only the last result
  // one element off (the scalar path, chosen when the kernel runs).
  Jit jit;
  std::vector<Graph> bodies;
  for (const VectorCase& c : vector_cases()) bodies.push_back(parse_typed(c.text));
  for (const std::string type : {"f32[8,1024]", "bf16[8,1024]", "f16[6,96]"}) {
    bodies.push_back(parse_typed(softmax_text(type)));
  }
  bodies.push_back(parse_typed("graph @k(%x: f32[16,1000]) {\n  %s = sum(%x) {axes=[1]}\n  return %s\n}\n"));
  bodies.push_back(parse_typed("graph @k(%x: bf16[5,40]) {\n  %s = max(%x) {axes=[1]}\n  return %s\n}\n"));
  int vectorized = 0;
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(kernel_key(bodies[i]));
    vectorized += emit_host_scalar_kernel(bodies[i], "k", /*vectorize=*/true).width > 1;
    for (Misalign m : {Misalign::none, Misalign::all, Misalign::last}) {
      SCOPED_TRACE(static_cast<int>(m));
      const double err = host_scalar_error(jit, bodies[i], 500 + i, m);
      EXPECT_LE(err, half_output(bodies[i]) ? (approximated(bodies[i]) ? 1 : 0) : 1e-5);
    }
  }
  EXPECT_GE(vectorized, 10);
  std::printf("  %zu bodies, %d vectorized, each run aligned and misaligned\n", bodies.size(), vectorized);
}

TEST(Ptx, LoweredProgramLaunchesOneThreadPerVector) {
  // A bias add with tanh (an elementwise kernel) and a softmax over rows of 1024 (a row
  // kernel, a block per row), lowered for the GPU: the Program's launch is the vectors'
  // count, and WEFT_GPU_VECTOR=0 brings back one thread per element.
  const Graph g = parse_typed(R"(
graph @g(%x: f32[128,256], %b: f32[256], %y: f32[64,1024]) {
  %s = add(%x, %b)
  %t = tanh(%s)
  %m = max(%y) {axes=[-1], keepdims=true}
  %d = sub(%y, %m)
  %e = exp(%d)
  %z = sum(%e) {axes=[-1], keepdims=true}
  %p = div(%e, %z)
  return %t, %p
}
)");
  auto launches = [&] {
    StatusOr<CudaProgram> p = compile_cuda_program(g);
    EXPECT_TRUE(p.ok()) << p.error().to_string();
    std::map<FusedKind, int64_t> threads;
    if (!p.ok()) return std::make_pair(threads, std::string());
    for (const GeneratedKernel& k : p->program.kernels) {
      EXPECT_EQ(k.row_length, 1);
      threads[k.kind] = k.rows;
    }
    return std::make_pair(threads, p->ptx);
  };
  const auto [vector_threads, vector_ptx] = launches();
  EXPECT_EQ(vector_threads.at(FusedKind::elementwise), 128 * 256 / 4);
  EXPECT_EQ(vector_threads.at(FusedKind::row), 64 * 256);
  EXPECT_NE(vector_ptx.find("ld.global.v4.f32"), std::string::npos);
  const char* before = std::getenv("WEFT_GPU_VECTOR");
  ASSERT_EQ(before, nullptr) << "the test sets WEFT_GPU_VECTOR itself";
  setenv("WEFT_GPU_VECTOR", "0", /*overwrite=*/1);
  const auto [scalar_threads, scalar_ptx] = launches();
  unsetenv("WEFT_GPU_VECTOR");
  EXPECT_EQ(scalar_threads.at(FusedKind::elementwise), 128 * 256);
  EXPECT_EQ(scalar_threads.at(FusedKind::row), 64 * 256);
  EXPECT_EQ(scalar_ptx.find(".v4."), std::string::npos);
}

TEST(Ptx, WhatTheGpuCannotComputeIsRejected) {
  const Graph exp64 = op_body(Op::Exp, {{DType::f64, {4}}});
  EXPECT_FALSE(gpu_supports(exp64, exp64.nodes()[0]));
  const Graph pow32 = op_body(Op::Pow, {{DType::f32, {4}}, {DType::f32, {4}}});
  EXPECT_FALSE(gpu_supports(pow32, pow32.nodes()[0]));
  const Graph add64 = op_body(Op::Add, {{DType::f64, {4}}, {DType::f64, {4}}});
  EXPECT_TRUE(gpu_supports(add64, add64.nodes()[0]));
  const Graph sum = parse_typed("graph @k(%x: f32[4,5]) -> (f32[4]) {\n  %s = sum(%x) {axes=[1]}\n  return %s\n}\n");
  EXPECT_TRUE(gpu_supports(sum, sum.nodes()[0]));
  const Graph argmax = parse_typed("graph @k(%x: f32[4,5]) {\n  %s = argmax(%x) {axis=1}\n  return %s\n}\n");
  EXPECT_FALSE(gpu_supports(argmax, argmax.nodes()[0]));
}

TEST(Ptx, MissingKernelSymbolIsAnError) {
  const Graph body = op_body(Op::Neg, {{DType::f32, {4}}});
  StatusOr<std::string> ptx = compile_ptx({emit_gpu_elementwise(body, "k0")}, {"k0", "k1"});
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.error().message, "codegen: no generated module defines CUDA kernel k1");
}

}  // namespace
}  // namespace weft::codegen

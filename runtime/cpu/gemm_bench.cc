// Prints what weft's contraction kernels reach on this machine, in GFLOP/s (medians):
//   - GEMM shapes of an MLP 784-256-256-10 training step at batch 128 (forward x·W and
//     the backward products with transposes) and of a d=128 transformer block over 256
//     tokens: weft's kernel on a 2-thread ThreadPool (oneDNN sgemm per chunk, one OpenMP
//     thread each), the same partition calling OpenBLAS single-threaded, and oneDNN's own
//     sgemm with its 2 OpenMP threads (the baseline; run last, since its idle OpenMP
//     threads spin for a while after each call);
//   - conv and its two gradients on the Fashion-MNIST CNN shapes.
// OpenBLAS runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (openblas_peer.h); the first
// line names the kernel it chose.
//
//   bazel run //runtime/cpu:gemm_bench   (.bazelrc builds with -O2; the kernels with -O3)

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "runtime/cpu/bench_util.h"
#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/openblas_peer.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace weft::cpu {
namespace {

using Clock = std::chrono::steady_clock;



struct GemmShape {
  const char* what;
  int64_t m, n, k;
  bool ta, tb;
};

std::unique_ptr<BoundKernel> bind(Op op, Attrs attrs, std::vector<Type> operands, Type result,
                                  std::vector<const void*> in, void* out) {
  LibraryCall call;
  call.node.op = op;
  call.node.attrs = std::move(attrs);
  call.operand_types = std::move(operands);
  call.result_type = std::move(result);
  auto k = make_library_kernel(call, std::move(in), out);
  WEFT_CHECK(k.ok() && *k, "gemm_bench: no kernel");
  return std::move(*k);
}

void gemm_figures(ThreadPool& pool) {
  const std::vector<GemmShape> shapes = {
      {"mlp fwd  x1 = x·W1", 128, 256, 784, false, false},
      {"mlp fwd  x2 = h1·W2", 128, 256, 256, false, false},
      {"mlp fwd  y = h2·W3", 128, 10, 256, false, false},
      {"mlp bwd  gW1 = xT·g", 784, 256, 128, true, false},
      {"mlp bwd  gW2 = h1T·g", 256, 256, 128, true, false},
      {"mlp bwd  gh1 = g·W2T", 128, 256, 256, false, true},
      {"mlp bwd  gh2 = g·W3T", 128, 256, 10, false, true},
      {"mlp bwd  gW3 = h2T·g", 256, 10, 128, true, false},
      {"suite mlp fwd x·W (NN)", 64, 512, 512, false, false},
      {"suite mlp fwd x·Wt (NT)", 64, 512, 512, false, true},
      {"suite mlp bwd gWt = xT·g (TN)", 512, 512, 64, true, false},
      {"xf  qkv = x·Wqkv", 256, 384, 128, false, false},
      {"xf  s = q·kT", 256, 256, 128, false, true},
      {"xf  o = p·v", 256, 128, 256, false, false},
      {"xf  ffn1 = x·W1", 256, 512, 128, false, false},
      {"xf  ffn2 = h·W2", 256, 128, 512, false, false},
  };
  struct Row {
    double weft, openblas, onednn;
  };
  std::vector<Row> rows(shapes.size());
  std::vector<std::vector<float>> as, bs, cs;
  for (const GemmShape& s : shapes) {
    as.push_back(bench::random_floats(s.m * s.k, 1));
    bs.push_back(bench::random_floats(s.k * s.n, 2));
    cs.push_back(std::vector<float>(s.m * s.n));
  }
  // weft: the bound matmul kernel for plain products, the same GEMM core for transposes.
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    const double flops = 2.0 * s.m * s.n * s.k;
    if (!s.ta && !s.tb) {
      auto k = bind(Op::Matmul, {}, {{DType::f32, {s.m, s.k}}, {DType::f32, {s.k, s.n}}},
                    {DType::f32, {s.m, s.n}}, {as[i].data(), bs[i].data()}, cs[i].data());
      rows[i].weft = flops / bench::seconds_per_call([&] { (void)k->run(pool); }) * 1e-9;
    } else {
      const GemmPlan plan = GemmPlan::single(s.m, s.n, s.k, s.ta, s.tb);
      rows[i].weft = flops / bench::seconds_per_call([&] {
        run_gemm<float>(pool, plan, as[i].data(), bs[i].data(), cs[i].data());
      }) * 1e-9;
    }
  }
  // OpenBLAS, one thread per chunk, cut over the rows as weft cuts them.
  openblas_set_num_threads(1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    rows[i].openblas = 2.0 * s.m * s.n * s.k / bench::seconds_per_call([&] {
      pool.parallel_for(s.m, 1, [&](int64_t r0, int64_t r1) {
        cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                    s.tb ? CblasTrans : CblasNoTrans, r1 - r0, s.n, s.k, 1.0f,
                    as[i].data() + (s.ta ? r0 : r0 * lda), lda, bs[i].data(), ldb, 0.0f,
                    cs[i].data() + r0 * s.n, s.n);
      });
    }) * 1e-9;
  }
  // oneDNN's own threading: 2 OpenMP threads on the calling thread.
  omp_set_num_threads(2);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    rows[i].onednn = 2.0 * s.m * s.n * s.k / bench::seconds_per_call([&] {
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, as[i].data(), lda,
                 bs[i].data(), ldb, 0.0f, cs[i].data(), s.n);
    }) * 1e-9;
  }
  use_one_omp_thread();
  std::printf("GEMM, GFLOP/s (2 threads; FP32 peak 232)\n");
  std::printf("%-22s %16s %8s %14s %12s\n", "shape", "MxNxK", "weft", "pool+openblas",
              "onednn omp2");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    char dims[64];
    std::snprintf(dims, sizeof dims, "%ldx%ldx%ld%s", static_cast<long>(s.m),
                  static_cast<long>(s.n), static_cast<long>(s.k),
                  s.ta ? " T." : (s.tb ? " .T" : ""));
    std::printf("%-22s %16s %8.1f %14.1f %12.1f\n", s.what, dims, rows[i].weft,
                rows[i].openblas, rows[i].onednn);
  }
}

void conv_figures(ThreadPool& pool) {
  struct ConvShape {
    const char* what;
    Shape x, w;
  };
  const std::vector<ConvShape> shapes = {
      {"conv1 1->32 3x3 on [64,1,28,28]", {64, 1, 28, 28}, {32, 1, 3, 3}},
      {"conv2 32->64 3x3 on [64,32,14,14]", {64, 32, 14, 14}, {64, 32, 3, 3}},
      {"convnet 3->16 3x3 on [32,3,32,32]", {32, 3, 32, 32}, {16, 3, 3, 3}},
      {"convnet 16->32 3x3 on [32,16,16,16]", {32, 16, 16, 16}, {32, 16, 3, 3}},
  };
  std::printf("conv, pad 1 (2 threads): weft's choice | oneDNN primitives per chunk | "
              "im2col + sgemm\n");
  for (const ConvShape& s : shapes) {
    const Shape y{s.x[0], s.w[0], s.x[2], s.x[3]};
    const Type tx{DType::f32, s.x}, tw{DType::f32, s.w}, ty{DType::f32, y};
    std::vector<float> x = bench::random_floats(tx.numel(), 1), w = bench::random_floats(tw.numel(), 2);
    std::vector<float> gy = bench::random_floats(ty.numel(), 3), out(std::max(tx.numel(), ty.numel()));
    std::vector<float> gw(tw.numel());
    const Attrs attrs = {{"padding", IntList{1, 1}}};
    Attrs bi = attrs, bw = attrs;
    bi["input_shape"] = s.x.dims;
    bw["weight_shape"] = s.w.dims;
    const double flops = 2.0 * ty.numel() * s.w[1] * s.w[2] * s.w[3];
    struct Kernel {
      const char* name;
      std::unique_ptr<BoundKernel> k;
    };
    Kernel ks[] = {
        {"forward", bind(Op::Conv, attrs, {tx, tw}, ty, {x.data(), w.data()}, out.data())},
        {"backward_input",
         bind(Op::ConvBackwardInput, bi, {ty, tw}, tx, {gy.data(), w.data()}, out.data())},
        {"backward_weight",
         bind(Op::ConvBackwardWeight, bw, {tx, ty}, tw, {x.data(), gy.data()}, gw.data())},
    };
    // The same convolutions through im2col + sgemm, the alternative to oneDNN's primitives.
    const ConvGeometry g{.n = s.x[0], .c = s.x[1], .h = s.x[2], .w = s.x[3], .o = s.w[0],
                       .kh = s.w[2], .kw = s.w[3], .oh = s.x[2], .ow = s.x[3], .ph = 1,
                       .pw = 1};
    std::unique_ptr<BoundKernel> im2col[] = {
        make_im2col_conv_kernel(ConvOp::kForward, g, DType::f32, x.data(), w.data(), out.data()),
        make_im2col_conv_kernel(ConvOp::kBackwardInput, g, DType::f32, gy.data(), w.data(),
                                out.data()),
        make_im2col_conv_kernel(ConvOp::kBackwardWeight, g, DType::f32, x.data(), gy.data(),
                                gw.data()),
    };
    std::unique_ptr<BoundKernel> onednn[] = {
        make_onednn_conv_kernel(ConvOp::kForward, g, DType::f32, x.data(), w.data(), out.data()),
        make_onednn_conv_kernel(ConvOp::kBackwardInput, g, DType::f32, gy.data(), w.data(), out.data()),
        make_onednn_conv_kernel(ConvOp::kBackwardWeight, g, DType::f32, x.data(), gy.data(), gw.data()),
    };
    for (int i = 0; i < 3; ++i) {
      const double t = bench::seconds_per_call([&] { (void)ks[i].k->run(pool); });
      const double t1 = onednn[i] ? bench::seconds_per_call([&] { (void)onednn[i]->run(pool); }) : 0;
      const double t2 = bench::seconds_per_call([&] { (void)im2col[i]->run(pool); });
      std::printf("  %-36s %-16s %7.3f ms | onednn %7.3f ms | im2col %7.3f ms"
                  "  (%6.1f GFLOP/s; %s)\n",
                  s.what, ks[i].name, t * 1e3, t1 * 1e3, t2 * 1e3, flops / t * 1e-9,
                  ks[i].k->describe().c_str());
    }
  }
}

}  // namespace
}  // namespace weft::cpu

int main(int, char** argv) {
  // OpenBLAS, the peer, without the machines' OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE.
  weft::cpu::restart_without_openblas_handicap(argv);
  std::printf("OpenBLAS core: %s (without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE)\n",
              openblas_get_corename());
  weft::cpu::ThreadPool pool(2);
  weft::cpu::conv_figures(pool);
  weft::cpu::gemm_figures(pool);
  return 0;
}

// The CPU library kernels in f16 and bf16 against the reference interpreter (which
// widens to f32, computes and rounds to nearest even): bf16 matmuls and convolutions on
// oneDNN's bf16 primitives with f32 accumulation where the CPU has AVX512_BF16, everything
// else through f32 (half.cc); both within 1 unit in the last place of the half result.
// Also: every call here has a kernel and cpu_library_gap agrees (no half gaps remain for
// these ops), and movement and creation stay bit copies.

#include <gtest/gtest.h>

#include <string>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {
namespace half_test {  // this file's names, apart in its package's unity test

using testing::random_tensor;
using testing::run_both;

constexpr DType kHalves[] = {DType::f16, DType::bf16};

// Sums (a matmul's or convolution's dot products, K up to 1024) that cancel to near zero:
// the f32 kernels' summation order alone — f32 in f32 too — moves them by more than their
// half ulp (seen: 24 bf16 ulps at -7e-6), so near zero the bound is absolute instead; the
// outputs are of order 1 to 30, where 1e-4 is under a tenth of an f16 ulp.
constexpr double kCancelled = 1e-4;

// Runs `op` on 1 and 2 threads: a kernel exists, no gap is stated, the result is within
// `max_ulps` (or `abs_tol`) of the reference (a half result) or `tol` (any other). Returns
// the kernel's describe().
std::string expect_half_matches(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                                int64_t max_ulps = 1, double abs_tol = kCancelled,
                                double tol = 1e-5) {
  std::string description;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::string(op_name(op)) + " on " + std::to_string(threads) + " threads, " +
                 inputs[0].type().to_string());
    const testing::Comparison c = run_both(op, attrs, inputs, threads);
    EXPECT_TRUE(c.reference_status.ok()) << c.reference_status.to_string();
    EXPECT_TRUE(c.has_kernel) << c.cpu_status.to_string();
    EXPECT_FALSE(c.gap.has_value()) << *c.gap;
    EXPECT_TRUE(c.cpu_status.ok()) << c.cpu_status.to_string();
    if (!c.has_kernel || !c.cpu_status.ok() || !c.reference_status.ok()) continue;
    if (is_half(c.reference.dtype())) {
      std::string why;
      EXPECT_TRUE(testing::within_ulps(c.cpu, c.reference, max_ulps, abs_tol, &why)) << why;
    } else {
      std::string why;
      EXPECT_TRUE(all_close(c.cpu, c.reference, tol, &why)) << why;
    }
    description = c.description;
  }
  return description;
}

Tensor rnd(DType dtype, Shape shape, unsigned seed, double lo = -1, double hi = 1) {
  return random_tensor(Type{dtype, std::move(shape)}, seed, lo, hi);
}

// bf16 runs on oneDNN's bf16 matmul where the CPU has AVX512_BF16, f16 through f32.
void expect_path(DType dtype, const std::string& description, const std::string& native) {
  if (dtype == DType::bf16 && native_bf16()) {
    EXPECT_NE(description.find(native), std::string::npos) << description;
  } else {
    EXPECT_EQ(description.rfind("via f32 (converted): ", 0), 0u) << description;
  }
}

TEST(HalfMatmulTest, WithinOneUlpOfTheReference) {
  struct Case {
    Shape a, b;
    bool ta = false, tb = false;
  };
  const std::vector<Case> cases = {
      {{7, 13}, {13, 5}},          {{128, 784}, {784, 256}},  {{64, 1024}, {1024, 96}},
      {{1, 300}, {300, 200}},      {{3, 7, 13}, {13, 5}},     {{3, 7, 13}, {3, 13, 5}},
      {{2, 1, 4, 6}, {3, 6, 5}},   {{5, 13}, {2, 13, 40}},    {{13, 7}, {13, 5}, true, false},
      {{7, 13}, {5, 13}, false, true}, {{1024, 33}, {1024, 20}, true, false},
      {{3, 7, 130}, {3, 50, 130}, false, true}, {{0, 4}, {4, 3}}, {{4, 0}, {0, 3}},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    for (DType dt : kHalves) {
      SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
      Attrs attrs;
      if (c.ta) attrs["transpose_a"] = true;
      if (c.tb) attrs["transpose_b"] = true;
      const std::string d =
          expect_half_matches(Op::Matmul, attrs, {rnd(dt, c.a, seed), rnd(dt, c.b, seed + 1)});
      if (c.a.numel() > 0 && c.b.numel() > 0) expect_path(dt, d, "onednn bf16 matmul");
      seed += 2;
    }
  }
}

// A weight gradient's transposed A over a short K (a batch of rows) is copied dense per
// part and multiplied by oneDNN's brgemm, which declines the strided row blocks of a
// transposed A (matmul_onednn.cc); a long K reads A in place.
TEST(HalfMatmulTest, TransposedAOverAShortKIsCopiedDense) {
  struct Case {
    Shape a, b;
    bool dense;
  };
  const std::vector<Case> cases = {
      {{64, 512}, {64, 300}, true}, {{128, 70}, {128, 40}, true}, {{200, 96}, {200, 64}, false}};
  unsigned seed = 11;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.to_string() + "^T x " + c.b.to_string());
    const std::string d = expect_half_matches(Op::Matmul, {{"transpose_a", true}},
                                              {rnd(DType::bf16, c.a, seed), rnd(DType::bf16, c.b, seed + 1)});
    seed += 2;
    if (!native_bf16()) continue;
    EXPECT_EQ(d.find("(A copied dense)") != std::string::npos, c.dense) << d;
    if (c.dense) {
      EXPECT_NE(d.find("brg:"), std::string::npos) << d;
    }
  }
}

TEST(HalfMatmulTest, BitwiseReproducible) {
  for (DType dt : kHalves) {
    for (int threads : {1, 2}) {
      const std::vector<Tensor> in = {rnd(dt, {96, 512}, 3), rnd(dt, {512, 200}, 4)};
      EXPECT_TRUE(run_both(Op::Matmul, {}, in, threads).cpu == run_both(Op::Matmul, {}, in, threads).cpu);
    }
  }
}

// A bf16 matmul whose result type is f32 (the node's result type decides): oneDNN writes
// its f32 accumulator unrounded, as the f32 matmul of the same (bf16-exact) values.
TEST(HalfMatmulTest, Bf16OperandsWithAnF32Result) {
  const Tensor a = rnd(DType::bf16, {33, 1024}, 7), b = rnd(DType::bf16, {1024, 70}, 8);
  auto as_f32 = [](const Tensor& t) {
    Tensor u(Type{DType::f32, t.type().shape});
    for (int64_t i = 0; i < t.numel(); ++i) u.set_double(i, t.get_double(i));
    return u;
  };
  const testing::Comparison want = run_both(Op::Matmul, {}, {as_f32(a), as_f32(b)});
  ASSERT_TRUE(want.reference_status.ok());
  LibraryCall call;
  call.node.op = Op::Matmul;
  call.operand_types = {a.type(), b.type()};
  call.result_type = want.reference.type();
  EXPECT_FALSE(cpu_library_gap(call).has_value());
  for (bool forced : {false, true}) {
    force_bf16_conversion_for_testing(forced);
    Tensor got(want.reference.type());
    auto kernel = make_library_kernel(call, {a.raw_data(), b.raw_data()}, got.raw_data());
    ASSERT_TRUE(kernel.ok() && *kernel);
    ThreadPool pool(2);
    ASSERT_TRUE((*kernel)->run(pool).ok());
    std::string why;
    EXPECT_TRUE(all_close(got, want.reference, 1e-5, &why)) << (*kernel)->describe() << ": " << why;
  }
  force_bf16_conversion_for_testing(false);
}

Attrs conv_attrs(IntList stride, IntList padding, IntList dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

struct ConvCase {
  Shape x, w, y;
  Attrs attrs;
};

// The suite's convnet layers (3->16 RGB input, 16->32), a grouped strided one, and a 1-D one.
std::vector<ConvCase> conv_cases() {
  return {
      {{4, 3, 16, 16}, {16, 3, 3, 3}, {4, 16, 16, 16}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)},
      {{3, 16, 8, 8}, {32, 16, 3, 3}, {3, 32, 8, 8}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1)},
      {{2, 32, 9, 10}, {32, 16, 3, 3}, {2, 32, 5, 5}, conv_attrs({2, 2}, {1, 1}, {1, 1}, 2)},
      {{2, 16, 12}, {16, 16, 3}, {2, 16, 12}, conv_attrs({1}, {1}, {1}, 1)},
  };
}

TEST(HalfConvTest, ForwardAndGradientsWithinOneUlp) {
  unsigned seed = 10;
  for (const ConvCase& c : conv_cases()) {
    for (DType dt : kHalves) {
      SCOPED_TRACE(c.x.to_string() + " * " + c.w.to_string());
      const Tensor x = rnd(dt, c.x, seed), w = rnd(dt, c.w, seed + 1), gy = rnd(dt, c.y, seed + 2);
      Attrs bi = c.attrs, bw = c.attrs;
      bi["input_shape"] = c.x.dims;
      bw["weight_shape"] = c.w.dims;
      expect_path(dt, expect_half_matches(Op::Conv, c.attrs, {x, w}), "onednn bf16 conv");
      expect_path(dt, expect_half_matches(Op::ConvBackwardInput, bi, {gy, w}), "onednn bf16");
      expect_path(dt, expect_half_matches(Op::ConvBackwardWeight, bw, {x, gy}), "onednn bf16");
      seed += 3;
    }
  }
}

// The f32 pooling kernels are bitwise the reference's, so through f32 the half results
// must be too: the conversions (vectorized for f16) round exactly as the interpreter's.
TEST(HalfPoolTest, AllOpsExact) {
  const Attrs attrs = {{"kernel", IntList{3, 3}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}};
  Attrs avg_back = attrs;
  avg_back["input_shape"] = IntList{2, 3, 9, 11};
  for (DType dt : kHalves) {
    const Tensor x = rnd(dt, {2, 3, 9, 11}, 20, -3, 3), gy = rnd(dt, {2, 3, 5, 6}, 21, -1e-4, 1e-4);
    const Tensor g = rnd(dt, {2, 3, 9, 11}, 22);
    expect_half_matches(Op::MaxPool2d, attrs, {x}, 0, 0);
    expect_half_matches(Op::AvgPool2d, attrs, {x}, 0, 0);
    expect_half_matches(Op::MaxPool2dBackward, attrs, {x, gy}, 0, 0);
    expect_half_matches(Op::AvgPool2dBackward, avg_back, {gy}, 0, 0);
    expect_half_matches(Op::MaxPool2dSelect, attrs, {x, g}, 0, 0);
  }
}

TEST(HalfReductionTest, AccumulateInF32AndRoundOnce) {
  unsigned seed = 30;
  for (DType dt : kHalves) {
    for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min}) {
      for (const IntList& axes : {IntList{1}, IntList{0}, IntList{0, 1}}) {
        // 4096 terms: a sum in half steps would be off by far more than one ulp.
        const Tensor x = rnd(dt, {64, 4096}, seed++, -2, 3);
        expect_half_matches(op, {{"axes", axes}, {"keepdims", false}}, {x});
      }
    }
    expect_half_matches(Op::Argmax, {{"axis", int64_t{1}}}, {rnd(dt, {32, 1000}, seed++)});
  }
}

TEST(HalfCompositeTest, SoftmaxLayerNormLosses) {
  unsigned seed = 50;
  for (DType dt : kHalves) {
    expect_half_matches(Op::Softmax, {{"axis", int64_t{-1}}}, {rnd(dt, {128, 10}, seed++, -8, 8)});
    expect_half_matches(Op::LogSoftmax, {{"axis", int64_t{1}}}, {rnd(dt, {64, 1000}, seed++, -8, 8)});
    expect_half_matches(Op::LayerNorm, {{"axes", IntList{-1}}, {"eps", 1e-5}},
                        {rnd(dt, {16, 512}, seed), rnd(dt, {512}, seed + 1), rnd(dt, {512}, seed + 2)});
    seed += 3;
    const Tensor labels = rnd(DType::i64, {128}, seed++, 0, 10);
    for (const char* reduction : {"mean", "sum", "none"}) {
      expect_half_matches(Op::CrossEntropy, {{"reduction", std::string(reduction)}},
                          {rnd(dt, {128, 10}, seed++, -4, 4), labels});
      expect_half_matches(Op::Mse, {{"reduction", std::string(reduction)}},
                          {rnd(dt, {64, 33}, seed), rnd(dt, {64, 33}, seed + 1)});
      seed += 2;
    }
  }
}

TEST(HalfIndexingTest, ScatterAddAccumulatesInF32) {
  for (DType dt : kHalves) {
    const Tensor base = rnd(dt, {5, 300}, 70), src = rnd(dt, {7, 300}, 71);
    const Tensor idx = Tensor::from_vector<int64_t>(Shape{7}, {1, 3, 1, 0, 1, 3, 2});
    expect_half_matches(Op::ScatterAdd, {{"axis", int64_t{0}}}, {base, idx, src});
  }
}

// Movement and creation copy or set bits: exact, whatever the dtype.
TEST(HalfMovementTest, BitExact) {
  for (DType dt : kHalves) {
    const Tensor x = rnd(dt, {33, 70}, 80);
    expect_half_matches(Op::Transpose, {{"perm", IntList{1, 0}}}, {x}, 0, 0);
    expect_half_matches(Op::Concat, {{"axis", int64_t{1}}}, {x, rnd(dt, {33, 5}, 81)}, 0, 0);
    expect_half_matches(Op::Gather, {{"axis", int64_t{0}}},
                        {x, Tensor::from_vector<int64_t>(Shape{3}, {32, 0, 7})}, 0, 0);
  }
}

// Which library calls take the conversion path is the op table's half rule (ir/op.h),
// the one the reference interpreter follows: every op with a half operand or result,
// Widen ops through f32, Exact ones (bit copies, select, cast, bodies) never; no half
// value, never.
TEST(HalfRuleTest, ComputesWidenedReadsTheOpTable) {
  const Type half{DType::bf16, Shape{{4}}}, f16{DType::f16, Shape{{4}}}, wide{DType::f32, Shape{{4}}};
  for (Op op : all_ops()) {
    SCOPED_TRACE(std::string(op_name(op)));
    Node node;
    node.op = op;
    EXPECT_EQ(computes_widened(LibraryCall{node, {half}, half}), computes_half_in_f32(op));
    EXPECT_EQ(computes_widened(LibraryCall{node, {f16}, wide}), computes_half_in_f32(op));
    EXPECT_EQ(computes_widened(LibraryCall{node, {wide}, half}), computes_half_in_f32(op));
    EXPECT_FALSE(computes_widened(LibraryCall{node, {wide}, wide}));
  }
  EXPECT_FALSE(computes_half_in_f32(Op::Select));
  EXPECT_TRUE(computes_half_in_f32(Op::Matmul));
}

// The conversion path keeps its f32 copies in the kernel's scratch: two kernels given one
// block, as the Executor does, run one after the other and both stay right.
TEST(HalfConversionScratchTest, KernelsShareOneScratchBlock) {
  const Tensor a = rnd(DType::f16, {40, 300}, 60), b = rnd(DType::f16, {300, 50}, 61);
  const Tensor x = rnd(DType::f16, {64, 700}, 62);
  const testing::Comparison mm = run_both(Op::Matmul, {}, {a, b});
  const testing::Comparison sum = run_both(Op::Sum, {{"axes", IntList{1}}}, {x});
  ASSERT_TRUE(mm.reference_status.ok() && sum.reference_status.ok());
  auto bind = [](Op op, const Attrs& attrs, const std::vector<const Tensor*>& in,
                 Tensor& out) -> std::unique_ptr<BoundKernel> {
    LibraryCall call;
    call.node.op = op;
    call.node.attrs = attrs;
    std::vector<const void*> ptrs;
    for (const Tensor* t : in) {
      call.operand_types.push_back(t->type());
      ptrs.push_back(t->raw_data());
    }
    call.result_type = out.type();
    StatusOr<std::unique_ptr<BoundKernel>> k = make_library_kernel(call, ptrs, out.raw_data());
    return k.ok() ? std::move(*k) : nullptr;
  };
  Tensor mm_out(mm.reference.type()), sum_out(sum.reference.type());
  std::unique_ptr<BoundKernel> k1 = bind(Op::Matmul, {}, {&a, &b}, mm_out);
  std::unique_ptr<BoundKernel> k2 = bind(Op::Sum, {{"axes", IntList{1}}}, {&x}, sum_out);
  ASSERT_TRUE(k1 && k2);
  EXPECT_GE(k1->scratch_bytes(), (40 * 300 + 300 * 50 + 40 * 50) * 4);  // The f32 copies.
  EXPECT_GE(k2->scratch_bytes(), (64 * 700 + 64) * 4);
  Tensor block(Type{DType::f32, {(std::max(k1->scratch_bytes(), k2->scratch_bytes()) + 3) / 4}});
  k1->set_scratch(static_cast<std::byte*>(block.raw_data()));
  k2->set_scratch(static_cast<std::byte*>(block.raw_data()));
  ThreadPool pool(2);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(k1->run(pool).ok());
    ASSERT_TRUE(k2->run(pool).ok());
    std::string why;
    EXPECT_TRUE(testing::within_ulps(mm_out, mm.reference, 1, kCancelled, &why)) << why;
    EXPECT_TRUE(testing::within_ulps(sum_out, sum.reference, 1, kCancelled, &why)) << why;
  }
}

// A GeneratedFn epilogue as codegen would emit for relu(C + bias) over bf16 rows of
// kEpilogueN: buffers {C, bias, out}, f32 math rounded once per op.
constexpr int64_t kEpilogueN = 48;

float bf16_relu_of_sum(uint16_t c, uint16_t bias) {
  const float sum = bf16_to_float(float_to_bf16(bf16_to_float(c) + bf16_to_float(bias)));
  return sum > 0 ? sum : 0.0f;
}

void bias_relu_bf16(void* const* buffers, int64_t row_begin, int64_t row_end) {
  const auto* c = static_cast<const uint16_t*>(buffers[0]);
  const auto* bias = static_cast<const uint16_t*>(buffers[1]);
  auto* out = static_cast<uint16_t*>(buffers[2]);
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t j = 0; j < kEpilogueN; ++j) {
      out[r * kEpilogueN + j] = float_to_bf16(bf16_relu_of_sum(c[r * kEpilogueN + j], bias[j]));
    }
  }
}

// make_gemm_epilogue_kernel in bf16, natively and forced through f32: the matmul, then the
// epilogue on C, as the interpreter's matmul followed by the same epilogue.
TEST(HalfGemmEpilogueTest, Bf16MatmulThenEpilogue) {
  const Tensor a = rnd(DType::bf16, {70, 256}, 90), b = rnd(DType::bf16, {256, kEpilogueN}, 91);
  const Tensor bias = rnd(DType::bf16, {kEpilogueN}, 92);
  const testing::Comparison matmul = run_both(Op::Matmul, {}, {a, b});
  ASSERT_TRUE(matmul.reference_status.ok());
  Tensor want(matmul.reference.type());
  for (int64_t i = 0; i < want.numel(); ++i) {
    want.data<uint16_t>()[i] = float_to_bf16(
        bf16_relu_of_sum(matmul.reference.data<uint16_t>()[i], bias.data<uint16_t>()[i % kEpilogueN]));
  }
  LibraryCall gemm;
  gemm.node.op = Op::Matmul;
  gemm.operand_types = {a.type(), b.type()};
  gemm.result_type = want.type();
  ASSERT_TRUE(supports_gemm_epilogue(gemm));
  for (bool forced : {false, true}) {
    force_bf16_conversion_for_testing(forced);
    Tensor c(want.type()), out(want.type());
    auto kernel = make_gemm_epilogue_kernel(gemm, a.raw_data(), b.raw_data(), c.raw_data(),
                                            bias_relu_bf16, {c.raw_data(), const_cast<void*>(bias.raw_data()), out.raw_data()},
                                            70, kEpilogueN, "bias_relu");
    ASSERT_TRUE(kernel.ok() && *kernel);
    const std::string d = (*kernel)->describe();
    EXPECT_TRUE(d.find("70x48x256") != std::string::npos && d.ends_with(" + bias_relu")) << d;
    ThreadPool pool(2);
    ASSERT_TRUE((*kernel)->run(pool).ok());
    std::string why;
    EXPECT_TRUE(testing::within_ulps(c, matmul.reference, 1, kCancelled, &why)) << why;
    EXPECT_TRUE(testing::within_ulps(out, want, 1, kCancelled, &why)) << why;
  }
  force_bf16_conversion_for_testing(false);
}

}  // namespace half_test
}  // namespace
}  // namespace weft::cpu

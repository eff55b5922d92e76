// Which contractions of Programs lowered for the GPU cuBLASLt runs with its own epilogue
// (runtime/cuda/epilogue_match.h, #31/#30): no GPU needed. Each graph is lowered with the
// CUDA options, as tests/cuda's cases are, and every contraction invocation is asked.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "codegen/cuda_program.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/ab_switch.h"
#include "runtime/cuda/epilogue_match.h"
#include "runtime/cuda/plan.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft {
namespace {

// One line per contraction invocation of `program`: "EPILOGUE" or "refused: WHY".
std::vector<std::string> decisions(const Program& program) {
  std::vector<std::string> out;
  for (const Invocation& inv : program.code) {
    if (inv.kind != Invocation::Kind::contraction) continue;
    cuda::MatmulPlan plan;
    StatusOr<bool> planned = cuda::plan_matmul(inv.node, inv.operands[0].type, inv.operands[1].type, plan);
    if (!planned.ok() || !*planned) {
      out.push_back("not planned");
      continue;
    }
    const cuda::LtEpilogueDecision d =
        cuda::match_lt_epilogue(inv, program.kernels[static_cast<size_t>(inv.kernel)].body, plan);
    out.push_back(d.match ? cuda::lt_epilogue_name(d.match->epilogue) : "refused: " + d.refused);
    if (d.match) {
      EXPECT_EQ(d.match->bias_operand, 2);
    }
  }
  return out;
}

// The decisions for the graph `inputs` -> `body` returning `outs`, lowered for the GPU.
std::vector<std::string> lowered(const std::string& inputs, const std::string& body, const std::string& outs) {
  StatusOr<Graph> g = parse_graph("graph @g(" + inputs + ") {\n" + body + "  return " + outs + "\n}\n", "test");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  if (!g.ok()) return {"parse error"};
  InferTypesPass infer;
  StatusOr<bool> typed = infer.run(*g);
  EXPECT_TRUE(typed.ok()) << typed.error().to_string();
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(std::move(*g), codegen::cuda_lower_options());
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return {"lower error"};
  return decisions(l->program);
}

using Lines = std::vector<std::string>;

std::string linear(const std::string& t) {
  return "%x: " + t + "[32,48], %w: " + t + "[48,24], %b: " + t + "[24]";
}

TEST(CublasLtMatch, BiasReluAndTanhGeluMatchInF32AndTheHalves) {
  for (const std::string t : {"f32", "bf16", "f16"}) {
    const std::string mm = "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n";
    EXPECT_EQ(lowered(linear(t), mm, "%s"), Lines{"bias"}) << t;
    EXPECT_EQ(lowered(linear(t), mm + "  %y = relu(%s)\n", "%y"), Lines{"relu_bias"}) << t;
    EXPECT_EQ(lowered(linear(t), mm + "  %y = gelu(%s) {approximate=\"tanh\"}\n", "%y"), Lines{"gelu_bias"}) << t;
    // The bias first, and a transposed weight (a Linear's [out, in]).
    EXPECT_EQ(lowered("%x: " + t + "[32,48], %w: " + t + "[24,48], %b: " + t + "[24]",
                      "  %m = matmul(%x, %w) {transpose_b=true}\n  %s = add(%b, %m)\n  %y = relu(%s)\n", "%y"),
              Lines{"relu_bias"})
        << t;
  }
}

TEST(CublasLtMatch, ErfGeluIsRefused) {
  EXPECT_EQ(lowered(linear("f32"), "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %y = gelu(%s)\n", "%y"),
            Lines{"refused: gelu with approximate=\"none\" (erf): cuBLASLt's GELU is the tanh approximation"});
}

TEST(CublasLtMatch, BatchedContractionsMatchAsOneCall) {
  // The batch folds into the rows of one GEMM.
  EXPECT_EQ(lowered("%x: f32[4,16,48], %w: f32[48,24], %b: f32[24]",
                    "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %y = relu(%s)\n", "%y"),
            Lines{"relu_bias"});
  // One strided-batched call: the bias (batch stride 0) is every entry's.
  EXPECT_EQ(lowered("%x: bf16[3,16,48], %w: bf16[3,48,24], %b: bf16[24]",
                    "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %y = gelu(%s) {approximate=\"tanh\"}\n", "%y"),
            Lines{"gelu_bias"});
  // Odd extents (cases_test's cublaslt_odd_strided_relu_bias_f16): still one call.
  EXPECT_EQ(lowered("%x: f16[3,5,7], %w: f16[3,7,9], %b: f16[9]",
                    "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %y = relu(%s)\n", "%y"),
            Lines{"relu_bias"});
  // A broadcast batch entry by entry (several calls).
  EXPECT_EQ(lowered("%x: f32[3,1,16,48], %w: f32[1,2,48,24], %b: f32[24]",
                    "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n", "%s"),
            Lines{"refused: the plan has 6 cuBLAS calls (a batch broadcast entry by entry): cuBLASLt takes one "
                  "strided batch"});
}

TEST(CublasLtMatch, OtherEpiloguesAreRefusedWithTheirReason) {
  const std::string mm = "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n";
  // A residual after the activation: a second operand.
  EXPECT_EQ(lowered(linear("f32") + ", %r: f32[32,24]", mm + "  %t = relu(%s)\n  %u = add(%t, %r)\n", "%u"),
            Lines{"refused: the epilogue reads 2 operands besides C: cuBLASLt's epilogues read one bias vector"});
  // The pre-activation read elsewhere (as a training step's backward reads it).
  EXPECT_EQ(lowered(linear("f32"), mm + "  %t = relu(%s)\n", "%t, %s"),
            Lines{"refused: the fused node has 2 results (values of the epilogue read elsewhere): cuBLASLt writes "
                  "one"});
  // Another activation.
  EXPECT_EQ(lowered(linear("f32"), mm + "  %t = tanh(%s)\n", "%t"),
            Lines{"refused: tanh after the bias: cuBLASLt's activations are relu and gelu (tanh)"});
  // A per-row (not per-column) vector.
  EXPECT_EQ(lowered("%x: f32[32,48], %w: f32[48,24], %c: f32[32,1]", "  %m = matmul(%x, %w)\n  %s = add(%m, %c)\n",
                    "%s"),
            Lines{"refused: the epilogue's operand f32[32,1] is not a bias of 24 elements broadcast along C's rows"});
  // A scale, not a bias.
  EXPECT_EQ(lowered(linear("f32"), "  %m = matmul(%x, %w)\n  %s = mul(%m, %b)\n", "%s"),
            Lines{"refused: the epilogue does not start with C + bias (it starts with mul)"});
  // f64 stays on cublasDgemm.
  EXPECT_EQ(lowered(linear("f64"), mm, "%s"),
            Lines{"refused: C is f64: cuBLASLt's epilogues are used for f32, f16 and bf16 only (f64 stays on "
                  "cublasDgemm)"});
}

// A product whose B has one row or one column stays on cuBLAS: cuBLASLt's heuristic answers
// INVALID_VALUE there (not "no algorithm"), which bind would report as an error.
TEST(CublasLtMatch, MatrixVectorProductsAreRefused) {
  const std::string mm = "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n";
  // A Linear to one feature (a regression head): N = 1.
  EXPECT_EQ(lowered("%x: f32[32,48], %w: f32[48,1], %b: f32[1]", mm, "%s"),
            Lines{"refused: B is 48 x 1 (N or K of 1): cuBLASLt's heuristic rejects a matrix-vector product"});
  EXPECT_EQ(lowered("%x: bf16[4,16,48], %w: bf16[48,1], %b: bf16[1]", mm + "  %y = relu(%s)\n", "%y"),
            Lines{"refused: B is 48 x 1 (N or K of 1): cuBLASLt's heuristic rejects a matrix-vector product"});
  // An outer product: K = 1.
  EXPECT_EQ(lowered("%x: f32[32,1], %w: f32[1,24], %b: f32[24]", mm, "%s"),
            Lines{"refused: B is 1 x 24 (N or K of 1): cuBLASLt's heuristic rejects a matrix-vector product"});
  // One row of A (M = 1) is a GEMM cuBLASLt takes.
  EXPECT_EQ(lowered("%x: f32[1,48], %w: f32[48,24], %b: f32[24]", mm, "%s"), Lines{"bias"});
}

// The alignment the heuristic is told: the first entry's address and, in a strided batch,
// the stride in bytes (cublaslt_odd_strided_* run such batches on the GPU).
TEST(CublasLtMatch, AStridedBatchIsAsAlignedAsItsLeastAlignedEntry) {
  const cuda::LtMatrix one{.rows = 24, .cols = 48, .ld = 24};
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001000, one, 2), 256u);
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001030, one, 2), 16u);
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001002, one, 2), 2u);
  // f16 [3,7,9]'s B: entries 63 elements (126 bytes) apart, the later ones 2-byte aligned.
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001000, {.rows = 9, .cols = 7, .ld = 9, .count = 3, .stride = 63}, 2), 2u);
  // f32 [3,16,48]'s A: 768 elements (3072 bytes) apart, every entry 256-byte aligned.
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001000, {.rows = 48, .cols = 16, .ld = 48, .count = 3, .stride = 768}, 4),
            256u);
  // bf16 entries 24 elements (48 bytes) apart: 16.
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001000, {.rows = 24, .cols = 1, .ld = 24, .count = 4, .stride = 24}, 2), 16u);
  // A matrix every entry shares (stride 0) is as aligned as its address.
  EXPECT_EQ(cuda::lt_alignment(0x7f0000001040, {.rows = 24, .cols = 48, .ld = 24, .count = 3, .stride = 0}, 4), 64u);
}

// A training step's Linear layers, in f32 and under bf16 autocast: the hidden layer's
// forward keeps its pre-activation for the backward (a second result: cuBLASLt's
// GELU_AUX_BIAS would be needed, not built); the logits' Linear is a bias epilogue; one
// backward GEMM keeps a longer epilogue (six operands besides C).
TEST(CublasLtMatch, ATrainingStepsLinearLayers) {
  for (const DType precision : {DType::f32, DType::bf16}) {
    StatusOr<FlowPtr> net =
        FlowBuilder::from(Linear(48, 32)).through(GELU(/*tanh_approximation=*/true)).through(Linear(32, 10)).build();
    ASSERT_TRUE(net.ok()) << net.error().to_string();
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", f32({16, 48})}}, LossSpec::cross_entropy(),
                                           OptimizerSpec::sgd(0.1),
                                           {.seed = 1, .backend = "reference", .precision = precision});
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    StatusOr<codegen::Lowering> l = codegen::lower_to_program(t->step_graph(), codegen::cuda_lower_options());
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    EXPECT_EQ(decisions(l->program),
              (Lines{"refused: the fused node has 2 results (values of the epilogue read elsewhere): cuBLASLt "
                     "writes one",
                     "bias", "refused: the epilogue reads 6 operands besides C: cuBLASLt's epilogues read one bias "
                     "vector"}))
        << dtype_name(precision);
  }
}

// A cast other than the lowering's widening and final rounding, on a hand-made body (the
// lowering does not leave one there today).
TEST(CublasLtMatch, AnOddCastIsRefused) {
  StatusOr<Graph> body = parse_graph(
      "graph @epilogue(%c: bf16[32,24], %b: bf16[24]) {\n"
      "  %0 = cast(%c) {dtype=f32}\n  %1 = cast(%b) {dtype=f32}\n  %2 = add(%0, %1)\n"
      "  %3 = cast(%2) {dtype=f16}\n  %4 = cast(%3) {dtype=bf16}\n  return %4\n}\n",
      "test");
  ASSERT_TRUE(body.ok()) << body.error().to_string();
  InferTypesPass infer;
  ASSERT_TRUE(infer.run(*body).ok());
  Invocation inv;
  inv.kind = Invocation::Kind::contraction;
  inv.node.op = Op::Matmul;
  const auto buffer = [](DType d, Shape s) {
    BufferRef r;
    r.type = Type{d, std::move(s)};
    return r;
  };
  inv.operands = {buffer(DType::bf16, {32, 48}), buffer(DType::bf16, {48, 24}), buffer(DType::bf16, {24})};
  inv.results = {buffer(DType::bf16, {32, 24})};
  cuda::MatmulPlan plan;
  StatusOr<bool> planned = cuda::plan_matmul(inv.node, inv.operands[0].type, inv.operands[1].type, plan);
  ASSERT_TRUE(planned.ok() && *planned);
  const cuda::LtEpilogueDecision d = cuda::match_lt_epilogue(inv, *body, plan);
  EXPECT_FALSE(d.match);
  EXPECT_EQ(d.refused, "a cast from f32 to f16 in the epilogue: cuBLASLt rounds once, from f32 to C's dtype");
}

// cuBLASLt's column-major semantics with an epilogue, on the host: for each batch entry e,
// D(i, j) = act(Σ_p op(first)(i, p)·op(second)(p, j) + bias[i]), each matrix read through
// its LtMatrix (stored rows x cols, leading dimension ld, count x stride) and its op, every
// index checked against the matrix and the buffer.
std::vector<double> emulate_lt(const cuda::CublasGemm& g, cuda::LtEpilogue epilogue, const std::vector<double>& a,
                               const std::vector<double>& b, const std::vector<double>& bias, size_t c_size) {
  const cuda::LtLayouts l = cuda::lt_layouts(g);
  std::vector<double> c(c_size, NAN);
  // Element (r, q) of `m`'s entry e in `buffer` from `offset`: r < rows, q < cols.
  const auto at = [](const cuda::LtMatrix& m, const std::vector<double>& buffer, int64_t offset, int64_t e,
                     int64_t r, int64_t q) {
    EXPECT_TRUE(r < m.rows && q < m.cols && m.ld >= m.rows);
    const int64_t index = offset + e * m.stride + r + q * m.ld;
    EXPECT_LT(index, static_cast<int64_t>(buffer.size()));
    return buffer[static_cast<size_t>(index)];
  };
  EXPECT_EQ(static_cast<int64_t>(bias.size()), g.m);  // one bias element per row of D
  for (int64_t e = 0; e < g.count; ++e) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double f = g.trans_first ? at(l.first, b, g.first_offset, e, p, i) : at(l.first, b, g.first_offset, e, i, p);
          const double s = g.trans_second ? at(l.second, a, g.second_offset, e, j, p)
                                          : at(l.second, a, g.second_offset, e, p, j);
          sum += f * s;
        }
        double v = sum + bias[static_cast<size_t>(i)];
        if (epilogue == cuda::LtEpilogue::relu_bias) v = std::max(v, 0.0);
        if (epilogue == cuda::LtEpilogue::gelu_bias) {
          v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
        EXPECT_TRUE(i < l.c.rows && j < l.c.cols && l.c.ld >= l.c.rows);
        const int64_t index = g.c_offset + e * l.c.stride + i + j * l.c.ld;
        EXPECT_LT(index, static_cast<int64_t>(c_size));
        if (index < static_cast<int64_t>(c_size)) c[static_cast<size_t>(index)] = v;
      }
    }
  }
  return c;
}

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = t.get_double(static_cast<int64_t>(i));
  return out;
}

// The matched contraction of `inputs` -> `body` (f32), lowered for the GPU, computed by
// emulate_lt on its plan's one call and layouts, against the reference interpreter: the
// row-major mapping (bias per row of cuBLASLt's D = per column of weft's C) and the
// layouts, transposed and batched.
void expect_lt_matches_reference(const std::string& inputs, const std::string& body) {
  SCOPED_TRACE(inputs + "\n" + body);
  StatusOr<Graph> g = parse_graph("graph @g(" + inputs + ") {\n" + body + "  return %y\n}\n", "test");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  InferTypesPass infer;
  ASSERT_TRUE(infer.run(*g).ok());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<Tensor> values;
  for (const Input& in : g->inputs()) {
    const Type& t = g->type(in.value);
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (double& x : v) x = u(rng);
    values.push_back(Tensor::from_doubles(t.dtype, t.shape, v));
  }
  StatusOr<reference::RunResult> want = reference::run(*g, values);
  ASSERT_TRUE(want.ok()) << want.error().to_string();
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(*g, codegen::cuda_lower_options());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  ASSERT_EQ(l->program.code.size(), 1u);
  const Invocation& inv = l->program.code[0];
  ASSERT_EQ(inv.kind, Invocation::Kind::contraction);
  ASSERT_EQ(inv.operands[0].space, Space::input);  // the graph's inputs in order: x, w, b
  cuda::MatmulPlan plan;
  StatusOr<bool> planned = cuda::plan_matmul(inv.node, inv.operands[0].type, inv.operands[1].type, plan);
  ASSERT_TRUE(planned.ok() && *planned);
  const cuda::LtEpilogueDecision d = cuda::match_lt_epilogue(inv, l->program.kernels[0].body, plan);
  ASSERT_TRUE(d.match) << d.refused;
  const std::vector<double> got =
      emulate_lt(plan.calls[0], d.match->epilogue, doubles(values[static_cast<size_t>(inv.operands[0].input)]),
                 doubles(values[static_cast<size_t>(inv.operands[1].input)]),
                 doubles(values[static_cast<size_t>(inv.operands[2].input)]),
                 static_cast<size_t>(inv.results[0].type.numel()));
  const std::vector<double> expected = doubles(want->outputs[0]);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-4 * (1 + std::abs(expected[i]))) << "element " << i;
  }
}

TEST(CublasLtMatch, TheLayoutsAndTheBiasComputeTheReferencesValues) {
  const std::string bias = "  %s = add(%m, %b)\n";
  expect_lt_matches_reference("%x: f32[7,5], %w: f32[5,3], %b: f32[3]",
                              "  %m = matmul(%x, %w)\n" + bias + "  %y = relu(%s)\n");
  expect_lt_matches_reference("%x: f32[7,5], %w: f32[3,5], %b: f32[3]",
                              "  %m = matmul(%x, %w) {transpose_b=true}\n" + bias +
                                  "  %y = gelu(%s) {approximate=\"tanh\"}\n");
  expect_lt_matches_reference("%x: f32[5,7], %w: f32[3,5], %b: f32[3]",
                              "  %m = matmul(%x, %w) {transpose_a=true, transpose_b=true}\n  %y = add(%b, %m)\n");
  // A batch folded into the rows, and a strided batch with transposes.
  expect_lt_matches_reference("%x: f32[2,4,5], %w: f32[5,3], %b: f32[3]",
                              "  %m = matmul(%x, %w)\n" + bias + "  %y = relu(%s)\n");
  expect_lt_matches_reference("%x: f32[3,5,4], %w: f32[3,6,5], %b: f32[6]",
                              "  %m = matmul(%x, %w) {transpose_a=true, transpose_b=true}\n" + bias +
                                  "  %y = gelu(%s) {approximate=\"tanh\"}\n");
  // cases_test's cublaslt_odd_strided_bias_tb_f32: a strided batch of odd extents.
  expect_lt_matches_reference("%x: f32[3,5,7], %w: f32[3,9,7], %b: f32[9]",
                              "  %m = matmul(%x, %w) {transpose_b=true}\n  %y = add(%m, %b)\n");
}

// The switch is opt-in (runtime/cuda/executor.cc reads it): on only for "1".
TEST(CublasLtMatch, TheSwitchIsOnOnlyWhenSetToOne) {
  unsetenv("WEFT_CUBLASLT_EPILOGUE");
  EXPECT_FALSE(switched_on("WEFT_CUBLASLT_EPILOGUE"));
  for (const char* off : {"0", "", "yes", "true"}) {
    setenv("WEFT_CUBLASLT_EPILOGUE", off, 1);
    EXPECT_FALSE(switched_on("WEFT_CUBLASLT_EPILOGUE")) << off;
  }
  setenv("WEFT_CUBLASLT_EPILOGUE", "1", 1);
  EXPECT_TRUE(switched_on("WEFT_CUBLASLT_EPILOGUE"));
  unsetenv("WEFT_CUBLASLT_EPILOGUE");
}

}  // namespace
}  // namespace weft

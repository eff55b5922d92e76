// Every case of cases.h on the GPU against the reference interpreter ([CUDA]): each
// graph's CUDA Program (cuBLAS GEMMs, PTX kernels, host fallbacks) on seeded inputs,
// and the training steps several times in a row, parameters staying on the GPU. Skips
// where no GPU is present (every CI machine); run it on a GPU machine as
// tests/cuda/README.md says.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>

#include "ir/text_util.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/library.h"
#include "runtime/reference/interpreter.h"
#include "tests/cuda/cases.h"
#include "tests/cuda/case_inputs.h"

namespace weft::cuda_cases {
namespace {

/// |a - b| <= tol·(1 + |b|) + abs everywhere, NaN where the reference has NaN; otherwise
/// the first element that differs, and how many do.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol,
                                 double abs = 0) {
  if (got.type() != want.type()) {
    return ::testing::AssertionFailure() << got.type().to_string() << " vs " << want.type().to_string();
  }
  int64_t first = -1, count = 0;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.get_double(i), b = want.get_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (!(std::abs(a - b) <= tol * (1 + std::abs(b)) + abs)) {
      if (first < 0) first = i;
      ++count;
      worst = std::isnan(a - b) ? worst : std::max(worst, std::abs(a - b));
    }
  }
  if (first < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << count << " of " << counted(got.numel(), "element") << (count == 1 ? " differs" : " differ")
         << " (largest by " << worst << "); element " << first << ": GPU " << got.get_double(first)
         << ", reference " << want.get_double(first);
}

// Each case launch by launch and as one captured CUDA graph.
int find_input(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    if (g.value(g.inputs()[i].value).name == name) return static_cast<int>(i);
  }
  return -1;
}

class CudaCase : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

/// bf16 when a value of `g` (its body graphs' too) is bf16, else f16 when one is f16.
std::optional<DType> half_dtype(const Graph& g) {
  std::optional<DType> found;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (!g.value(v).type) continue;
    const DType d = g.type(v).dtype;
    if (d == DType::bf16) return d;
    if (d == DType::f16) found = d;
  }
  for (const Node& n : g.nodes()) {
    if (!n.body) continue;
    if (std::optional<DType> inner = half_dtype(*n.body)) {
      if (*inner == DType::bf16) return inner;
      found = inner;
    }
  }
  return found;
}

/// Whether a Program calls cuDNN's convolutions (conv and its gradients).
bool has_convolution(const Program& p) {
  for (const Invocation& inv : p.code) {
    if (inv.kind == Invocation::Kind::library &&
        (inv.node.op == Op::Conv || inv.node.op == Op::ConvBackwardInput ||
         inv.node.op == Op::ConvBackwardWeight)) {
      return true;
    }
  }
  return false;
}

TEST_P(CudaCase, MatchesReference) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  const auto [index, graph] = GetParam();
  const Case& c = all_cases()[index];
  const Graph g = parse_case(c);
  std::vector<Tensor> inputs = make_inputs(g, 1000 + index);
  const Program program = c.program();
  const bool host = !cuda::host_invocations(program).empty();
  // Launch by launch, convolutions keep to the reference's arithmetic (ConvPolicy::exact);
  // as a graph they take the default policy's fastest deterministic algorithm, FFT and
  // Winograd included, whose transforms round differently: 1e-3 for those cases.
  const cuda::ConvPolicy policy = graph ? cuda::ConvPolicy::deterministic : cuda::ConvPolicy::exact;
  const bool transformed = policy != cuda::ConvPolicy::exact && has_convolution(program);
  StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(
      program, c.ptx, c.symbols,
      {.cuda_graph = graph, .allow_host_fallback = host, .convolutions = policy});
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ((*ex)->uses_cuda_graph(), graph && !host);
  set_step(g, inputs, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), inputs[i]).ok());
  }
  // f32 kernels use polynomial approximations and FMA contraction; training steps
  // accumulate GEMM reassociation over several steps. A parameter's Adam step is
  // lr·m/(√v + ε): for a gradient near ε (a unit ReLU nearly silenced) it is
  // ill-conditioned, and the GEMMs' rounding moves it by a few percent of lr; a wrong
  // kernel moves it by up to 2·lr, on many elements.
  double tol = transformed ? 1e-3 : c.steps > 1 ? 2e-4 : 2e-5;
  // [Mixed precision]: a value rounded to bf16 (f16) moves by up to one unit in its last
  // place, 2^-8 (2^-11) relative, where a sum's order or an approximation differs by an
  // f32 ulp; a step carries such differences into its f32 loss and updates.
  if (const std::optional<DType> half = half_dtype(g)) {
    tol = std::max(tol, (*half == DType::bf16 ? 8e-3 : 1e-3) * (c.steps > 1 ? 2 : 1));
  }
  double lr = 0;
  if (const int at = find_input(g, "weft.lr"); at >= 0) lr = inputs[at].get_double(0);
  for (int step = 0; step < c.steps; ++step) {
    SCOPED_TRACE(c.name + " step " + std::to_string(step));
    set_step(g, inputs, step);
    if (const int s = (*ex)->find_input("weft.step"); s >= 0) {
      ASSERT_TRUE((*ex)->set_input(s, inputs[s]).ok());
    }
    StatusOr<reference::RunResult> want = reference::run(g, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    Status run = (*ex)->run();
    ASSERT_TRUE(run.ok()) << run.to_string();
    ASSERT_EQ((*ex)->num_outputs(), static_cast<int>(want->outputs.size()));
    for (size_t o = 0; o < want->outputs.size(); ++o) {
      EXPECT_TRUE(close((*ex)->output(static_cast<int>(o)), want->outputs[o], tol)) << "output " << o;
    }
    for (auto& [name, value] : want->updated) {
      const int index = (*ex)->find_input(name);
      ASSERT_GE(index, 0) << name;
      const bool parameter = g.inputs()[index].kind == InputKind::param;
      EXPECT_TRUE(close((*ex)->input(index), value, tol, parameter ? 0.05 * lr : 0))
          << "updated " << name;
      inputs[index] = value;  // The reference's next step starts from its own update.
    }
  }
  std::printf("  %-24s %3zu invocations, %2zu kernels, %2d on the host%s\n", c.name.c_str(),
              (*ex)->program().code.size(), c.symbols.size(), (*ex)->fallbacks(),
              (*ex)->uses_cuda_graph() ? ", one CUDA graph" : "");
}

INSTANTIATE_TEST_SUITE_P(
    All, CudaCase,
    ::testing::Combine(::testing::Range<size_t>(0, all_cases().size()), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<size_t, bool>>& info) {
      return all_cases()[std::get<0>(info.param)].name +
             (std::get<1>(info.param) ? "_graph" : "_launches");
    });

const Case& find_case(const std::string& name) {
  for (const Case& c : all_cases()) {
    if (c.name == name) return c;
  }
  WEFT_CHECK(false, "no case " + name);
  return all_cases()[0];
}

// cuBLASLt's epilogues (#31/#30, runtime/cuda/epilogue_match.h), with
// WEFT_CUBLASLT_EPILOGUE=1 (tests/cuda/cublaslt_check.sh sets it; skipped otherwise): each
// `cublaslt_` case's contraction binds as one cublasLtMatmul with its epilogue, but those the
// matcher refuses (`cublaslt_refused_*`), which keep the GEMM and the generated kernel.
// MatchesReference checks their values either way.
TEST(CudaCublasLt, MatchedEpiloguesBindAsOneCublasLtCall) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  const char* on = std::getenv("WEFT_CUBLASLT_EPILOGUE");
  if (on == nullptr || std::string(on) != "1") GTEST_SKIP() << "WEFT_CUBLASLT_EPILOGUE=1 not set";
  int seen = 0;
  for (const Case& c : all_cases()) {
    if (c.name.rfind("cublaslt_", 0) != 0) continue;
    ++seen;
    StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(c.program(), c.ptx, c.symbols, {});
    ASSERT_TRUE(ex.ok()) << c.name << ": " << ex.error().to_string();
    const std::string d = (*ex)->describe();
    const bool refused = c.name.rfind("cublaslt_refused_", 0) == 0;
    EXPECT_EQ(d.find("cublasLt ") != std::string::npos, !refused) << c.name << "\n" << d;
    std::printf("  %-32s %s", c.name.c_str(), d.c_str());
  }
  EXPECT_EQ(seen, 19);
}

// cuBLASLt's RELU_BIAS epilogue and NaN (runtime/cuda/README.md): weft's relu keeps a NaN
// (ir/scalar_math.h), where cuBLASLt's is reported to give 0. One NaN in x's first entry
// makes the first row of the pre-activation NaN; the result keeps as many NaNs as the
// reference interpreter's, with WEFT_CUBLASLT_EPILOGUE unset (the generated epilogue) and
// set to 1 (cublasLtMatmul's epilogue). Each case prints "NaN survives: yes|no" for
// tests/cuda/cublaslt_check.sh. Decision rule: if it fails with the switch on, epilogue_match.h
// must refuse relu and relu_bias epilogues (keeping bias and gelu(tanh)) before the
// switch may default on.
TEST(CudaCublasLt, ANanPreActivationSurvivesTheReluBiasEpilogue) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  const char* on = std::getenv("WEFT_CUBLASLT_EPILOGUE");
  const bool switched_on = on != nullptr && std::string(on) == "1";
  for (const std::string name : {"cublaslt_relu_bias_tb_f32", "cublaslt_relu_bias_tb_bf16",
                                 "cublaslt_odd_strided_relu_bias_f16"}) {
    SCOPED_TRACE(name);
    const Case& c = find_case(name);
    const Graph g = parse_case(c);
    std::vector<Tensor> inputs = make_inputs(g, 7);
    const int x = find_input(g, "x");
    ASSERT_GE(x, 0);
    inputs[x].set_double(0, std::nan(""));
    StatusOr<reference::RunResult> want = reference::run(g, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    StatusOr<std::unique_ptr<cuda::Executor>> ex = cuda::Executor::create(c.program(), c.ptx, c.symbols, {});
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), inputs[i]).ok());
    }
    const Status run = (*ex)->run();
    ASSERT_TRUE(run.ok()) << run.to_string();
    const auto nans = [](const Tensor& t) {
      int64_t n = 0;
      for (int64_t i = 0; i < t.numel(); ++i) n += std::isnan(t.get_double(i));
      return n;
    };
    const int64_t got = nans((*ex)->output(0)), expected = nans(want->outputs[0]);
    ASSERT_GT(expected, 0);
    const bool lt = (*ex)->describe().find("cublasLt ") != std::string::npos;
    std::printf("  %-36s WEFT_CUBLASLT_EPILOGUE=%d (%s): NaN survives: %s (%lld of %lld NaNs)\n",
                name.c_str(), switched_on ? 1 : 0, lt ? "cublasLtMatmul" : "generated epilogue",
                got == expected ? "yes" : "no", static_cast<long long>(got), static_cast<long long>(expected));
    EXPECT_EQ(got, expected) << (lt ? "cuBLASLt's relu epilogue lost a NaN: refuse relu and relu_bias in "
                                      "epilogue_match.h"
                                    : "the generated relu epilogue lost a NaN");
  }
}

// #31: an attention block's training step with attention_grad on FlashAttention-2's
// backward kernel against its twins (gen_cases_main.cc, attention_step_cases): the same
// step graph with the kernel switched off (WEFT_ATTENTION_GRAD_KERNEL=0 at generation:
// decomposed) and the step without fuse-attention. Three steps as one CUDA graph from the
// same inputs, each executor keeping its own parameters: the losses and every parameter
// within f32 tolerance (weft.lr is 0.01). The padded case's mask pads 0, 3 and 6 of each
// row's 12 keys.
TEST(CudaCases, FusedAttentionStepsMatchTheirTwins) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  for (const std::string base : {"attention_fa2_causal_step", "attention_fa2_padded_step"}) {
    SCOPED_TRACE(base);
    const Case& fused = find_case(base);
    const Graph g = parse_case(fused);
    std::vector<Tensor> inputs = make_inputs(g, 31);
    if (const int m = find_input(g, "mask"); m >= 0) {
      for (int64_t i = 0; i < inputs[m].numel(); ++i) inputs[m].set_double(i, i % 12 >= 12 - 3 * (i / 12));
    }
    struct Run {
      Graph graph;
      std::unique_ptr<cuda::Executor> ex;
    };
    std::vector<Run> runs;
    for (const std::string& name : {base, base + "_kernel_off", base + "_unfused"}) {
      const Case& c = find_case(name);
      StatusOr<std::unique_ptr<cuda::Executor>> ex =
          cuda::Executor::create(c.program(), c.ptx, c.symbols, {.cuda_graph = true});
      ASSERT_TRUE(ex.ok()) << name << ": " << ex.error().to_string();
      Graph cg = parse_case(c);
      for (size_t i = 0; i < cg.inputs().size(); ++i) {
        const int at = find_input(g, cg.value(cg.inputs()[i].value).name);
        ASSERT_GE(at, 0) << name << ": an input the fused step lacks";
        ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), inputs[at]).ok());
      }
      runs.push_back({std::move(cg), std::move(*ex)});
    }
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      for (Run& r : runs) {
        if (const int s = r.ex->find_input("weft.step"); s >= 0) {
          Tensor t = r.ex->input(s);
          t.set_double(0, step + 1);
          ASSERT_TRUE(r.ex->set_input(s, t).ok());
        }
        ASSERT_TRUE(r.ex->run().ok());
      }
      for (size_t k = 1; k < runs.size(); ++k) {
        EXPECT_TRUE(close(runs[0].ex->output(0), runs[k].ex->output(0), 1e-4)) << "loss vs twin " << k;
        for (size_t i = 0; i < g.inputs().size(); ++i) {
          if (g.inputs()[i].kind != InputKind::param) continue;
          const std::string& name = g.value(g.inputs()[i].value).name;
          const int at = runs[k].ex->find_input(name);
          ASSERT_GE(at, 0) << name;
          // Adam's lr·m/(√v + ε) moves by a few percent of lr where a gradient is near ε
          // (MatchesReference's allowance).
          EXPECT_TRUE(close(runs[0].ex->input(static_cast<int>(i)), runs[k].ex->input(at), 2e-4,
                            0.05 * 0.01))
              << name << " vs twin " << k;
        }
      }
    }
  }
}

// The twins differ where they should, on the host (no GPU): attention_grad is one library
// invocation on the kernel in the fused step, and none in the step lowered with
// WEFT_ATTENTION_GRAD_KERNEL=0 or built without fuse-attention.
TEST(CudaCases, AttentionStepTwinsBindTheBackwardKernelOnlyInTheFusedStep) {
  for (const std::string base : {"attention_fa2_causal_step", "attention_fa2_padded_step"}) {
    for (const std::string suffix : {"", "_kernel_off", "_unfused"}) {
      const Program p = find_case(base + suffix).program();
      int kernels = 0, grads = 0;
      for (const Invocation& inv : p.code) {
        if (inv.kind != Invocation::Kind::library || inv.node.op != Op::AttentionGrad) continue;
        std::vector<Type> types;
        for (const BufferRef& r : inv.operands) types.push_back(r.type);
        ++grads;
        kernels += cuda::library_kind(inv.node, types, inv.results[0].type) ==
                   cuda::LibraryKind::attention_grad;
      }
      EXPECT_EQ(grads, suffix.empty() ? 1 : 0) << base + suffix;
      EXPECT_EQ(kernels, grads) << base + suffix;
      EXPECT_TRUE(cuda::host_invocations(p).empty()) << base + suffix;
    }
  }
}

// A kernel that finds bad data records it on the device; run() reports it after the
// step's synchronize with the CPU backend's message, and the next step runs again.
void expect_device_error(const std::string& name, int input, int64_t position, double value,
                         const std::string& message) {
  const Case& c = find_case(name);
  const Graph g = parse_case(c);
  std::vector<Tensor> inputs = make_inputs(g, 5);
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "one CUDA graph" : "launch by launch");
    StatusOr<std::unique_ptr<cuda::Executor>> ex =
        cuda::Executor::create(c.program(), c.ptx, c.symbols, {.cuda_graph = graph});
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    Tensor bad = inputs[input];
    bad.set_double(position, value);
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), i == static_cast<size_t>(input) ? bad : inputs[i]).ok());
    }
    Status s = (*ex)->run();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find(message), std::string::npos) << s.to_string();
    ASSERT_TRUE((*ex)->set_input(input, inputs[input]).ok());
    EXPECT_TRUE((*ex)->run().ok());
  }
}

TEST(CudaCases, LabelOutOfRangeIsFoundOnTheDevice) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  expect_device_error("cross_entropy_mean", 1, 2, 10,
                      "cross_entropy: label 10 at position 2 is out of range for 10 classes");
}

TEST(CudaCases, IndexOutOfRangeIsFoundOnTheDevice) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  expect_device_error("gather_rows", 1, 3, -1,
                      "gather: index -1 at position 3 is out of range for axis 0 of size 3");
  expect_device_error("scatter_add_rows", 1, 4, 3,
                      "scatter_add: index 3 at position 4 is out of range for axis 0 of size 3");
  // Inside a loop's body (iteration 3 reads positions 6 and 7 of the indices): the
  // body's gather reports, under the loop invocation.
  expect_device_error("scan_gather", 2, 7, 3,
                      "gather: index 3 at position 1 is out of range for axis 0 of size 3");
}

// A property of the lowered Programs, so it needs no GPU: every op of every case has
// device code (library.h).
TEST(CudaCases, NoCaseRunsOnTheHost) {
  int loops = 0;
  for (const Case& c : all_cases()) {
    const Program p = c.program();
    const Status device_only = cuda::check_device_only(p);
    EXPECT_TRUE(device_only.ok()) << c.name << ": " << device_only.to_string();
    for (const Invocation& inv : p.code) loops += inv.kind == Invocation::Kind::loop;
  }
  // The loop cases run as loop invocations (the CUDA lowering no longer unrolls them).
  EXPECT_GE(loops, 6);
}

TEST(CudaCases, EveryCaseHasItsProgramAndKernels) {
  ASSERT_GT(all_cases().size(), 90u);
  for (const Case& c : all_cases()) {
    const Program p = c.program();
    EXPECT_EQ(p.kernels.size(), c.symbols.size()) << c.name;
    EXPECT_EQ(c.ptx.empty(), c.symbols.empty()) << c.name;
    for (const std::string& s : c.symbols) {
      EXPECT_NE(c.ptx.find(".visible .entry " + s + "("), std::string::npos) << c.name << " " << s;
    }
  }
}

// Without a GPU too: no convolution or pooling of any case (the op cases, the CNN step's
// forward and backward) is left to the host; cuDNN and pool.cu take them all.
TEST(CudaCases, ConvolutionsAndPoolingsRunOnTheDevice) {
  // The windowed ops: every contraction but matmul (ir/ops.def).
  const auto windowed = [](const Node& n) {
    return n.info().category == OpCategory::Contraction && n.op != Op::Matmul;
  };
  int seen = 0;
  for (const Case& c : all_cases()) {
    const Program p = c.program();
    for (const Invocation& inv : p.code) {
      if (inv.kind == Invocation::Kind::library && windowed(inv.node)) ++seen;
    }
    for (int i : cuda::host_invocations(p)) {
      EXPECT_FALSE(windowed(p.code[i].node))
          << c.name << ": " << cuda::describe_host_invocation(p.code[i]);
    }
  }
  EXPECT_GE(seen, 12);  // 9 op cases and the CNN step's conv, its gradient and pooling
}

// [Mixed precision]'s --tf32 on the device (ExecutorOptions::tf32, which
// CompileOptions::bind.tf32 sets: codegen's targets_test checks that on the host): the f32
// GEMM cases run on TF32 tensor cores stay within TF32's rounding (a 10-bit mantissa) of
// the reference, launch by launch and as one CUDA graph. How far they moved is printed.
TEST(CudaCases, Tf32GemmsStayWithinTf32Rounding) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  for (const char* name : {"matmul", "matmul_tb", "matmul_batched", "gemm_epilogue"}) {
    const Case& c = find_case(name);
    const Graph g = parse_case(c);
    const std::vector<Tensor> inputs = make_inputs(g, 7);
    StatusOr<reference::RunResult> want = reference::run(g, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    for (bool graph : {false, true}) {
      SCOPED_TRACE(std::string(name) + (graph ? " as one CUDA graph" : " launch by launch"));
      StatusOr<std::unique_ptr<cuda::Executor>> ex =
          cuda::Executor::create(c.program(), c.ptx, c.symbols, {.cuda_graph = graph, .tf32 = true});
      ASSERT_TRUE(ex.ok()) << ex.error().to_string();
      for (size_t i = 0; i < inputs.size(); ++i) {
        ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), inputs[i]).ok());
      }
      ASSERT_TRUE((*ex)->run().ok());
      const Tensor& got = (*ex)->output(0);
      EXPECT_TRUE(close(got, want->outputs[0], 1e-2));
      double moved = 0;
      for (int64_t i = 0; i < got.numel(); ++i) {
        moved = std::max(moved, std::abs(got.get_double(i) - want->outputs[0].get_double(i)));
      }
      std::printf("  tf32 %-16s %-9s largest |difference| from f32: %.3g\n", name,
                  graph ? "graph" : "launches", moved);
    }
  }
}

}  // namespace
}  // namespace weft::cuda_cases

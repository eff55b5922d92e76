// Every case of cases.h on the GPU against the reference interpreter ([CUDA]): each
// graph's CUDA Program (cuBLAS GEMMs, PTX kernels, host fallbacks) on seeded inputs,
// and the training steps several times in a row, parameters staying on the GPU. Skips
// where no GPU is present (every CI machine); run it on a GPU machine as
// tests/cuda/README.md says.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "runtime/cuda/executor.h"
#include "runtime/cuda/library.h"
#include "runtime/reference/interpreter.h"
#include "tests/cuda/cases.h"
#include "tests/cuda/case_inputs.h"

namespace weft::cuda_cases {
namespace {

/// |a - b| <= tol·(1 + |b|) everywhere, NaN where the reference has NaN; the first
/// element that differs otherwise.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.type() != want.type()) {
    return ::testing::AssertionFailure() << got.type().to_string() << " vs " << want.type().to_string();
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.get_double(i), b = want.get_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (!(std::abs(a - b) <= tol * (1 + std::abs(b)))) {
      return ::testing::AssertionFailure() << "element " << i << ": GPU " << a << ", reference " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

class CudaCase : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaCase, MatchesReference) {
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
  const Case& c = all_cases()[GetParam()];
  const Graph g = parse_case(c);
  std::vector<Tensor> inputs = make_inputs(g, 1000 + GetParam());
  StatusOr<std::unique_ptr<cuda::Executor>> ex =
      cuda::Executor::create(c.program(), c.ptx, c.symbols);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  set_step(g, inputs, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE((*ex)->set_input(static_cast<int>(i), inputs[i]).ok());
  }
  // f32 kernels use polynomial approximations and FMA contraction; training steps
  // accumulate GEMM reassociation over several steps.
  const double tol = c.steps > 1 ? 2e-4 : 2e-5;
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
      EXPECT_TRUE(close((*ex)->input(index), value, tol)) << "updated " << name;
      inputs[index] = value;  // The reference's next step starts from its own update.
    }
  }
  std::printf("  %-18s %3zu invocations, %2zu kernels, %2d on the host\n", c.name.c_str(),
              (*ex)->program().code.size(), c.symbols.size(), (*ex)->fallbacks());
}

INSTANTIATE_TEST_SUITE_P(All, CudaCase, ::testing::Range<size_t>(0, all_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return all_cases()[info.param].name;
                         });

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

}  // namespace
}  // namespace weft::cuda_cases

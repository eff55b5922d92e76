// The library part of the op × dtype completeness check in f16 and bf16: every fixture
// case (tests/fixtures/cases.json, made with NumPy and PyTorch) of an op that is not
// elementwise, its f32 data and dtype attributes made f16 and then bf16, is bound with
// make_library_kernel; cpu_library_gap must agree with the choice (a kernel, or a stated
// reason), and each kernel must match the reference interpreter. The f32, f64 and integer
// variants are codegen:kernel_coverage_test's (which runs whole programs); the half ones
// live here, with the half kernels (issue #30). Prints the half gaps that remain.

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "runtime/cpu/kernel_testing.h"
#include "runtime/reference/testing/fixture_cases.h"

namespace weft::cpu {
namespace {

// Near-zero results that cancel: f32 summation order alone moves them past their ulp.
constexpr double kCancelled = 1e-3;

bool executor_runs_itself(Op op) { return op_info(op).category == OpCategory::State || op == Op::AllReduce; }

TEST(HalfCoverage, EveryFixtureOpInHalfHasAKernelOrAStatedGap) {
  StatusOr<std::vector<weft::testing::FixtureEntry>> entries = weft::testing::load_fixture_cases();
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  std::set<std::string> on_kernel;
  std::map<std::string, std::set<std::string>> gaps;  // reason -> op: dtypes
  for (const weft::testing::FixtureEntry& e : *entries) {
    if (!e.built.ok() || op_info(e.built->op).math != MathClass::None) continue;
    if (executor_runs_itself(e.built->op) || e.built->op == Op::Fused || e.built->op == Op::Scan) continue;
    for (DType half : {DType::f16, DType::bf16}) {
      std::optional<weft::testing::FixtureCase> c = weft::testing::retyped_case(*e.built, DType::f32, half);
      if (!c) continue;
      StatusOr<reference::RunResult> want = reference::run(c->graph, c->inputs);
      if (!want.ok()) continue;  // The reference refuses it: no training step holds it.
      SCOPED_TRACE(c->name);
      LibraryCall call{c->graph.nodes()[0], {}, c->graph.type(c->graph.nodes()[0].result())};
      std::vector<const void*> pointers;
      for (const Tensor& t : c->inputs) {
        call.operand_types.push_back(t.type());
        pointers.push_back(t.raw_data());
      }
      Tensor got(call.result_type);
      StatusOr<std::unique_ptr<BoundKernel>> kernel = make_library_kernel(call, pointers, got.raw_data());
      ASSERT_TRUE(kernel.ok()) << kernel.error().to_string();
      const std::optional<std::string_view> gap = cpu_library_gap(call);
      EXPECT_EQ(*kernel != nullptr, !gap.has_value())
          << "cpu_library_gap disagrees with make_library_kernel: " << (gap ? *gap : "no gap");
      std::string pair = std::string(op_name(call.node.op)) + ":";
      for (const Type& t : call.operand_types) pair += " " + std::string(dtype_name(t.dtype));
      pair += " -> " + std::string(dtype_name(call.result_type.dtype));
      if (gap) gaps[std::string(*gap)].insert(pair);
      if (!*kernel) continue;
      on_kernel.insert(pair);
      ThreadPool pool(2);
      const Status run = (*kernel)->run(pool);
      const Tensor& ref = want->outputs.at(0);
      ASSERT_TRUE(run.ok()) << run.to_string();
      std::string why;
      if (is_half(ref.dtype())) {
        EXPECT_TRUE(testing::within_ulps(got, ref, 1, kCancelled, &why)) << why;
      } else {
        EXPECT_TRUE(all_close(got, ref, 0, &why)) << why;
      }
    }
  }
  size_t gapped = 0;
  for (const auto& [why, pairs] : gaps) gapped += pairs.size();
  std::printf("  cpu library, f16/bf16: %zu op x dtype pairs on a kernel, %zu stated gaps\n",
              on_kernel.size(), gapped);
  for (const auto& [why, pairs] : gaps) {
    std::string list;
    for (const std::string& p : pairs) list += (list.empty() ? "" : "; ") + p;
    std::printf("    %s\n      %s\n", why.c_str(), list.c_str());
  }
  EXPECT_GT(on_kernel.size(), 20u);  // The fixtures were found and retyped.
}

}  // namespace
}  // namespace weft::cpu

// Every case of ONNX's backend test data through the importer, the reference interpreter
// and the compiled CPU backend, against expected.json: fails when a case listed there as
// passing no longer passes (a regression), and prints the cases that pass and are not
// listed yet (record them with `bazel run //tools/onnx_conformance -- --update-expected`).
// Skipped, saying so, only where the data is not installed (tools/setup installs
// libonnx-testdata).
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "tools/onnx_conformance/conformance.h"
#include "tools/onnx_conformance/report.h"
#include "tools/onnx_conformance/runner.h"

namespace weft::onnx_conformance {
namespace {

std::string lines(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += "  " + s + "\n";
  return out;
}

TEST(OnnxConformance, CasesListedAsPassingStillPass) {
  if (!std::filesystem::is_directory(kDefaultDataDir)) {
    GTEST_SKIP() << "ONNX's backend test data is not installed at " << kDefaultDataDir
                 << " (tools/setup installs libonnx-testdata)";
  }
  StatusOr<Expected> expected = read_expected("tools/onnx_conformance/expected.json");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  StatusOr<std::vector<Case>> cases = find_cases(kDefaultDataDir, all_categories(), "");
  ASSERT_TRUE(cases.ok()) << cases.error().message;

  // Every listed case must still be in the data (a renamed case is not a silent pass).
  std::set<std::string> present;
  for (const Case& c : *cases) present.insert(c.category + "/" + c.name);
  std::vector<std::string> missing;
  for (const auto& [backend, categories] : expected->passing) {
    for (const auto& [category, names] : categories) {
      for (const std::string& n : names) {
        if (!present.count(category + "/" + n)) missing.push_back(backend + " " + category + "/" + n);
      }
    }
  }
  EXPECT_TRUE(missing.empty()) << "listed as passing, not in the data:\n" << lines(missing);

  // About 0.2 s of MLIR compilation per case the importer accepts, on 2 workers (README.md).
  const std::vector<std::string> backends = {"reference", "cpu"};
  const std::vector<CaseResult> results =
      run_cases(*cases, {backends}, RunnerOptions{.jobs = 2, .timeout_s = 300});
  std::cout << format_table(results, backends);

  const Drift d = compare_with_expected(*expected, results);
  if (!d.new_passes.empty()) {
    std::cout << "\n" << d.new_passes.size() << " cases pass and are not in expected.json yet (record them: "
              << "bazel run //tools/onnx_conformance -- --update-expected):\n" << lines(d.new_passes);
  }
  EXPECT_TRUE(d.regressions.empty()) << d.regressions.size()
                                     << " cases listed as passing in expected.json no longer pass:\n"
                                     << lines(d.regressions);
}

}  // namespace
}  // namespace weft::onnx_conformance

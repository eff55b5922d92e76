#pragma once
// Running many cases, each in a worker process: a case that crashes weft (an abort, a
// segfault) or runs too long costs only that case a `failed` verdict, naming the signal
// and the last line the worker wrote to stderr, and the run goes on. Workers are forked
// from this process before it has started any thread of its own, and each job is one
// case on one backend, so a crash in one backend leaves the others' verdicts standing.
//
//   RunnerOptions o{.jobs = 2, .timeout_s = 300};
//   std::vector<CaseResult> results = run_cases(cases, {{"reference", "cpu"}}, o);

#include <functional>
#include <string>
#include <vector>

#include "tools/onnx_conformance/conformance.h"

namespace weft::onnx_conformance {

struct RunnerOptions {
  int jobs = 1;                ///< Worker processes side by side.
  int timeout_s = 300;         ///< Per case and backend; then the worker is killed.
  bool isolate = true;         ///< false: run every case in this process (a debugger's view).
  Tolerance tolerance = {};
  /// What runs one case on the given backends: run_case when null (tests put a case
  /// that crashes or hangs here).
  std::function<CaseResult(const Case&, const std::vector<std::string>&, Tolerance)> run_one = nullptr;
  /// Called as each case finishes (all its backends), in the order they finish.
  std::function<void(const CaseResult&)> on_result = nullptr;
};

/// Runs `cases[i]` on `backends[i]` (or on `backends[0]` for every case when it holds
/// one list) and returns the results in the order of `cases`.
std::vector<CaseResult> run_cases(const std::vector<Case>& cases,
                                  const std::vector<std::vector<std::string>>& backends,
                                  const RunnerOptions& options);

}  // namespace weft::onnx_conformance

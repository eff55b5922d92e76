#pragma once
// What the conformance runner reports: the table (per category and per op type, each
// backend's passed / failed / refused counts, the worst failure and the refusal reasons,
// grouped), the same results as JSON (`--json=FILE`), and the checked-in record of which
// cases pass (expected.json) with the comparison that finds regressions.
//
//   std::cout << format_table(results, {"reference", "cpu"});
//   Expected now = expected_from(results, {"reference", "cpu"});
//   Drift d = compare_with_expected(*read_expected("expected.json"), results);
//   // d.regressions: cases listed as passing that no longer pass; d.new_passes: the others

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "tools/onnx_conformance/conformance.h"

namespace weft::onnx_conformance {

/// One CaseResult as one line of JSON (no newline), and back.
std::string case_result_to_json(const CaseResult& r);
StatusOr<CaseResult> case_result_from_json(std::string_view text);

/// The table: per category, then per op type (a case counts under each op type of its
/// model), then the total; for each backend, passed / failed / refused; a row with
/// failures names its worst (largest error) and a row with only refusals its most common
/// reason. Then, per backend, the failures one by one and the refusal reasons grouped
/// (reason_group), most frequent first.
std::string format_table(const std::vector<CaseResult>& results,
                         const std::vector<std::string>& backends);

/// All results as one JSON document: the table's counts (`total` with its refusal
/// reasons grouped, `categories`, `op_types`: backend -> passed / failed / refused) and
/// `cases`: per case its op types and each backend's verdict, detail and error.
std::string results_json(const std::vector<CaseResult>& results,
                         const std::vector<std::string>& backends);

/// expected.json: for each backend and category, the cases that pass.
struct Expected {
  /// backend -> category -> passing case names.
  std::map<std::string, std::map<std::string, std::set<std::string>>> passing;
};

/// The passing cases of `results` on `backends`, every category of the results listed
/// (with no passes, an empty list).
Expected expected_from(const std::vector<CaseResult>& results,
                       const std::vector<std::string>& backends);

/// `base` with the backends and categories that `update` holds replaced by update's.
Expected merge_expected(Expected base, const Expected& update);

/// Reads expected.json; a missing file is an error naming it, as is malformed JSON.
StatusOr<Expected> read_expected(const std::string& path);
/// expected.json's text: pass counts and case lists, one name a line.
std::string expected_json(const Expected& e);

/// How results stand against expected.json, for the cases that were run.
struct Drift {
  /// `backend category/name: VERDICT: detail` for each case listed as passing that ran
  /// on that backend and did not pass.
  std::vector<std::string> regressions;
  /// `backend category/name` for each case that passed and is not listed.
  std::vector<std::string> new_passes;
};
Drift compare_with_expected(const Expected& expected, const std::vector<CaseResult>& results);

}  // namespace weft::onnx_conformance

#pragma once
// One case of ONNX's backend test data, run through weft: the model imported by
// onnx_io::import_onnx, run on each chosen backend (codegen/targets.h: "reference", "cpu"
// — the same Target::run call `weftc run --backend=NAME` makes) and every output compared
// with the case's expected output_*.pb, numpy.testing-style, as ONNX's own backend runner
// does (onnx/backend/test/runner: rtol 1e-3, atol 1e-7; NaN equals NaN; integers and
// bools exactly; dtypes and shapes must match).
//
//   StatusOr<std::vector<Case>> cases = find_cases(kDefaultDataDir, {"node"}, "test_relu");
//   CaseResult r = run_case((*cases)[0], {"reference", "cpu"});
//   // r.backends["cpu"].verdict == Verdict::passed, or .detail says why not
//
// A backend's verdict on a case is one of three:
//  - passed: every output of every test_data_set_* is close to the expected one;
//  - failed: weft produced a result and it is wrong (values, shape, dtype, output count),
//    or the imported graph does not verify, or the run crashed or timed out (runner.h);
//  - refused: weft said it cannot run the case (the importer refused a node, a test
//    tensor has a type weft lacks, the backend returned an error), with the reason.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_conformance {

/// Where tools/setup's libonnx-testdata puts the data.
inline constexpr const char* kDefaultDataDir = "/usr/include/onnx/backend/test/data";

/// The categories of that data that hold models (its `real` category only names models
/// to download).
const std::vector<std::string>& all_categories();

/// One test case: a folder holding model.onnx and test_data_set_*/.
struct Case {
  std::string category;  ///< "node", "pytorch-converted", ...
  std::string name;      ///< "test_relu".
  std::string dir;       ///< The case's folder.
};

/// The cases of `categories` under `data_dir` whose name contains `filter` ("" for all),
/// sorted by category (in the given order) and name. An unknown category, or one with no
/// folder under `data_dir`, is an error naming it.
StatusOr<std::vector<Case>> find_cases(const std::string& data_dir,
                                       const std::vector<std::string>& categories,
                                       const std::string& filter);

enum class Verdict { passed, failed, refused };
/// "passed", "failed", "refused".
const char* verdict_name(Verdict v);

/// One backend's verdict on one case.
struct BackendResult {
  Verdict verdict = Verdict::refused;
  /// refused: the reason (first line of weft's error); failed: what differed.
  std::string detail;
  /// failed: the largest |actual - expected| over the compared outputs; infinity when
  /// there is no numeric measure (a shape, dtype or NaN mismatch, a crash).
  double max_error = 0;
};

/// Every chosen backend's verdict on one case.
struct CaseResult {
  std::string category;
  std::string name;
  /// The op types of the case's model (its subgraphs' included), sorted, each once;
  /// `domain.Op` for ops outside the default domain.
  std::vector<std::string> op_types;
  std::map<std::string, BackendResult> backends;  ///< By backend name.
  /// The data inputs fixed at import (ImportOptions::constant_inputs), comma-separated:
  /// non-float inputs a test feeds where weft needs a constant (a Reshape's shape); "" if none.
  std::string fixed_inputs = {};
};

/// numpy.testing.assert_allclose's tolerances: |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

/// How one output compares with its expected value.
struct Comparison {
  bool close = true;
  /// When not close: `f32[2,3] where f32[3,2] was expected`, or `4 of 6 elements differ;
  /// the largest |error| is 0.5 at [1,0]: 2.5 where 2 was expected`.
  std::string detail;
  /// The largest |actual - expected| (infinity for a shape, dtype or NaN mismatch).
  double max_error = 0;
};

/// Compares `actual` with `expected`: dtypes and shapes equal; floating-point elements
/// within `tol` (NaN equals NaN, an infinity only itself); integer and bool elements
/// exactly.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol = {});

/// The op types of the model at `model_path` (see CaseResult::op_types); empty when it
/// cannot be read.
std::vector<std::string> model_op_types(const std::string& model_path);

/// Runs `c` on each of `backends` (codegen target names) and compares the outputs.
/// Never throws: an exception from weft becomes a failed verdict.
CaseResult run_case(const Case& c, const std::vector<std::string>& backends, Tolerance tol = {});

/// The reason of a refusal as grouped in the report: its first line, with what names one
/// case in particular taken out: `node 'Conv_3' (Conv, opset 11): X` becomes `Conv: X`,
/// the case's folder is dropped from paths, `input_1.pb: tensor 'x'` becomes
/// `input_N.pb: tensor`, `input 'x' is` becomes `input is`.
std::string reason_group(const std::string& reason);

}  // namespace weft::onnx_conformance

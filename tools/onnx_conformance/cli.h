#pragma once
// The command line of tools/onnx_conformance (main.cc): its flags, read into CliOptions,
// its --help text, and the whole run as one call that the binary makes.
//
//   bazel run //tools/onnx_conformance -- --categories=node --filter=conv --backends=reference

#include <ostream>
#include <string>
#include <vector>

#include "ir/status.h"
#include "tools/onnx_conformance/conformance.h"

namespace weft::onnx_conformance {

inline constexpr const char* kHelp =
    "usage: onnx_conformance [flags]\n"
    "\n"
    "Runs every case of ONNX's backend test data through weft's ONNX importer, then\n"
    "through each backend, and compares every output with the expected one (rtol 1e-3,\n"
    "atol 1e-7 as ONNX's backend runner; NaN equals NaN; integers and bools exactly).\n"
    "Prints, per category and per op type, each backend's passed / failed / refused\n"
    "counts, the failures and the refusal reasons grouped; then how the results stand\n"
    "against expected.json (the cases known to pass). Exits 1 when a case listed there\n"
    "as passing no longer passes.\n"
    "\n"
    "  --data-dir=DIR       the test data (default /usr/include/onnx/backend/test/data,\n"
    "                       installed by tools/setup as libonnx-testdata)\n"
    "  --categories=A,B     node, pytorch-converted, pytorch-operator, simple (default: all)\n"
    "  --filter=TEXT        only cases whose name contains TEXT\n"
    "  --backends=A,B       codegen targets to run (default reference,cpu; cpu compiles\n"
    "                       each graph through MLIR as `weftc run --backend=cpu` does)\n"
    "  --json=FILE          also write every case's verdicts as JSON\n"
    "  --expected=FILE      the expected results (default tools/onnx_conformance/expected.json\n"
    "                       of the workspace)\n"
    "  --update-expected    rewrite the expected results for the categories and backends\n"
    "                       run (not with --filter)\n"
    "  --rtol=X             the relative tolerance (default 1e-3, ONNX's)\n"
    "  --atol=X             the absolute tolerance (default 1e-7, ONNX's)\n"
    "  --jobs=N             worker processes side by side (default 2)\n"
    "  --timeout=S          seconds per case and backend before its worker is killed and\n"
    "                       the case fails (default 300)\n"
    "  --in-process         run every case in this process (for a debugger; a crash ends\n"
    "                       the run)\n"
    "  --verbose            print each case's verdicts as it finishes\n";

struct CliOptions {
  std::string data_dir;
  std::vector<std::string> categories;
  std::string filter;
  std::vector<std::string> backends = {"reference", "cpu"};
  std::string json_path;
  std::string expected_path;
  bool update_expected = false;
  Tolerance tolerance = {};
  int jobs = 2;
  int timeout_s = 300;
  bool in_process = false;
  bool verbose = false;
  bool help = false;
};

/// Reads the flags (`--name=value` or `--name value`). Errors name the flag: unknown
/// flags list the known ones.
StatusOr<CliOptions> parse_cli(const std::vector<std::string>& argv);

/// Runs what `options` asks, printing the table (and the comparison with the expected
/// results) to `out` and progress to `err`; returns the exit status: 0, or 1 after a
/// regression or an error (printed to `err`).
int run_cli(const CliOptions& options, std::ostream& out, std::ostream& err);

}  // namespace weft::onnx_conformance

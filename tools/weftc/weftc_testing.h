#pragma once
// What the weftc_*_test files share: running the weftc binary from the runfiles tree,
// scratch files, and the MLP example's inputs (examples/mlp).

#include <string>

#include "tests/testing/subprocess.h"

namespace weft::weftc_testing {

using Result = testing::CommandResult;

/// The test's scratch directory ($TEST_TMPDIR).
std::string temp_dir();

/// Runs `weftc ARGS` with an optional environment prefix and captures its output.
Result weftc(const std::string& args, const std::string& env = "");

/// Writes `contents` to temp_dir()/NAME and returns the path.
std::string write_temp(const std::string& name, const std::string& contents);

/// The MLP example's folder, relative to the runfiles root.
inline const std::string kExample = "examples/mlp/";

/// ` --input x=examples/mlp/x.npy ...`: every input of examples/mlp/mlp.wir.
std::string example_inputs();

/// Expects the .npy files to hold the same type and elements within `tol` (absolute
/// plus relative).
void expect_close(const std::string& actual_path, const std::string& expected_path, double tol);

}  // namespace weft::weftc_testing

#pragma once
// Test helper: runs a shell command the way a user would and captures what it printed.

#include <string>

namespace weft::testing {

struct CommandResult {
  int exit_code;    ///< The exit status, or -1 when the command did not exit normally.
  std::string out;  ///< stdout and stderr together.
};

/// Runs `command` with /bin/sh, stderr merged into stdout.
CommandResult run_command(const std::string& command);

/// $TEST_TMPDIR (Bazel's per-test scratch directory), or /tmp outside Bazel.
std::string test_tmpdir();

}  // namespace weft::testing

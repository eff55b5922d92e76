#pragma once
// Running the suite's child processes (bench/suite.cc): one process per model, framework
// and configuration, with a chosen environment, stdout captured and stderr kept in a
// file for the failure report. A peer (the PyTorch side) is started without OpenBLAS's
// machine-wide handicap (peer_unset); weft's workers get the suite's environment.

#include <map>
#include <set>
#include <string>
#include <vector>

namespace weft::bench {

/// A failed step of the suite: the message is printed and the model is marked failed.
struct SuiteError {
  std::string message;
};

struct ProcessResult {
  int exit_code = -1;  ///< The exit status, or 128 + signal.
  std::string out;     ///< Everything it wrote to stdout.
  std::string err;     ///< Everything it wrote to stderr.
};

bool is_file(const std::string& path);
std::string read_file(const std::string& path);
/// The last `chars` characters of `text` (for error reports).
std::string tail(const std::string& text, size_t chars = 3000);

/// Runs `argv` with the suite's environment minus `unset` plus `set`, stdout captured
/// through a pipe and stderr through the file `err_path` (one pipe cannot deadlock).
/// Throws SuiteError when the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& set,
                          const std::set<std::string>& unset, const std::string& err_path);

/// The variables a peer process (PyTorch, or anything that loads OpenBLAS to be measured
/// against) is started without: `unset` plus runtime/cpu/openblas_peer.h's
/// kOpenblasHandicap (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE). Only the child's environment
/// changes; this process keeps both.
std::set<std::string> peer_unset(std::set<std::string> unset = {});

/// `K=V ... argv...`, for messages.
std::string command_line(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& set);

/// Runs a step that must succeed; its failure is a SuiteError with the command and output.
ProcessResult run_or_fail(const std::string& what, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& set,
                          const std::set<std::string>& unset, const std::string& err_path);

}  // namespace weft::bench

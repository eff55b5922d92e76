#pragma once
// Test helpers: run a shell command the way a user would and capture what it printed, or
// start one in the background and signal it at chosen moments of its output.
//
//   CommandResult r = run_command("bin/train --epochs=1");
//
//   Process p("bin/train --epochs=9 --checkpoint-out=ck");
//   if (p.wait_for("resumed from", /*timeout_s=*/10)) p.signal(SIGTERM);
//   CommandResult done = p.finish();  // done.exit_code == 143 when the signal stopped it

#include <sys/types.h>

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

/// A program started in the background with its stdout and stderr read as they come.
/// `command` is run as `/bin/sh -c "exec COMMAND"`, so the process signalled is the
/// program itself (write `env VAR=value program ...` for an environment variable).
class Process {
 public:
  explicit Process(const std::string& command);
  /// Kills (SIGKILL) and reaps a process that has not been finished.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  /// Reads output until it holds `text` (from the start) or `timeout_s` has passed, or
  /// the program closed its output; true when `text` appeared.
  bool wait_for(const std::string& text, double timeout_s);
  /// Reads output for `seconds`, or until the program closes its output.
  void read_for(double seconds);
  /// Sends signal `number` to the program.
  void signal(int number);
  /// Reads the rest of the output and waits for the program to end; one still running
  /// after `timeout_s` is killed (SIGKILL) and the output says so. exit_code: the exit
  /// status, or 128 + the signal that killed it (as a shell reports it: 134 for SIGABRT).
  CommandResult finish(double timeout_s = 120);

  /// The program's process id (-1 when it could not be started).
  pid_t pid() const { return pid_; }
  /// What the program printed so far.
  const std::string& out() const { return out_; }

 private:
  /// Reads what is there within `seconds`; false once the output is closed.
  bool read_some(double seconds);

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string out_;
};

}  // namespace weft::testing

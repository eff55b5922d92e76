#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace weft::testing {

CommandResult run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string test_tmpdir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

Process::Process(const std::string& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out_ = "pipe failed";
    return;
  }
  const std::string script = "exec " + command;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    // A test binary may ignore or block signals; the program starts with the defaults.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid_ < 0) {
    ::close(fds[0]);
    out_ = "fork failed";
    return;
  }
  fd_ = fds[0];
}

Process::~Process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) ::close(fd_);
}

bool Process::read_some(double seconds) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(seconds * 1000));
  if (ready < 0 && errno == EINTR) return true;
  if (ready <= 0) return ready == 0;
  char buf[4096];
  const ssize_t n = ::read(fd_, buf, sizeof(buf));
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  out_.append(buf, static_cast<size_t>(n));
  return true;
}

bool Process::wait_for(const std::string& text, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (out_.find(text) == std::string::npos) {
    const double left = std::chrono::duration<double>(end - Clock::now()).count();
    if (left <= 0 || !read_some(left)) break;
  }
  return out_.find(text) != std::string::npos;
}

void Process::read_for(double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    const double left = std::chrono::duration<double>(end - Clock::now()).count();
    if (left <= 0 || !read_some(left)) break;
  }
}

void Process::signal(int number) {
  if (pid_ > 0) ::kill(pid_, number);
}

CommandResult Process::finish(double timeout_s) {
  if (pid_ <= 0) return {-1, out_};
  read_for(timeout_s);
  if (fd_ >= 0) {
    ::kill(pid_, SIGKILL);
    out_ += "\n[still running after " + std::to_string(timeout_s) + " s: killed]\n";
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return {code, out_};
}

}  // namespace weft::testing

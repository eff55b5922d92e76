#include "bench/process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/cpu/openblas_peer.h"

extern char** environ;

namespace weft::bench {

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string tail(const std::string& text, size_t chars) {
  return text.size() <= chars ? text : "..." + text.substr(text.size() - chars);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& set,
                          const std::set<std::string>& unset, const std::string& err_path) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e, key = kv.substr(0, kv.find('='));
    if (!set.count(key) && !unset.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out_pipe[2];
  if (pipe(out_pipe) != 0) throw SuiteError{std::string("pipe: ") + std::strerror(errno)};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw SuiteError{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out_pipe[1], STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  ProcessResult r;
  char buf[65536];
  for (ssize_t n; (n = read(out_pipe[0], buf, sizeof(buf))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    r.out.append(buf, size_t(n));
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = read_file(err_path);
  return r;
}

std::set<std::string> peer_unset(std::set<std::string> unset) {
  for (const char* var : cpu::kOpenblasHandicap) unset.insert(var);
  return unset;
}

std::string command_line(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& set) {
  std::string s;
  for (const auto& [k, v] : set) s += k + "=" + v + " ";
  for (const std::string& a : argv) s += a + " ";
  return s.substr(0, s.size() - 1);
}

ProcessResult run_or_fail(const std::string& what, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& set,
                          const std::set<std::string>& unset, const std::string& err_path) {
  ProcessResult r = run_process(argv, set, unset, err_path);
  if (r.exit_code != 0) {
    throw SuiteError{what + " failed (exit " + std::to_string(r.exit_code) + "): " +
                     command_line(argv, set) + "\n" + tail(r.err + r.out)};
  }
  return r;
}

}  // namespace weft::bench

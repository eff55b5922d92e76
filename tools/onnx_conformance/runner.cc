#include "tools/onnx_conformance/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <optional>

#include "formats/file_io.h"
#include "tools/onnx_conformance/report.h"

namespace weft::onnx_conformance {
namespace {

using Clock = std::chrono::steady_clock;

// One case on one backend.
struct Job {
  size_t case_index;
  std::string backend;
};

// A worker process: jobs go in as `INDEX\n`, results come back as one JSON line each.
struct Worker {
  pid_t pid = -1;
  int to_child = -1;
  int from_child = -1;
  std::string log_path;  // the worker's stdout and stderr, emptied before each job
  std::string buffer;    // what the worker wrote that is not yet a whole line
  std::optional<size_t> job;
  Clock::time_point started;
};

CaseResult run_one(const RunnerOptions& o, const Case& c, const std::vector<std::string>& backends) {
  return o.run_one ? o.run_one(c, backends, o.tolerance) : run_case(c, backends, o.tolerance);
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;  // the other end is gone; the reader notices
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void worker_main(int in, int out, const std::vector<Case>& cases,
                              const std::vector<Job>& jobs, const RunnerOptions& options) {
  std::FILE* f = ::fdopen(in, "r");
  char line[64];
  while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    const Job& job = jobs[std::strtoul(line, nullptr, 10)];
    // The log holds only this job's output, so that a crash's last line is its own.
    std::fflush(stdout);
    std::fflush(stderr);
    if (::ftruncate(2, 0) != 0) {}
    const CaseResult r = run_one(options, cases[job.case_index], {job.backend});
    write_all(out, case_result_to_json(r) + "\n");
  }
  ::_exit(0);
}

std::string temp_dir() {
  for (const char* v : {"TEST_TMPDIR", "TMPDIR"}) {
    if (const char* d = std::getenv(v); d != nullptr && *d != '\0') return d;
  }
  return "/tmp";
}

// The last non-empty line of the worker's log, shortened.
std::string last_line(const std::string& path) {
  StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  s = s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  return s.size() > 300 ? s.substr(0, 297) + "..." : s;
}

class Pool {
 public:
  Pool(const std::vector<Case>& cases, std::vector<Job> jobs, const RunnerOptions& options,
       std::vector<CaseResult>& results)
      : cases_(cases), jobs_(std::move(jobs)), options_(options), results_(results),
        workers_(static_cast<size_t>(std::max(1, options.jobs))) {
    for (size_t j = 0; j < jobs_.size(); ++j) {
      queue_.push_back(j);
      ++left_[jobs_[j].case_index];
    }
  }

  void run() {
    while (!queue_.empty() || busy() > 0) {
      for (Worker& w : workers_) {
        if (w.job || queue_.empty()) continue;
        if (w.pid < 0 && !spawn(w)) return;
        w.job = queue_.front();
        queue_.pop_front();
        w.started = Clock::now();
        write_all(w.to_child, std::to_string(*w.job) + "\n");
      }
      wait_for_results();
      for (Worker& w : workers_) {
        const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - w.started);
        if (w.job && elapsed.count() >= options_.timeout_s) {
          ::kill(w.pid, SIGKILL);
          lost(w, "timed out after " + std::to_string(options_.timeout_s) + " s (--timeout)");
        }
      }
    }
  }

  ~Pool() {
    for (Worker& w : workers_) {
      if (w.pid < 0) continue;
      ::close(w.to_child);  // the worker reads end-of-file and exits
      ::close(w.from_child);
      ::waitpid(w.pid, nullptr, 0);
      std::filesystem::remove(w.log_path);
    }
  }

 private:
  size_t busy() const {
    size_t n = 0;
    for (const Worker& w : workers_) n += w.job ? 1 : 0;
    return n;
  }

  bool spawn(Worker& w) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return false;
    std::string path = temp_dir() + "/onnx_conformance_worker_XXXXXX";
    const int log = ::mkstemp(path.data());
    if (log < 0) return false;
    ::fcntl(log, F_SETFL, O_APPEND);
    const pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      for (Worker& other : workers_) {  // the other workers' pipes are not this one's
        if (other.pid >= 0) ::close(other.to_child), ::close(other.from_child);
      }
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::close(log);
      worker_main(down[0], up[1], cases_, jobs_, options_);
    }
    ::close(down[0]);
    ::close(up[1]);
    ::close(log);
    w = Worker{pid, down[1], up[0], path, "", std::nullopt, {}};
    return true;
  }

  void wait_for_results() {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    for (Worker& w : workers_) {
      if (!w.job) continue;
      fds.push_back({w.from_child, POLLIN, 0});
      owners.push_back(&w);
    }
    if (fds.empty() || ::poll(fds.data(), fds.size(), /*timeout=*/500) <= 0) return;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Worker& w = *owners[k];
      char buf[4096];
      const ssize_t n = ::read(w.from_child, buf, sizeof buf);
      if (n <= 0) {
        int status = 0;
        ::waitpid(w.pid, &status, 0);
        w.pid = -2;  // reaped
        const std::string how = WIFSIGNALED(status)
                                    ? std::string("crashed (") + ::strsignal(WTERMSIG(status)) + ")"
                                    : "exited with status " + std::to_string(WEXITSTATUS(status));
        const std::string why = last_line(w.log_path);
        lost(w, how + (why.empty() ? "" : ": " + why));
        continue;
      }
      w.buffer.append(buf, static_cast<size_t>(n));
      const size_t eol = w.buffer.find('\n');
      if (eol == std::string::npos) continue;
      StatusOr<CaseResult> r = case_result_from_json(w.buffer.substr(0, eol));
      w.buffer.erase(0, eol + 1);
      const size_t j = *w.job;
      w.job.reset();
      if (r.ok()) {
        finish(j, *r);
      } else {
        finish(j, failure(j, r.error().message));
      }
    }
  }

  CaseResult failure(size_t j, const std::string& why) {
    const Case& c = cases_[jobs_[j].case_index];
    CaseResult r{c.category, c.name, model_op_types(c.dir + "/model.onnx"), {}};
    r.backends[jobs_[j].backend] = {Verdict::failed, why, std::numeric_limits<double>::infinity()};
    return r;
  }

  // The worker died (or was killed) during its job: the job fails, the worker goes.
  void lost(Worker& w, const std::string& why) {
    const size_t j = *w.job;
    if (w.pid > 0) ::waitpid(w.pid, nullptr, 0);
    ::close(w.to_child);
    ::close(w.from_child);
    std::filesystem::remove(w.log_path);
    w = Worker{};
    finish(j, failure(j, why));
  }

  void finish(size_t j, const CaseResult& r) {
    const size_t i = jobs_[j].case_index;
    CaseResult& out = results_[i];
    if (out.op_types.empty()) out.op_types = r.op_types;
    if (out.fixed_inputs.empty()) out.fixed_inputs = r.fixed_inputs;
    for (const auto& [name, b] : r.backends) out.backends[name] = b;
    if (--left_[i] == 0 && options_.on_result) options_.on_result(out);
  }

  const std::vector<Case>& cases_;
  const std::vector<Job> jobs_;
  const RunnerOptions& options_;
  std::vector<CaseResult>& results_;
  std::vector<Worker> workers_;
  std::deque<size_t> queue_;
  std::map<size_t, int> left_;  // jobs not yet finished, by case
};

}  // namespace

std::vector<CaseResult> run_cases(const std::vector<Case>& cases,
                                  const std::vector<std::vector<std::string>>& backends,
                                  const RunnerOptions& options) {
  auto backends_of = [&](size_t i) -> const std::vector<std::string>& {
    return backends.size() == 1 ? backends[0] : backends[i];
  };
  std::vector<CaseResult> results;
  for (const Case& c : cases) results.push_back({c.category, c.name, {}, {}});
  if (!options.isolate) {
    for (size_t i = 0; i < cases.size(); ++i) {
      results[i] = run_one(options, cases[i], backends_of(i));
      if (options.on_result) options.on_result(results[i]);
    }
    return results;
  }
  std::vector<Job> jobs;
  for (size_t i = 0; i < cases.size(); ++i) {
    for (const std::string& b : backends_of(i)) jobs.push_back({i, b});
    if (backends_of(i).empty() && options.on_result) options.on_result(results[i]);
  }
  ::signal(SIGPIPE, SIG_IGN);  // a worker that died mid-job must not take this process along
  Pool(cases, std::move(jobs), options, results).run();
  return results;
}

}  // namespace weft::onnx_conformance

#pragma once
// The training monitor ([Observability]) shared by the AOT training driver
// (training/driver) and the examples: a progress line, a metrics CSV and, at the end, a
// self-contained HTML report.
//
//   monitor::Progress progress(stdout, /*every=*/100);   // \r-updated on a terminal,
//   monitor::RunLog log({"test_accuracy", "test_loss"});  // plain lines otherwise
//   WEFT_RETURN_IF_ERROR(log.open_csv("metrics.csv"));
//   for (...) {
//     progress.update(...);
//     log.record({.step = t, .epoch = e, .loss = loss, .lr = lr, .examples_per_s = ...,
//                 .elapsed_s = ...}, {{"test_accuracy", 0.91}});   // metrics: when measured
//     log.end_epoch(e, seconds);
//   }
//   WEFT_RETURN_IF_ERROR(log.write_report("report.html", "cnn on Fashion-MNIST"));
//
// The CSV has one row per recorded step: `epoch,step,loss,lr,examples_per_s,elapsed_s,
// rss_mib`, then one column per metric name given to the RunLog (empty where the metric
// was not measured at that step). Each row is flushed as it is written, so the file is
// readable while training runs. The report holds inline SVG charts — training loss (and
// its moving average) and the learning rate per step, every metric per step, time per
// epoch, resident memory per step — and a summary table; no scripts from the network, no
// external files: it opens anywhere, offline.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "training/monitor/metrics.h"
#include "training/monitor/serve.h"

namespace weft::monitor {

/// The process's resident set (VmRSS) and its peak (VmHWM) in bytes; 0 where
/// /proc/self/status cannot be read.
int64_t resident_bytes();
int64_t peak_resident_bytes();

/// "m:ss", or "h:mm:ss" from an hour; "?" for a negative or infinite time.
std::string format_duration(double seconds);

/// The progress line: on a terminal one line rewritten in place at most ten times a
/// second; otherwise a plain line every `every` steps (and at the last step).
class Progress {
 public:
  /// `under_launcher`: the process runs under mpirun, srun or a torchrun-style launcher
  /// (collective::launched_by_a_launcher()), whose ranks write to a pseudo-terminal that
  /// the launcher copies into its own output, usually a log: plain lines even then.
  Progress(std::FILE* out, int64_t every, bool under_launcher = false);
  /// `step 120/4680  epoch 1/10  loss 0.4211  lr 0.001  95.3 steps/s  ETA 47s`
  void update(int64_t step, int64_t total, int64_t epoch, int64_t epochs, double loss, double lr,
              double steps_per_s);
  /// Prints a whole line, ending the progress line first on a terminal.
  void line(const std::string& text);
  /// Text appended to every progress line from now on (the driver's `  loss scale 1024
  /// skipped 3` when the step scales its loss).
  void set_suffix(std::string suffix) { suffix_ = std::move(suffix); }

 private:
  std::FILE* out_;
  int64_t every_;
  bool terminal_;
  bool open_ = false;
  double start_ = 0;
  double shown_at_ = -1;
  std::string suffix_;
};

struct StepRecord {
  int64_t step = 0;   ///< Steps taken, counting this one (1-based).
  int64_t epoch = 0;  ///< 1-based.
  double loss = 0;
  double lr = 0;
  double examples_per_s = 0;
  double elapsed_s = 0;
};

class RunLog {
 public:
  /// `metrics`: the names of the metrics recorded now and then (CSV columns, charts).
  explicit RunLog(std::vector<std::string> metrics = {});
  /// More such names (the driver's `loss_scale` and `skipped_steps` when the step scales
  /// its loss), before the CSV is opened, the dashboard served and the first record().
  void add_metrics(const std::vector<std::string>& names);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  /// Starts the CSV at `path` (overwriting it). Errors name `what` (say `--metrics-csv=P`).
  Status open_csv(const std::string& path, const std::string& what = "");
  /// One step; `metrics` holds those measured at this step (names from the constructor;
  /// an unknown name is an internal error).
  void record(const StepRecord& step, const std::map<std::string, double>& metrics = {});
  /// Epoch `epoch` (1-based) took `seconds`.
  void end_epoch(int64_t epoch, double seconds);
  /// The report also charts every metric of `metrics` (dotted names, one point per epoch;
  /// Trainer::metrics(), whose epoch CSV is Metrics::open_csv), and the dashboard shows
  /// each epoch's values. Must outlive the RunLog.
  void show_metrics(const Metrics* metrics) { metrics_ = metrics; }

  /// The live dashboard (serve.h) on `port` (0: a free one): from now on every record()
  /// and end_epoch() is published to it, and a page opened mid-run backfills what came
  /// before (the steps recorded before serve() too). Loopback unless options.host says
  /// otherwise; dashboard().url() is where.
  Status serve(int port, const ServeOptions& options = {});
  const Dashboard& dashboard() const { return dashboard_; }
  /// GPU memory in use, in MiB, sampled at every record() for the dashboard (a CUDA
  /// backend passes one; unset on the CPU).
  void set_gpu_memory_probe(std::function<double()> probe) { gpu_memory_mib_ = std::move(probe); }
  /// The dashboard's event for a recorded step (one JSON object on one line):
  /// {"step":..,"epoch":..,"loss":..,"lr":..,"examples_per_s":..,"elapsed_s":..,
  ///  "rss_mib":..,"cpu_percent":..,["gpu_mib":..,]"metrics":{NAME:VALUE,...}}.
  std::string step_event(size_t row) const;

  /// The HTML report of everything recorded, titled `title`, written atomically to
  /// `path`. Errors name the path.
  Status write_report(const std::string& path, const std::string& title) const;
  std::string report_html(const std::string& title) const;

 private:
  struct Row {
    StepRecord step;
    double rss_mib = 0;
    double cpu_percent = 0;  ///< CPU time over wall time, over the last half second or more.
    std::optional<double> gpu_mib;
    std::vector<std::optional<double>> metrics;
  };
  std::string epoch_event(int64_t epoch, double seconds) const;
  std::vector<std::string> metric_names_;
  std::vector<Row> rows_;
  std::vector<std::pair<int64_t, double>> epochs_;  ///< (epoch, seconds)
  std::FILE* csv_ = nullptr;
  const Metrics* metrics_ = nullptr;
  std::function<double()> gpu_memory_mib_;
  double last_cpu_s_ = -1, last_wall_s_ = -1;  ///< For Row::cpu_percent.
  double cpu_percent_ = 0;
  Dashboard dashboard_;
};

}  // namespace weft::monitor

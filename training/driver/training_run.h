#pragma once
// One run of the training driver (driver.h's run_training), from a parsed command line to
// the last checkpoint, as a sequence of named steps; what the AOT training binaries and
// the JIT examples (examples/fashion_mnist/train_loop.h) both run:
//
//   connect_ranks   --data-parallel: the communicator; ranks other than 0 print nothing
//   make_model      the factory's Trainable, checked; --check-numerics, --profile
//   check_files     --train/--test counts, output paths writable (before hours of training)
//   resume          --checkpoint-in (before the data: a wrong path fails in milliseconds)
//   load_dataset    --data or --train/--test in the model's types, labels checked
//   plan_steps      the global batch, steps per epoch, the run's steps, the schedule
//   open_outputs    --metrics-csv, --epoch-csv, --serve, the device's memory probe
//   announce        the `training on ...` line (and a resumed run past its end evaluated)
//   train_steps     take_step (batch t+1 taken and its copy to the device started, then
//                   step t: #31's input overlap), then evaluate, log, end of epoch,
//                   --checkpoint-every and a signal's stop, until the run's last step
//   finish          --checkpoint-out, the `done:` line, --report
//
// A step that fails ends the run with its exit status (driver.h's kExitRuntime or
// kExitUsage, or 128 + the signal that stopped it).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "training/data/loader.h"
#include "training/driver/data.h"
#include "training/driver/driver.h"
#include "training/driver/flags.h"
#include "training/driver/stop_signals.h"
#include "training/monitor/metrics.h"
#include "training/monitor/monitor.h"
#include "training/schedule.h"

namespace weft::driver {

/// `v` printed with the printf `format` (one double), as the progress lines show numbers.
std::string format_number(const char* format, double v);

/// A failure and the exit status it gives.
struct Failure {
  int status;
  Error error;
};

class TrainingRun {
 public:
  /// `out` takes the progress and results; `signals` is watched between steps.
  TrainingRun(const DriverConfig& config, const std::string& program, const ModelFactory& factory,
              std::FILE* out, const BinaryInfo& info, StopSignals& signals);

  /// The model goes before the loader: a batch it prefetched and no step took may still
  /// be read by the device until the model's executor is destroyed (loader.h's rule).
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// Runs every step in order; nullopt when the run ended well.
  std::optional<Failure> run();

 private:
  using Clock = std::chrono::steady_clock;
  /// What one training step gave, for the steps that follow it.
  struct StepResult {
    int64_t epoch = 0;  ///< 0-based: the epoch the step belongs to.
    double loss = 0;
    double lr = 0;
    double momentum = 0;  ///< Set when the schedule cycles the momentum.
    /// Loss scaling's state after the step, read back every --log-every steps and at
    /// each epoch's end when the step scales its loss.
    std::optional<LossScaleReading> loss_scale;
  };

  // The run's steps, in order (run() lists them).
  std::optional<Failure> connect_ranks();
  std::optional<Failure> make_model();
  std::optional<Failure> check_files();
  std::optional<Failure> resume();
  std::optional<Failure> load_dataset();
  std::optional<Failure> plan_steps();
  std::optional<Failure> open_outputs();
  std::optional<Failure> announce();
  std::optional<Failure> train_steps();
  std::optional<Failure> finish();

  /// connect_ranks' communicator for the model: the backend's own from `world` (cuda:
  /// NCCL on the local rank's GPU), or `world`.
  StatusOr<std::shared_ptr<collective::Communicator>> device_communicator(
      std::shared_ptr<collective::Communicator> world) const;

  // The parts of train_steps.
  void start_loader();
  /// The loader's fill: batch `step` into `into` (on the loader's thread, which alone
  /// touches order_ and order_epoch_).
  Status gather_step(int64_t step, std::vector<Tensor>& into);
  /// The loader's next batch, its copy to the device started (Trainable::prefetch), as
  /// ahead_.
  std::optional<Failure> take_batch();
  std::optional<Failure> take_step(StepResult& step);
  /// Reads loss scaling's state after step t_ into `step` when it is due, for the
  /// progress line, the run log and the epoch metrics.
  std::optional<Failure> read_loss_scale(StepResult& step);
  std::optional<Failure> evaluate_after(const StepResult& step, std::optional<Evaluation>& eval);
  void log_step(const StepResult& step, const std::optional<Evaluation>& eval);
  std::optional<Failure> end_epoch(const StepResult& step, const std::optional<Evaluation>& eval);
  std::optional<Failure> checkpoint_every();
  std::optional<Failure> stop_on_signal();

  /// The test split's metrics on rank 0; nothing without a test split or on other ranks
  /// (every rank holds the same values).
  StatusOr<std::optional<Evaluation>> evaluate();
  /// Writes --checkpoint-out (rank 0) and says so.
  std::optional<Failure> save();
  /// The `--profile` table and the loader's waits, after an epoch.
  void print_profile();

  // What the run was given.
  const DriverConfig& config_;
  const std::string& program_;
  const ModelFactory& factory_;
  std::FILE* out_;
  const BinaryInfo& info_;
  StopSignals& signals_;

  // Set by the steps, in their order.
  std::shared_ptr<collective::Communicator> comm_;
  int rank_ = 0;
  int world_size_ = 1;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> silent_{nullptr, std::fclose};
  std::unique_ptr<Trainable> model_;
  std::optional<monitor::Progress> progress_;
  std::optional<Dataset> data_;
  int64_t batch_ = 0;      ///< The global batch: the model's times the ranks.
  int64_t samples_ = 0;    ///< Training samples.
  int64_t per_epoch_ = 0;  ///< Steps per epoch (P).
  int64_t total_ = 0;      ///< The run's last step: epochs * P.
  std::unique_ptr<LrSchedule> schedule_;
  bool cycle_momentum_ = false;
  bool loss_scaling_ = false;  ///< The model's step scales its loss (Trainable::loss_scale).
  monitor::RunLog log_{{"test_accuracy", "test_loss"}};
  /// Epoch means of the loss and lr, and each epoch's test metrics: --epoch-csv's rows,
  /// numbered from the epoch a resumed run starts in.
  monitor::Metrics epoch_metrics_;
  HostPinning pinning_;

  // The loop's state. The loader is declared after what its thread reads, so that it
  // stops (is destroyed) first.
  std::vector<int64_t> order_;  ///< The loader thread's: this rank's rows of epoch order_epoch_.
  int64_t order_epoch_ = -1;
  std::unique_ptr<Loader> loader_;
  /// The batch of step t_, taken from the loader and prefetched during step t_ - 1 (the
  /// run's first: by take_step); null before the first. The loader holds it and the
  /// batch of the step running (`held` = 2).
  const std::vector<Tensor>* ahead_ = nullptr;
  int64_t t_ = 0;         ///< Steps taken (counted across runs).
  int64_t first_ = 0;     ///< The step this run started at.
  int64_t saved_at_ = -1; ///< The step of the last checkpoint this run wrote.
  Clock::time_point start_;
  Clock::time_point epoch_start_;
  double epoch_loss_ = 0;
  int64_t epoch_steps_ = 0;
};

}  // namespace weft::driver

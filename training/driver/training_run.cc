// The training driver's run (training_run.h): each step of run() below, in its order.
#include "training/driver/training_run.h"

#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>
#include <utility>

#include "runtime/backend.h"
#include "runtime/collective/watchdog.h"
#include "training/data/dataset.h"
#include "training/flag_values.h"
#include "training/learning_rate.h"

namespace weft::driver {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Failure runtime_failure(Error e) { return Failure{kExitRuntime, std::move(e)}; }
Failure usage_failure(Error e) { return Failure{kExitUsage, std::move(e)}; }

/// The checks between the model's step and evaluation signatures and the data.
Status check_model(const Trainable& model) {
  const auto& step = model.step_inputs();
  const auto& eval = model.eval_inputs();
  if (step.empty() || step[0].type.shape.rank() < 1) {
    return Error{"the model's step takes no batched input"};
  }
  if (eval.size() + 1 != step.size()) {
    return Error{"the model's evaluation takes " + std::to_string(eval.size()) +
                 " inputs; its step takes " + std::to_string(step.size()) +
                 " (the inputs, then the target), so evaluation should take " +
                 std::to_string(step.size() - 1)};
  }
  for (size_t k = 0; k < eval.size(); ++k) {
    if (eval[k].type.shape.rank() < 1 || eval[k].type.dtype != step[k].type.dtype ||
        sample_elements(eval[k].type) != sample_elements(step[k].type) ||
        eval[k].type.shape[0] != eval[0].type.shape[0]) {
      return Error{"the model's eval input '" + eval[k].name + "' " + eval[k].type.to_string() +
                   " does not take the samples of its step input '" + step[k].name + "' " +
                   step[k].type.to_string()};
    }
  }
  if (model.eval_outputs().empty() || model.eval_outputs()[0].type.shape.rank() < 1 ||
      model.eval_outputs()[0].type.shape[0] != eval[0].type.shape[0]) {
    return Error{"the model's evaluation has no output with a batch dimension"};
  }
  return Status();
}

/// Class labels must index the first eval output's classes.
Status check_classes(const Split& split, const Trainable& model) {
  if (!split.classes) return Status();
  const Type& out = model.eval_outputs()[0].type;
  const int64_t classes = sample_elements(out);
  const int64_t* c = split.classes->data<int64_t>();
  for (int64_t i = 0; i < split.classes->numel(); ++i) {
    if (c[i] < 0 || c[i] >= classes) {
      const std::string& where = split.classes_source.empty() ? split.source : split.classes_source;
      // The target column holds the labels' samples (a CSV column names their lines).
      return Error{where + ", " + split.columns.back().row(i) + ": the label " + std::to_string(c[i]) +
                   " is not one of the model's " + std::to_string(classes) + " classes (its output '" +
                   model.eval_outputs()[0].name + "' is " + out.to_string() + ")"};
    }
  }
  return Status();
}

/// --train and --test give one array per step input.
Status check_array_counts(const DriverConfig& config, const std::vector<TensorSpec>& step_inputs) {
  for (const auto& [flag, files] : {std::pair{"train", &config.train_files}, {"test", &config.test_files}}) {
    if (!files->empty()) WEFT_RETURN_IF_ERROR(check_array_count(flag, files->size(), step_inputs));
  }
  return Status();
}

/// The output files can be written, each to its own file: fails early, not after hours
/// of training (and not with one output written over another: --export-onnx over
/// --checkpoint-out lost the checkpoint).
Status check_outputs_writable(const DriverConfig& config) {
  std::vector<std::pair<std::string, std::filesystem::path>> seen;
  for (const auto& [flag, path] : {std::pair{"checkpoint-out", &config.checkpoint_out},
                                   {"metrics-csv", &config.metrics_csv}, {"epoch-csv", &config.epoch_csv},
                                   {"report", &config.report}, {"export-onnx", &config.export_onnx}}) {
    if (path->empty()) continue;
    if (auto why = unwritable_file(*path)) return Error{"--" + std::string(flag) + "=" + *path + ": " + *why};
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::weakly_canonical(*path, ec);
    for (const auto& [other, other_file] : seen) {
      if (!ec && file == other_file) {
        return Error{"--" + other + " and --" + flag + " both name " + *path + "; give each output its own file"};
      }
    }
    seen.emplace_back(flag, file);
  }
  return Status();
}

}  // namespace

std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

namespace {

// Test-only: $WEFT_TEST_FAULT=RANK:STEP:exit|hang makes rank RANK exit (status 3) or
// sleep for good before step STEP, as a rank that died or hangs does
// (tests/data_parallel/launch_test.cc).
void inject_test_fault(int rank, int64_t step) {
  const char* fault = std::getenv("WEFT_TEST_FAULT");
  if (fault == nullptr) return;
  int fault_rank = -1;
  long long fault_step = -1;
  char what[8] = {};
  if (std::sscanf(fault, "%d:%lld:%7s", &fault_rank, &fault_step, what) != 3) return;
  if (fault_rank != rank || fault_step != step) return;
  std::fflush(nullptr);
  if (std::string(what) == "exit") _exit(3);
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace

TrainingRun::TrainingRun(const DriverConfig& config, const std::string& program, const ModelFactory& factory,
                         std::FILE* out, const BinaryInfo& info, StopSignals& signals)
    : config_(config), program_(program), factory_(factory), out_(out), info_(info), signals_(signals) {}

TrainingRun::~TrainingRun() { model_.reset(); }

std::optional<Failure> TrainingRun::run() {
  using Step = std::optional<Failure> (TrainingRun::*)();
  static constexpr Step kSteps[] = {
      &TrainingRun::connect_ranks, &TrainingRun::make_model,   &TrainingRun::check_files,
      &TrainingRun::resume,        &TrainingRun::load_dataset, &TrainingRun::plan_steps,
      &TrainingRun::open_outputs,  &TrainingRun::announce,     &TrainingRun::train_steps,
      &TrainingRun::finish,
  };
  for (Step step : kSteps) {
    if (std::optional<Failure> failure = (this->*step)()) return failure;
  }
  return std::nullopt;
}

namespace {

// The processes a launcher says it started (Open MPI, PMI, Slurm, torchrun-style), or 0.
int launched_processes() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}) {
    if (const char* value = std::getenv(variable)) return std::atoi(value);
  }
  return 0;
}

}  // namespace

// --data-parallel: every rank of the launch (mpirun, srun, the torchrun variables) builds
// the same model with the launch's communicator (MPI or Gloo) and trains on its rows of
// each global batch (the model's batch times N); rank 0 alone prints, evaluates and
// writes files.
std::optional<Failure> TrainingRun::connect_ranks() {
  if (config_.data_parallel) {
    if (!info_.world_from_environment || !info_.launched_by_a_launcher) {
      return usage_failure(Error{"--data-parallel: this binary links no MPI (it was built without "
                                 "data_parallel = True, so it trains in one process); drop "
                                 "--data-parallel, or build it with data_parallel = True "
                                 "(weft_binary, tools/aot/weft.bzl)"});
    }
    StatusOr<std::shared_ptr<collective::Communicator>> world =
        info_.world_from_environment(std::chrono::seconds(config_.collective_timeout));
    if (!world.ok()) {
      // No launcher is the command line's fault; a launch that fails to join is not.
      Error e{"--data-parallel: " + world.error().message};
      return info_.launched_by_a_launcher() ? runtime_failure(e) : usage_failure(e);
    }
    StatusOr<std::shared_ptr<collective::Communicator>> device = device_communicator(*world);
    if (!device.ok()) return runtime_failure(Error{"--data-parallel: " + device.error().message});
    comm_ = *device;
    rank_ = comm_->rank();
    world_size_ = comm_->world_size();
  }
  const bool under_launcher = info_.launched_by_a_launcher && info_.launched_by_a_launcher();
  if (!config_.data_parallel && under_launcher && launched_processes() > 1) {
    // `mpirun -np 2 PROGRAM` without the switch: two whole runs racing to write the same files.
    std::fprintf(stderr,
                 "warning: a launcher started %d processes, but without --data-parallel each trains "
                 "alone on all the data and writes the same files; add --data-parallel to train as one\n",
                 launched_processes());
  }
  if (rank_ != 0) {
    silent_.reset(std::fopen("/dev/null", "w"));
    if (!silent_) return runtime_failure(Error{"--data-parallel: rank " + std::to_string(rank_) + " cannot open /dev/null"});
    out_ = silent_.get();
  }
  // Plain lines (no terminal escapes) in the logs of a job started by mpirun or srun.
  progress_.emplace(out_, config_.log_every, under_launcher);
  // Joined: from here a stop waits for the step under way. Until here a signal ended the
  // process at once, as a rendezvous may wait --collective-timeout for a peer that never
  // comes, with nothing to save.
  signals_.defer();
  return std::nullopt;
}

// The communicator the model's steps reduce with: the world itself (cpu), or the one its
// backend makes from it on this rank's device (cuda: NCCL on the GPU of the local rank);
// a backend this binary does not link (in-process tests name none) leaves the world as it
// is — runtime/backend.h's step_communicator, which the data-parallel tests call too.
StatusOr<std::shared_ptr<collective::Communicator>> TrainingRun::device_communicator(
    std::shared_ptr<collective::Communicator> world) const {
  const int local_rank = info_.local_rank ? info_.local_rank() : 0;
  return step_communicator(info_.backend, std::move(world), local_rank,
                           std::chrono::seconds(config_.collective_timeout));
}

std::optional<Failure> TrainingRun::make_model() {
  StatusOr<std::unique_ptr<Trainable>> made = factory_(model_options(config_, comm_));
  if (!made.ok()) return runtime_failure(made.error());
  model_ = std::move(*made);
  if (Status s = check_model(*model_); !s.ok()) return runtime_failure(s.error());
  if (config_.check_numerics) {
    if (Status s = model_->set_check_numerics(true); !s.ok()) return runtime_failure(s.error());
  }
  if (config_.profile) {
    if (Status s = model_->set_profiling(true); !s.ok()) return runtime_failure(s.error());
  }
  return std::nullopt;
}

std::optional<Failure> TrainingRun::check_files() {
  if (Status s = check_array_counts(config_, model_->step_inputs()); !s.ok()) return usage_failure(s.error());
  if (rank_ != 0) return std::nullopt;  // rank 0 alone writes them
  if (Status s = check_outputs_writable(config_); !s.ok()) return runtime_failure(s.error());
  if (!config_.export_onnx.empty()) {
    if (Status s = model_->check_onnx_export(); !s.ok()) {
      return runtime_failure(Error{"--export-onnx=" + config_.export_onnx + ": " + s.error().message});
    }
  }
  return std::nullopt;
}

std::optional<Failure> TrainingRun::resume() {
  if (config_.checkpoint_in.empty()) return std::nullopt;
  StatusOr<LoadReport> report = model_->load(config_.checkpoint_in, config_.partial_load);
  if (!report.ok()) return runtime_failure(report.error());
  if (config_.partial_load) {
    progress_->line("partial load of " + config_.checkpoint_in + ": " + partial_load_report(*report));
  }
  progress_->line("resumed from " + config_.checkpoint_in + " at step " + std::to_string(model_->steps()));
  return std::nullopt;
}

std::optional<Failure> TrainingRun::load_dataset() {
  StatusOr<Dataset> data = config_.train_files.empty()
                               ? load_fashion_mnist(config_.data_dir, model_->step_inputs())
                               : load_npy(config_.train_files, config_.test_files, model_->step_inputs());
  if (!data.ok()) return runtime_failure(data.error());
  data_ = std::move(*data);
  if (Status s = check_classes(data_->train, *model_); !s.ok()) return runtime_failure(s.error());
  if (data_->test) {
    if (Status s = check_classes(*data_->test, *model_); !s.ok()) return runtime_failure(s.error());
  }
  return std::nullopt;
}

std::optional<Failure> TrainingRun::plan_steps() {
  batch_ = model_->step_inputs()[0].type.shape[0] * world_size_;  // the global batch
  samples_ = data_->train.size();
  per_epoch_ = samples_ / batch_;  // the last partial batch is dropped
  if (per_epoch_ == 0) {
    return runtime_failure(Error{data_->train.source + ": " + std::to_string(samples_) +
                                 " training samples do not make one batch of " + std::to_string(batch_) +
                                 (comm_ ? " (the model's batch size " + std::to_string(batch_ / world_size_) +
                                              " times " + std::to_string(world_size_) + " ranks)"
                                        : std::string(" (the model's batch size)"))});
  }
  if (config_.max_steps > 0) per_epoch_ = std::min(per_epoch_, config_.max_steps);
  if (config_.epochs > std::numeric_limits<int64_t>::max() / per_epoch_) {
    return usage_failure(Error{"--epochs=" + std::to_string(config_.epochs) + ": " + std::to_string(per_epoch_) +
                               " steps per epoch make more steps than 64 bits count"});
  }
  total_ = config_.epochs * per_epoch_;
  t_ = first_ = model_->steps();
  StatusOr<std::unique_ptr<LrSchedule>> schedule =
      make_schedule(config_, config_.lr.value_or(model_->lr()), total_);
  if (!schedule.ok()) return usage_failure(schedule.error());
  schedule_ = std::move(*schedule);
  // A schedule that cycles the momentum (onecycle, cyclic) sets it where the model's step
  // takes it as an input; elsewhere the momentum stays as compiled (announce says so).
  cycle_momentum_ = schedule_->momentum_at(0).has_value() && model_->takes_momentum();
  return std::nullopt;
}

std::optional<Failure> TrainingRun::open_outputs() {
  const bool lead = rank_ == 0;
  StatusOr<std::optional<LossScaleReading>> scaling = model_->loss_scale();
  if (!scaling.ok()) return runtime_failure(scaling.error());
  loss_scaling_ = scaling->has_value();
  if (loss_scaling_) log_.add_metrics({"loss_scale", "skipped_steps"});
  if (!config_.metrics_csv.empty() && lead) {
    if (Status s = log_.open_csv(config_.metrics_csv, "--metrics-csv=" + config_.metrics_csv); !s.ok()) {
      return runtime_failure(s.error());
    }
  }
  epoch_metrics_.set_goal("test_accuracy", monitor::Goal::maximize);
  epoch_metrics_.skip_epochs(first_ / per_epoch_);
  if (!config_.epoch_csv.empty() && lead) {
    if (Status s = epoch_metrics_.open_csv(config_.epoch_csv, "--epoch-csv=" + config_.epoch_csv); !s.ok()) {
      return runtime_failure(s.error());
    }
  }
  if (config_.serve >= 0 && lead) {
    if (Status s = log_.serve(static_cast<int>(config_.serve)); !s.ok()) {
      return usage_failure(Error{"--serve=" + std::to_string(config_.serve) + ": " + s.error().message});
    }
    progress_->line("dashboard: " + log_.dashboard().url());
  }
  // GPU memory on the dashboard and in the monitor, and the loader's pinned buffers,
  // where the backend has them.
  if (!info_.backend.empty()) {
    if (StatusOr<const Backend*> b = find_backend(info_.backend); b.ok()) {
      if ((*b)->device_memory_used_mib) log_.set_gpu_memory_probe((*b)->device_memory_used_mib);
      pinning_ = HostPinning{(*b)->pin_host_memory, (*b)->unpin_host_memory};
    }
  }
  return std::nullopt;
}

std::optional<Failure> TrainingRun::announce() {
  std::string momentum_text;
  if (schedule_->momentum_at(0).has_value() && !cycle_momentum_) {
    momentum_text = " (momentum not cycled: the model's step compiles it in; build its optimizer with "
                    "with_scheduled_momentum())";
  }
  const std::string test_text =
      data_->test ? std::to_string(data_->test->size()) + " test samples (eval batch " +
                        std::to_string(model_->eval_inputs()[0].type.shape[0]) + ")"
                  : "no test split";
  const std::string ranks =
      comm_ ? " (" + std::to_string(world_size_) + " ranks x " + std::to_string(batch_ / world_size_) + ")"
            : std::string();
  const std::string precision =
      config_.precision == DType::f32 ? std::string() : ", mixed precision " + std::string(dtype_name(config_.precision));
  progress_->line("training on " + std::to_string(samples_) + " samples (" + data_->train.source + "), batch " +
                  std::to_string(batch_) + ranks + precision + ", " + std::to_string(per_epoch_) + " steps per epoch, " +
                  std::to_string(config_.epochs) + (config_.epochs == 1 ? " epoch (" : " epochs (") +
                  std::to_string(total_) + " steps); " + schedule_->describe() + momentum_text + "; " +
                  test_text);
  if (t_ < total_) return std::nullopt;
  // A checkpoint at or past the run's end: nothing to train, the checkpoint evaluated.
  progress_->line("nothing to train: the model is at step " + std::to_string(t_) + ", the run ends at step " +
                  std::to_string(total_));
  StatusOr<std::optional<Evaluation>> e = evaluate();
  if (!e.ok()) return runtime_failure(e.error());
  if (*e) progress_->line("step " + std::to_string(t_) + ": " + (*e)->to_string());
  return std::nullopt;
}

std::optional<Failure> TrainingRun::train_steps() {
  start_ = epoch_start_ = Clock::now();
  start_loader();
  while (t_ < total_) {
    StepResult step;
    if (auto f = take_step(step)) return f;
    std::optional<Evaluation> eval;
    if (auto f = evaluate_after(step, eval)) return f;
    log_step(step, eval);
    if (t_ % per_epoch_ == 0) {
      if (auto f = end_epoch(step, eval)) return f;
    }
    if (auto f = checkpoint_every()) return f;
    if (auto f = stop_on_signal()) return f;
  }
  return std::nullopt;
}

// Batch t+2 is gathered on the loader's thread while step t runs and batch t+1 is copied
// to the device (training/data/loader.h): the steps hold two batches, t's and t+1's.
void TrainingRun::start_loader() {
  std::vector<Type> batch_types;
  for (const TensorSpec& spec : model_->step_inputs()) batch_types.push_back(spec.type);
  loader_ = std::make_unique<Loader>(
      t_, total_, batch_types, [this](int64_t step, std::vector<Tensor>& into) { return gather_step(step, into); },
      pinning_, /*held=*/2);
  if (loader_->pin_error()) {
    progress_->line("note: the batch buffers could not be pinned (" + loader_->pin_error()->message +
                    "); batches are copied to the device from pageable memory");
  }
}

Status TrainingRun::gather_step(int64_t step, std::vector<Tensor>& into) {
  const int64_t epoch = step / per_epoch_, index = step % per_epoch_;
  if (epoch != order_epoch_) {
    order_ = rank_epoch_rows(config_.shuffle_seed, epoch, samples_, batch_, rank_, world_size_);
    order_epoch_ = epoch;
  }
  const int64_t share = batch_ / world_size_;
  gather_batch(data_->train.columns, order_.data() + index * share, share, /*rank=*/0, /*world=*/1, into);
  return Status();
}

std::optional<Failure> TrainingRun::take_batch() {
  StatusOr<const std::vector<Tensor>*> batch = loader_->next();
  if (!batch.ok()) return runtime_failure(batch.error());
  if (Status s = model_->prefetch(**batch); !s.ok()) return runtime_failure(s.error());
  ahead_ = *batch;
  return std::nullopt;
}

/// Step t_ with its batch, learning rate and momentum; the progress line after it. Batch
/// t_ + 1 is taken first and its copy to the device started, so that the copy overlaps
/// step t_ (#31's input overlap; nothing on cpu); the loader hands back batch t_ - 1.
std::optional<Failure> TrainingRun::take_step(StepResult& step) {
  step.epoch = t_ / per_epoch_;
  if (ahead_ == nullptr) {  // the run's first step
    if (auto f = take_batch()) return f;
  }
  const std::vector<Tensor>* inputs = ahead_;
  ahead_ = nullptr;
  if (t_ + 1 < total_) {
    if (auto f = take_batch()) return f;
  }
  step.lr = schedule_->lr_at(t_);
  if (Status s = check_set_lr(step.lr); !s.ok()) {
    // A schedule whose flags each pass can still reach a bad rate (--lr-gamma=1e308 makes
    // step 3's infinite): name the schedule and the step, not only set_lr's value.
    return runtime_failure(Error{schedule_->describe() + " at step " + std::to_string(t_ + 1) +
                                 ": " + s.error().message});
  }
  model_->set_lr(step.lr);
  if (cycle_momentum_) {
    step.momentum = schedule_->momentum_at(t_).value_or(0);
    if (Status s = model_->set_momentum(step.momentum); !s.ok()) return runtime_failure(s.error());
  }
  collective::note_step(t_ + 1);  // names the step's collectives in a fault's message
  inject_test_fault(rank_, t_ + 1);
  StatusOr<double> loss = model_->step(*inputs);
  if (!loss.ok()) return runtime_failure(loss.error());
  step.loss = *loss;
  ++t_;
  epoch_metrics_.record("loss", step.loss);
  epoch_metrics_.record("lr", step.lr);
  if (cycle_momentum_) epoch_metrics_.record("momentum", step.momentum);
  if (auto f = read_loss_scale(step)) return f;
  epoch_loss_ += step.loss;
  ++epoch_steps_;
  const double steps_per_s = static_cast<double>(t_ - first_) / std::max(seconds_since(start_), 1e-9);
  progress_->update(t_, total_, step.epoch, config_.epochs, step.loss, step.lr, steps_per_s);
  return std::nullopt;
}

std::optional<Failure> TrainingRun::read_loss_scale(StepResult& step) {
  if (!loss_scaling_ || (t_ % config_.log_every != 0 && t_ % per_epoch_ != 0 && t_ != total_)) {
    return std::nullopt;
  }
  StatusOr<std::optional<LossScaleReading>> reading = model_->loss_scale();
  if (!reading.ok()) return runtime_failure(reading.error());
  step.loss_scale = **reading;
  epoch_metrics_.record("loss_scale", step.loss_scale->scale);
  epoch_metrics_.record("skipped_steps", static_cast<double>(step.loss_scale->skipped_steps));
  progress_->set_suffix("  loss scale " + format_number("%g", step.loss_scale->scale) + "  skipped " +
                        std::to_string(step.loss_scale->skipped_steps));
  return std::nullopt;
}

/// Evaluates after an epoch's last step and every --eval-every steps; the line of an
/// evaluation within an epoch (the epoch's line carries the other).
std::optional<Failure> TrainingRun::evaluate_after(const StepResult& step, std::optional<Evaluation>& eval) {
  const bool epoch_end = t_ % per_epoch_ == 0;
  if (!epoch_end && !(config_.eval_every > 0 && t_ % config_.eval_every == 0)) return std::nullopt;
  StatusOr<std::optional<Evaluation>> e = evaluate();
  if (!e.ok()) return runtime_failure(e.error());
  eval = std::move(*e);
  if (eval && !epoch_end) {
    progress_->line("step " + std::to_string(t_) + " (epoch " + std::to_string(step.epoch + 1) + "/" +
                    std::to_string(config_.epochs) + "): " + eval->to_string());
  }
  return std::nullopt;
}

/// The step's row of the run log (--metrics-csv, --serve, --report).
void TrainingRun::log_step(const StepResult& step, const std::optional<Evaluation>& eval) {
  std::map<std::string, double> metrics;
  if (eval && eval->accuracy) metrics["test_accuracy"] = *eval->accuracy;
  if (eval && eval->loss) metrics["test_loss"] = *eval->loss;
  if (step.loss_scale) {
    metrics["loss_scale"] = step.loss_scale->scale;
    metrics["skipped_steps"] = static_cast<double>(step.loss_scale->skipped_steps);
  }
  const double now = seconds_since(start_);
  log_.record({.step = t_, .epoch = step.epoch + 1, .loss = step.loss, .lr = step.lr,
               .examples_per_s = static_cast<double>((t_ - first_) * batch_) / std::max(now, 1e-9),
               .elapsed_s = now},
              metrics);
}

/// The epoch's line, its --epoch-csv row, the --profile table; a fresh epoch.
std::optional<Failure> TrainingRun::end_epoch(const StepResult& step, const std::optional<Evaluation>& eval) {
  const double seconds = seconds_since(epoch_start_);
  char line[160];
  std::snprintf(line, sizeof(line), "epoch %lld/%lld: mean loss %.4f, %.1f s",
                static_cast<long long>(step.epoch + 1), static_cast<long long>(config_.epochs),
                epoch_loss_ / static_cast<double>(epoch_steps_), seconds);
  progress_->line(std::string(line) + (eval ? ", " + eval->to_string() : ""));
  log_.end_epoch(step.epoch + 1, seconds);
  if (eval && eval->accuracy) epoch_metrics_.record("test_accuracy", *eval->accuracy);
  if (eval && eval->loss) epoch_metrics_.record("test_loss", *eval->loss);
  if (Status s = epoch_metrics_.flush(); !s.ok()) return runtime_failure(s.error());
  if (config_.profile) print_profile();
  epoch_loss_ = 0;
  epoch_steps_ = 0;
  epoch_start_ = Clock::now();
  return std::nullopt;
}

void TrainingRun::print_profile() {
  progress_->line(model_->profile_report());
  progress_->line("data loader: the steps waited " + format_number("%.3f", loader_->wait_seconds()) +
                  " s for batches the loader's thread took " + format_number("%.3f", loader_->fill_seconds()) +
                  " s to gather (" + std::to_string(t_ - first_) + " steps so far)");
}

std::optional<Failure> TrainingRun::checkpoint_every() {
  if (config_.checkpoint_every <= 0 || t_ % config_.checkpoint_every != 0) return std::nullopt;
  if (auto f = save()) return f;
  saved_at_ = t_;
  return std::nullopt;
}

/// SIGINT or SIGTERM: the step is done; --checkpoint-out is written and the run ends
/// with 128 + the signal.
std::optional<Failure> TrainingRun::stop_on_signal() {
  const int number = signals_.received();
  if (number == 0) return std::nullopt;
  const std::string name = number == SIGINT ? "SIGINT" : "SIGTERM";
  std::string message = "interrupted by " + name + " at step " + std::to_string(t_);
  if (!config_.checkpoint_out.empty()) {
    if (saved_at_ != t_) {
      if (auto f = save()) return f;
    }
    message += "; resume with --checkpoint-in=" + config_.checkpoint_out;
  }
  return Failure{128 + number, Error{message}};
}

std::optional<Failure> TrainingRun::finish() {
  if (!config_.checkpoint_out.empty() && saved_at_ != t_) {
    if (auto f = save()) return f;
  }
  if (!config_.export_onnx.empty() && rank_ == 0) {  // after the checkpoint, which it cannot lose
    if (Status s = model_->export_onnx(config_.export_onnx); !s.ok()) {
      return runtime_failure(Error{"--export-onnx=" + config_.export_onnx + ": " + s.error().message});
    }
    progress_->line("onnx: " + config_.export_onnx + " (step " + std::to_string(model_->steps()) + ")");
  }
  if (t_ > first_) {
    const double seconds = seconds_since(start_);
    progress_->line("done: " + std::to_string(t_ - first_) + " steps in " + format_number("%.1f", seconds) +
                    " s (" + format_number("%.1f", (t_ - first_) / std::max(seconds, 1e-9)) + " steps/s)");
  }
  if (!config_.report.empty() && rank_ == 0) {
    if (Status s = log_.write_report(config_.report, program_ + ": training report"); !s.ok()) {
      return runtime_failure(s.error());
    }
    progress_->line("report: " + config_.report);
  }
  return std::nullopt;
}

StatusOr<std::optional<Evaluation>> TrainingRun::evaluate() {
  if (!data_->test || rank_ != 0) return std::optional<Evaluation>();  // every rank has the same values
  WEFT_ASSIGN_OR_RETURN(Evaluation e, evaluate_split(*model_, *data_->test));
  return std::optional<Evaluation>(std::move(e));
}

std::optional<Failure> TrainingRun::save() {
  if (rank_ != 0) return std::nullopt;
  if (Status s = model_->save(config_.checkpoint_out); !s.ok()) return runtime_failure(s.error());
  progress_->line("checkpoint: " + config_.checkpoint_out + " (step " + std::to_string(model_->steps()) + ")");
  return std::nullopt;
}

}  // namespace weft::driver

#include "runtime/driver/driver.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>

#include "runtime/backend.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/driver/flags.h"
#include "runtime/driver/stop_signals.h"
#include "runtime/flag_values.h"
#include "runtime/out_of_memory.h"
#include "runtime/monitor/metrics.h"
#include "runtime/monitor/monitor.h"

namespace weft::driver {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

/// A failure and the exit status it gives.
struct Failure {
  int status;
  Error error;
};

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

StatusOr<Dataset> load_data(const DriverConfig& config, const Trainable& model) {
  if (config.train_files.empty()) return load_fashion_mnist(config.data_dir, model.step_inputs());
  return load_npy(config.train_files, config.test_files, model.step_inputs());
}

/// The whole run once the flags are parsed; failures carry their exit status.
std::optional<Failure> train(const DriverConfig& config, const std::string& program, const ModelFactory& factory,
                              std::FILE* out, const BinaryInfo& info, const StopSignals& signals) {
  auto runtime = [](Error e) { return Failure{kExitRuntime, std::move(e)}; };
  auto usage = [](Error e) { return Failure{kExitUsage, std::move(e)}; };

  // --data-parallel: every rank of `mpirun -np N` builds the same model with MPI as its
  // communicator and trains on its rows of each global batch (the model's batch times N);
  // rank 0 alone prints, evaluates and writes files.
  std::shared_ptr<collective::Communicator> comm;
  if (config.data_parallel) {
    if (!info.mpi_world || !info.launched_by_mpi_launcher) {
      return usage(Error{"--data-parallel: this binary links no MPI" +
                         (info.backend.empty() ? std::string()
                                               : " (its model was compiled for " + info.backend +
                                                     ", which trains in one process)") +
                         "; drop --data-parallel, or build the model for cpu with "
                         "data_parallel = True"});
    }
    if (!info.launched_by_mpi_launcher()) {
      return usage(Error{"--data-parallel: this process was not started by an MPI launcher; run it as "
                         "`mpirun -np N " + program + " --data-parallel ...` (or `srun -n N ...`), or "
                         "drop --data-parallel to train in one process"});
    }
    StatusOr<std::shared_ptr<collective::Communicator>> world = info.mpi_world();
    if (!world.ok()) return runtime(Error{"--data-parallel: " + world.error().message});
    comm = *world;
  }
  const int rank = comm ? comm->rank() : 0, world_size = comm ? comm->world_size() : 1;
  const bool lead = rank == 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> silent(nullptr, std::fclose);
  if (!lead) {
    silent.reset(std::fopen("/dev/null", "w"));
    if (!silent) return runtime(Error{"--data-parallel: rank " + std::to_string(rank) + " cannot open /dev/null"});
    out = silent.get();
  }
  StatusOr<std::unique_ptr<Trainable>> made = factory(config.seed, static_cast<int>(config.threads), comm, config.max_memory);
  if (!made.ok()) return runtime(made.error());
  Trainable& model = **made;
  if (Status s = check_model(model); !s.ok()) return runtime(s.error());
  if (config.check_numerics) {
    if (Status s = model.set_check_numerics(true); !s.ok()) return runtime(s.error());
  }
  if (config.profile) {
    if (Status s = model.set_profiling(true); !s.ok()) return runtime(s.error());
  }
  const auto& step_inputs = model.step_inputs();
  for (const auto& [flag, files] : {std::pair{"train", &config.train_files}, {"test", &config.test_files}}) {
    if (!files->empty() && files->size() != step_inputs.size()) {
      std::string names;
      for (const TensorSpec& s : step_inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
      return usage(Error{"--" + std::string(flag) + " gives " + std::to_string(files->size()) +
                         " arrays; the model's step takes " + std::to_string(step_inputs.size()) +
                         " (the inputs, then the target): " + names});
    }
  }
  for (const auto& [flag, path] : {std::pair{"checkpoint-out", &config.checkpoint_out},
                                   {"metrics-csv", &config.metrics_csv}, {"epoch-csv", &config.epoch_csv},
                                   {"report", &config.report}}) {
    if (path->empty() || !lead) continue;
    // Fails early, not after hours of training, when `path` cannot be written.
    if (auto why = unwritable_file(*path)) return runtime(Error{"--" + std::string(flag) + "=" + *path + ": " + *why});
  }

  // The checkpoint before the data: a wrong path fails in milliseconds.
  // Plain lines (no terminal escapes) in the logs of a job started by mpirun or srun.
  const bool under_mpi = info.launched_by_mpi_launcher && info.launched_by_mpi_launcher();
  monitor::Progress progress(out, config.log_every, under_mpi);
  if (!config.checkpoint_in.empty()) {
    StatusOr<LoadReport> report = model.load(config.checkpoint_in, config.partial_load);
    if (!report.ok()) return runtime(report.error());
    if (config.partial_load) progress.line("partial load of " + config.checkpoint_in + ": " + partial_load_report(*report));
    progress.line("resumed from " + config.checkpoint_in + " at step " + std::to_string(model.steps()));
  }
  StatusOr<Dataset> data = load_data(config, model);
  if (!data.ok()) return runtime(data.error());
  if (Status s = check_classes(data->train, model); !s.ok()) return runtime(s.error());
  if (data->test) {
    if (Status s = check_classes(*data->test, model); !s.ok()) return runtime(s.error());
  }
  const int64_t batch = step_inputs[0].type.shape[0] * world_size;  // the global batch
  const int64_t samples = data->train.size();
  int64_t per_epoch = samples / batch;  // the last partial batch is dropped
  if (per_epoch == 0) {
    return runtime(Error{data->train.source + ": " + std::to_string(samples) +
                         " training samples do not make one batch of " + std::to_string(batch) +
                         (comm ? " (the model's batch size " + std::to_string(batch / world_size) +
                                     " times " + std::to_string(world_size) + " ranks)"
                               : std::string(" (the model's batch size)"))});
  }
  if (config.max_steps > 0) per_epoch = std::min(per_epoch, config.max_steps);
  if (config.epochs > std::numeric_limits<int64_t>::max() / per_epoch) {
    return usage(Error{"--epochs=" + std::to_string(config.epochs) + ": " + std::to_string(per_epoch) +
                       " steps per epoch make more steps than 64 bits count"});
  }
  const int64_t total = config.epochs * per_epoch;

  const double base_lr = config.lr.value_or(model.lr());
  StatusOr<std::unique_ptr<LrSchedule>> schedule = make_schedule(config, base_lr, total);
  if (!schedule.ok()) return usage(schedule.error());

  monitor::RunLog log({"test_accuracy", "test_loss"});
  if (!config.metrics_csv.empty() && lead) {
    if (Status s = log.open_csv(config.metrics_csv, "--metrics-csv=" + config.metrics_csv); !s.ok()) {
      return runtime(s.error());
    }
  }
  // Epoch means of the loss and lr, and each epoch's test metrics: --epoch-csv's rows,
  // numbered from the epoch a resumed run starts in.
  monitor::Metrics epoch_metrics;
  epoch_metrics.set_goal("test_accuracy", monitor::Goal::maximize);
  epoch_metrics.skip_epochs(model.steps() / per_epoch);
  if (!config.epoch_csv.empty() && lead) {
    if (Status s = epoch_metrics.open_csv(config.epoch_csv, "--epoch-csv=" + config.epoch_csv); !s.ok()) {
      return runtime(s.error());
    }
  }
  if (config.serve >= 0 && lead) {
    if (Status s = log.serve(static_cast<int>(config.serve)); !s.ok()) {
      return usage(Error{"--serve=" + std::to_string(config.serve) + ": " + s.error().message});
    }
    progress.line("dashboard: " + log.dashboard().url());
  }
  // GPU memory on the dashboard and in the monitor, and the loader's pinned buffers,
  // where the backend has them.
  HostPinning pinning;
  if (!info.backend.empty()) {
    if (StatusOr<const Backend*> b = find_backend(info.backend); b.ok()) {
      if ((*b)->device_memory_used_mib) log.set_gpu_memory_probe((*b)->device_memory_used_mib);
      pinning = HostPinning{(*b)->pin_host_memory, (*b)->unpin_host_memory};
    }
  }
  // A schedule that cycles the momentum (onecycle, cyclic) sets it where the model's step
  // takes it as an input; elsewhere the momentum stays as compiled, and the line says so.
  const bool schedule_cycles = (*schedule)->momentum_at(0).has_value();
  const bool cycle_momentum = schedule_cycles && model.takes_momentum();
  std::string momentum_text;
  if (schedule_cycles && !cycle_momentum) {
    momentum_text = " (momentum not cycled: the model's step compiles it in; build its optimizer with "
                    "with_scheduled_momentum())";
  }
  std::string test_text = data->test ? std::to_string(data->test->size()) + " test samples (eval batch " +
                                           std::to_string(model.eval_inputs()[0].type.shape[0]) + ")"
                                     : "no test split";
  progress.line("training on " + std::to_string(samples) + " samples (" + data->train.source + "), batch " +
                std::to_string(batch) +
                (comm ? " (" + std::to_string(world_size) + " ranks x " + std::to_string(batch / world_size) + ")"
                      : std::string()) +
                ", " + std::to_string(per_epoch) + " steps per epoch, " +
                std::to_string(config.epochs) + (config.epochs == 1 ? " epoch (" : " epochs (") +
                std::to_string(total) + " steps); " +
                (*schedule)->describe() + momentum_text + "; " + test_text);

  auto evaluate = [&]() -> StatusOr<std::optional<Evaluation>> {
    if (!data->test || !lead) return std::optional<Evaluation>();  // every rank has the same values
    WEFT_ASSIGN_OR_RETURN(Evaluation e, evaluate_split(model, *data->test));
    return std::optional<Evaluation>(std::move(e));
  };
  auto save = [&]() -> std::optional<Failure> {
    if (!lead) return std::nullopt;
    if (Status s = model.save(config.checkpoint_out); !s.ok()) return runtime(s.error());
    progress.line("checkpoint: " + config.checkpoint_out + " (step " + std::to_string(model.steps()) + ")");
    return std::nullopt;
  };

  int64_t t = model.steps();
  if (t >= total) {
    progress.line("nothing to train: the model is at step " + std::to_string(t) + ", the run ends at step " +
                  std::to_string(total));
    StatusOr<std::optional<Evaluation>> e = evaluate();
    if (!e.ok()) return runtime(e.error());
    if (*e) progress.line("step " + std::to_string(t) + ": " + (*e)->to_string());
  }

  const auto start = Clock::now();
  const int64_t first = t;
  // Batch t+1 is gathered on the loader's thread while step t runs (runtime/data/loader.h).
  // Only that thread touches `order`.
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  std::vector<Type> batch_types;
  for (const TensorSpec& spec : step_inputs) batch_types.push_back(spec.type);
  Loader loader(t, total, batch_types, [&](int64_t step, std::vector<Tensor>& into) -> Status {
    const int64_t epoch = step / per_epoch, index = step % per_epoch;
    if (epoch != order_epoch) {
      order = epoch_order(config.shuffle_seed, epoch, samples);
      order_epoch = epoch;
    }
    gather_batch(data->train.columns, order.data() + index * batch, batch, rank, world_size, into);
    return Status();
  }, pinning);
  if (loader.pin_error()) {
    progress.line("note: the batch buffers could not be pinned (" + loader.pin_error()->message +
                  "); batches are copied to the device from pageable memory");
  }
  double epoch_loss = 0;
  int64_t epoch_steps = 0;
  auto epoch_start = start;
  int64_t saved_at = -1;
  while (t < total) {
    const int64_t epoch = t / per_epoch;
    StatusOr<const std::vector<Tensor>*> inputs = loader.next();
    if (!inputs.ok()) return runtime(inputs.error());
    const double lr = (*schedule)->lr_at(t);
    model.set_lr(lr);
    const double momentum = cycle_momentum ? (*schedule)->momentum_at(t).value_or(0) : 0;
    if (cycle_momentum) {
      if (Status s = model.set_momentum(momentum); !s.ok()) return runtime(s.error());
    }
    StatusOr<double> loss = model.step(**inputs);
    if (!loss.ok()) return runtime(loss.error());
    ++t;
    epoch_metrics.record("loss", *loss);
    epoch_metrics.record("lr", lr);
    if (cycle_momentum) epoch_metrics.record("momentum", momentum);
    epoch_loss += *loss;
    ++epoch_steps;
    const double elapsed = seconds_since(start);
    progress.update(t, total, epoch, config.epochs, *loss, lr, (t - first) / std::max(elapsed, 1e-9));

    const bool epoch_end = t % per_epoch == 0;
    std::optional<Evaluation> eval;
    if (epoch_end || (config.eval_every > 0 && t % config.eval_every == 0)) {
      StatusOr<std::optional<Evaluation>> e = evaluate();
      if (!e.ok()) return runtime(e.error());
      eval = std::move(*e);
      if (eval && !epoch_end) {
        progress.line("step " + std::to_string(t) + " (epoch " + std::to_string(epoch + 1) + "/" +
                      std::to_string(config.epochs) + "): " + eval->to_string());
      }
    }
    std::map<std::string, double> metrics;
    if (eval && eval->accuracy) metrics["test_accuracy"] = *eval->accuracy;
    if (eval && eval->loss) metrics["test_loss"] = *eval->loss;
    const double now = seconds_since(start);
    log.record({.step = t, .epoch = epoch + 1, .loss = *loss, .lr = lr,
                .examples_per_s = static_cast<double>((t - first) * batch) / std::max(now, 1e-9),
                .elapsed_s = now},
               metrics);
    if (epoch_end) {
      const double seconds = seconds_since(epoch_start);
      char line[160];
      std::snprintf(line, sizeof(line), "epoch %lld/%lld: mean loss %.4f, %.1f s",
                    static_cast<long long>(epoch + 1), static_cast<long long>(config.epochs),
                    epoch_loss / static_cast<double>(epoch_steps), seconds);
      progress.line(std::string(line) + (eval ? ", " + eval->to_string() : ""));
      log.end_epoch(epoch + 1, seconds);
      if (eval && eval->accuracy) epoch_metrics.record("test_accuracy", *eval->accuracy);
      if (eval && eval->loss) epoch_metrics.record("test_loss", *eval->loss);
      if (Status s = epoch_metrics.flush(); !s.ok()) return runtime(s.error());
      if (config.profile) {
        progress.line(model.profile_report());
        progress.line("data loader: the steps waited " + format_number("%.3f", loader.wait_seconds()) +
                      " s for batches the loader's thread took " + format_number("%.3f", loader.fill_seconds()) +
                      " s to gather (" + std::to_string(t - first) + " steps so far)");
      }
      epoch_loss = 0;
      epoch_steps = 0;
      epoch_start = Clock::now();
    }
    if (config.checkpoint_every > 0 && t % config.checkpoint_every == 0) {
      if (auto f = save()) return f;
      saved_at = t;
    }
    if (const int number = signals.received(); number != 0) {
      const std::string name = number == SIGINT ? "SIGINT" : "SIGTERM";
      std::string message = "interrupted by " + name + " at step " + std::to_string(t);
      if (!config.checkpoint_out.empty()) {
        if (saved_at != t) {
          if (auto f = save()) return f;
        }
        message += "; resume with --checkpoint-in=" + config.checkpoint_out;
      }
      return Failure{128 + number, Error{message}};
    }
  }
  if (!config.checkpoint_out.empty() && saved_at != t) {
    if (auto f = save()) return f;
  }
  if (t > first) {
    const double seconds = seconds_since(start);
    progress.line("done: " + std::to_string(t - first) + " steps in " + format_number("%.1f", seconds) + " s (" +
                  format_number("%.1f", (t - first) / std::max(seconds, 1e-9)) + " steps/s)");
  }
  if (!config.report.empty() && lead) {
    if (Status s = log.write_report(config.report, program + ": training report"); !s.ok()) {
      return runtime(s.error());
    }
    progress.line("report: " + config.report);
  }
  return std::nullopt;
}

}  // namespace

std::string Evaluation::to_string() const {
  std::string s;
  if (accuracy) s = "test accuracy: " + format_number("%.4f", *accuracy);
  if (loss) s += (s.empty() ? "" : ", ") + std::string("test ") + loss_name + ": " + format_number("%.4f", *loss);
  if (s.empty()) s = "evaluated " + std::to_string(samples) + " test samples (no metric for this target)";
  return s;
}

StatusOr<Evaluation> evaluate_split(Trainable& model, const Split& test) {
  const auto& eval_inputs = model.eval_inputs();
  const int64_t eval_batch = eval_inputs[0].type.shape[0];
  const int64_t n = test.size();
  const Tensor& target = test.columns.back().array;
  const int64_t target_elements = sample_elements(target.type());
  int64_t correct = 0;
  double loss_sum = 0;
  bool has_loss = true;
  Evaluation result;
  result.samples = n;
  std::vector<Tensor> inputs(eval_inputs.size());
  for (int64_t start = 0; start < n; start += eval_batch) {
    const int64_t rows = std::min(eval_batch, n - start);  // the last batch may be short: padded
    for (size_t k = 0; k < eval_inputs.size(); ++k) {
      inputs[k] = slice_rows(test.columns[k], start, rows, eval_inputs[k].type);
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, model.evaluate(inputs));
    if (outputs.empty() || outputs[0].rank() < 1 || outputs[0].shape()[0] != eval_batch) {
      return Error{"the model's evaluation returned " +
                   (outputs.empty() ? std::string("no outputs") : outputs[0].type().to_string()) +
                   "; expected a first output with " + std::to_string(eval_batch) + " rows"};
    }
    const Tensor& out = outputs[0];
    const int64_t width = sample_elements(out.type());
    std::vector<double> row(static_cast<size_t>(width));
    for (int64_t i = 0; i < rows; ++i) {  // the padding's rows are dropped
      for (int64_t c = 0; c < width; ++c) row[c] = out.get_double(i * width + c);
      if (test.classes) {
        const int64_t label = test.classes->data<int64_t>()[start + i];
        const int64_t best = std::max_element(row.begin(), row.end()) - row.begin();
        correct += best == label;
        const double top = row[best];
        double sum = 0;
        for (double v : row) sum += std::exp(v - top);
        loss_sum += top + std::log(sum) - row[label];
      } else if (width == target_elements) {
        for (int64_t c = 0; c < width; ++c) {
          const double d = row[c] - target.get_double((start + i) * width + c);
          loss_sum += d * d / static_cast<double>(width);
        }
      } else {
        has_loss = false;
      }
    }
  }
  if (n > 0 && test.classes) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    result.loss = loss_sum / static_cast<double>(n);
    result.loss_name = "cross-entropy";
  } else if (n > 0 && has_loss) {
    result.loss = loss_sum / static_cast<double>(n);
    result.loss_name = "mse";
  }
  return result;
}

namespace {

// `args` without a --backend naming `info.backend`; an error for one naming another.
// Without a known backend, --backend stays for parse_flags to refuse as unknown.
StatusOr<std::vector<std::string>> drop_backend_flag(const std::vector<std::string>& args,
                                                     const BinaryInfo& info) {
  if (info.backend.empty()) return args;
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i].rfind("--backend=", 0) == 0) {
      value = args[i].substr(10);
    } else if (args[i] == "--backend" && i + 1 < args.size()) {
      value = args[++i];
    } else {
      out.push_back(args[i]);
      continue;
    }
    if (value != info.backend) {
      return Error{"--backend=" + value + ": this binary's model was compiled for " + info.backend +
                   ", and a binary trains on the backend it was built for; build one with "
                   "backend = \"" + value + "\" (weft_binary, tools/aot/weft.bzl)"};
    }
  }
  return out;
}

std::string backend_help(const BinaryInfo& info) {
  if (info.backend.empty()) return "";
  return "\nThis binary's model was compiled for the " + info.backend +
         " backend (weft_binary's `backend`); --backend=" + info.backend +
         " is accepted, any other is an error." +
         (info.mpi_world ? "" : " It links no MPI: --data-parallel is not available.") + "\n";
}

}  // namespace

int run_driver(const std::vector<std::string>& args, const std::string& program,
               const ModelFactory& factory, std::FILE* out, std::FILE* err,
               const BinaryInfo& info) {
  StatusOr<std::vector<std::string>> kept = drop_backend_flag(args, info);
  if (!kept.ok()) {
    std::fprintf(err, "%s\n", kept.error().to_string().c_str());
    return kExitUsage;
  }
  StatusOr<DriverConfig> config = parse_flags(*kept);
  if (!config.ok()) {
    std::fprintf(err, "%s\n", config.error().to_string().c_str());
    return kExitUsage;
  }
  if (config->help) {
    std::fprintf(out, "%s%s", help_text(program).c_str(), backend_help(info).c_str());
    return kExitOk;
  }
  std::optional<Failure> failure;
  const int status = run_guarded(program.c_str(), [&] {
    StopSignals signals;  // before the model starts its threads
    failure = train(*config, program, factory, out, info, signals);
    return kExitOk;
  }, err);
  if (status != kExitOk) return kExitRuntime;
  std::fflush(out);
  if (failure) {
    std::fprintf(err, "%s\n", failure->error.to_string().c_str());
    return failure->status;
  }
  return kExitOk;
}

int run_driver(int argc, char** argv, const ModelFactory& factory, const BinaryInfo& info) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string program = argc > 0 ? argv[0] : "train";
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  return run_driver(args, program, factory, stdout, stderr, info);
}

}  // namespace weft::driver

#include "examples/fashion_mnist/train_loop.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "runtime/backend.h"
#include "runtime/collective/mpi_communicator.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/driver/flags.h"
#include "runtime/flag_values.h"
#include "runtime/monitor/monitor.h"

namespace weft::examples {
namespace {

/// The shape of `rows` images in `layout`.
Shape image_shape(ImageLayout layout, int64_t rows) {
  return layout == ImageLayout::flat ? Shape{rows, FashionMnist::kPixels} : Shape{rows, 1, 28, 28};
}

/// Accuracy on the whole test set, in eval mode, in batches of 1000 gathered from its
/// columns (u8 images normalized as they are gathered).
StatusOr<double> test_accuracy(Trainer& trainer, const FashionMnist& data, ImageLayout layout) {
  const int64_t n = data.test_size(), chunk = 1000;
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t rows = std::min(chunk, n - start);  // the last chunk may be short
    std::vector<Tensor> batch{Tensor(Type{DType::f32, image_shape(layout, rows)}),
                              Tensor(Type{DType::i64, {rows}})};
    gather_batch(data.test_columns(), all.data() + start, rows, /*rank=*/0, /*world=*/1, batch);
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> out, trainer.evaluate({batch[0]}));
    const float* logits = out[0].data<float>();
    for (int64_t i = 0; i < rows; ++i) {
      int best = 0;
      for (int c = 1; c < 10; ++c) {
        if (logits[i * 10 + c] > logits[i * 10 + best]) best = c;
      }
      correct += best == batch[1].data<int64_t>()[i];
    }
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

/// `x` as the shortest text that reads back as `x` ("0.001").
std::string shortest(double x) {
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof(text), x);
  return std::string(text, r.ptr);
}

/// A flag without a value that sets `*into` to `value`.
driver::ProgramFlag switch_flag(const std::string& name, const std::string& help, bool* into, bool value) {
  return {name, "", "off", help, [into, value](driver::DriverConfig&, const std::string&) -> Status {
            *into = value;
            return Status();
          }};
}

}  // namespace

void parse_flags(int argc, char** argv, RunConfig& c, bool allow_bn) {
  // The flags shared with the training binaries, with this config's values as their
  // defaults; the rest are the examples' own.
  driver::FlagSet set;
  set.shared = {"data",   "epochs",      "max-steps",      "seed",           "lr",
                "checkpoint-in", "partial-load", "checkpoint-out", "metrics-csv", "report",
                "serve",  "log-every",   "check-numerics", "profile",        "help"};
  set.defaults = {{"data", c.data},
                  {"epochs", std::to_string(c.epochs)},
                  {"max-steps", std::to_string(c.max_steps)},
                  {"seed", std::to_string(c.seed)},
                  {"lr", shortest(c.lr)},
                  {"checkpoint-out", c.name + ".safetensors"},
                  {"log-every", std::to_string(c.log_every)}};
  set.own.push_back(driver::whole_number_flag("batch", "examples per training step", &c.batch, 1,
                                              std::numeric_limits<int>::max()));
  set.own.push_back({"backend", "NAME", c.backend, "where the step runs: cpu, cuda or reference",
                     [&c](driver::DriverConfig&, const std::string& v) -> Status {
                       if (v.empty()) return Error{"--backend needs a name: --backend=NAME"};
                       c.backend = v;
                       return Status();
                     }});
  set.own.push_back(switch_flag("no-cuda-graph",
                                "--backend=cuda: launch kernel by kernel, not one CUDA graph per step",
                                &c.cuda_graph, false));
  set.own.push_back({"resume", "PATH", "none", "the same as --checkpoint-in",
                     [](driver::DriverConfig& d, const std::string& v) -> Status {
                       if (v.empty()) return Error{"--resume needs a path: --resume=PATH"};
                       d.checkpoint_in = resolve_path(v);
                       return Status();
                     }});
  // Not the driver's --data-parallel, whose ranks each take a whole model batch: here
  // the ranks share one batch.
  set.own.push_back(switch_flag("data-parallel",
                                "under mpirun -np N: each rank trains on batch/N rows of every batch, "
                                "gradients averaged over the ranks; rank 0 alone prints and saves",
                                &c.data_parallel, true));
  if (allow_bn) set.own.push_back(switch_flag("bn", "batch normalization after each convolution", &c.bn, true));

  const std::string program = c.name.empty() ? "train" : c.name;
  StatusOr<driver::DriverConfig> d = driver::parse_flags(std::vector<std::string>(argv + 1, argv + argc), set);
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.error().to_string().c_str());
    std::exit(2);  // a bad command line, as the driver's kExitUsage
  }
  if (d->help) {
    std::printf("%s", driver::help_text(program,
                                        "Trains " + program + " on Fashion-MNIST with Adam (JIT-compiled at "
                                        "startup), reporting the test accuracy after every epoch.\n"
                                        "Exit status: 0 done, 1 a file or the run failed, 2 a bad command line.\n",
                                        set)
                          .c_str());
    std::exit(0);
  }
  c.data = d->data_dir;
  c.epochs = d->epochs;
  c.max_steps = d->max_steps;
  c.seed = d->seed;
  c.lr = *d->lr;  // set: the defaults give it
  c.resume = d->checkpoint_in;
  c.partial_load = d->partial_load;
  c.checkpoint_out = d->checkpoint_out;
  c.metrics_csv = d->metrics_csv;
  c.report = d->report;
  c.serve = static_cast<int>(d->serve);  // -1 or a port: the parser checks [0, 65535]
  c.log_every = d->log_every;
  c.check_numerics = d->check_numerics;
  c.profile = d->profile;
}

int train(const FlowPtr& net, const RunConfig& c) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "%s\n", e.to_string().c_str());
    return 1;
  };
  // Output paths are checked before the data and the compile, not when the run ends.
  for (const auto& [flag, path] : {std::pair{"checkpoint-out", &c.checkpoint_out},
                                   {"metrics-csv", &c.metrics_csv}, {"report", &c.report}}) {
    if (path->empty()) continue;
    if (auto why = unwritable_file(*path)) return fail(Error{"--" + std::string(flag) + "=" + *path + ": " + *why});
  }
  FashionMnistOptions data_options;
  data_options.directory = c.data;
  data_options.directory_knob = "--data";
  data_options.normalize = true;  // images stay u8, normalized as batches are gathered
  StatusOr<FashionMnist> data = FashionMnist::load(data_options);
  if (!data.ok()) return fail(data.error());
  const int64_t batches = data->num_batches(c.batch);  // the last partial batch is dropped
  if (batches == 0) {  // per_epoch would be 0: a division by zero below
    std::fprintf(stderr, "--batch=%lld is larger than the training set; use at most %lld\n",
                 static_cast<long long>(c.batch), static_cast<long long>(data->train_size()));
    return 1;
  }

  TrainOptions options;
  options.seed = c.seed;
  options.backend = c.backend;
  options.cuda_graph = c.cuda_graph;
  options.check_numerics = c.check_numerics;
  // --data-parallel: every rank of `mpirun -np N` trains on its rows of each batch; rank 0
  // alone prints, records metrics and writes the checkpoint.
  int rank = 0, world = 1;
  if (c.data_parallel) {
    StatusOr<std::shared_ptr<collective::Communicator>> comm = collective::mpi_world();
    if (!comm.ok()) return fail(comm.error());
    options.communicator = *comm;
    rank = (*comm)->rank();
    world = (*comm)->world_size();
    if (c.batch % world != 0) {
      return fail(collective::shard_batch(Tensor(Type{DType::f32, {c.batch}}), rank, world)
                      .error());
    }
  }
  std::FILE* out = rank == 0 ? stdout : std::fopen("/dev/null", "w");
  if (out == nullptr) return fail(Error{"cannot open /dev/null"});
  const int64_t rows = c.batch / world;
  const Shape input = image_shape(c.layout, rows);
  StatusOr<Trainer> trainer = Trainer::compile(net, {{"x", Type{DType::f32, input}}},
                                               LossSpec::cross_entropy(), OptimizerSpec::adam(c.lr),
                                               options);
  if (!trainer.ok()) return fail(trainer.error());
  if (!c.resume.empty()) {
    StatusOr<LoadReport> report = trainer->load(c.resume, {.subgraph = "", .strict = !c.partial_load});
    if (!report.ok()) return fail(report.error());
    if (c.partial_load) {
      std::fprintf(out, "partial load of %s: %s\n", c.resume.c_str(), partial_load_report(*report).c_str());
    }
    std::fprintf(out, "resumed from %s at step %lld\n", c.resume.c_str(),
                static_cast<long long>(trainer->steps()));
  }
  const int64_t per_epoch = c.max_steps > 0 ? std::min<int64_t>(batches, c.max_steps) : batches;
  std::fprintf(out, "%s: %lld parameters, Adam lr %g, batch %lld, %lld steps per epoch, backend %s\n",
               c.name.c_str(), static_cast<long long>(trainer->model().parameter_count()), c.lr,
               static_cast<long long>(c.batch), static_cast<long long>(per_epoch), c.backend.c_str());
  if (c.data_parallel) {
    std::fprintf(out, "data parallel: %d ranks, %lld rows each (%s)\n", world,
                 static_cast<long long>(rows), options.communicator->describe().c_str());
  }
  if (c.profile) {
    if (Status s = trainer->set_profiling(true); !s.ok()) return fail(s.error());
  }
  monitor::Progress progress(out, /*every=*/c.log_every, collective::launched_by_mpi_launcher());
  monitor::RunLog log({"test_accuracy"});
  if (!c.metrics_csv.empty() && rank == 0) {
    Status opened = log.open_csv(c.metrics_csv, "--metrics-csv=" + c.metrics_csv);
    if (!opened.ok()) return fail(opened.error());
  }
  if (c.serve >= 0 && rank == 0) {
    Status served = log.serve(c.serve, {.title = c.name + " on Fashion-MNIST"});
    if (!served.ok()) return fail(Error{"--serve=" + std::to_string(c.serve) + ": " + served.error().message});
    progress.line("dashboard: " + log.dashboard().url());
  }
  if (c.epochs > std::numeric_limits<int64_t>::max() / per_epoch) {  // the driver's check and message
    std::fprintf(stderr, "error: --epochs=%lld: %lld steps per epoch make more steps than 64 bits count\n",
                 static_cast<long long>(c.epochs), static_cast<long long>(per_epoch));
    return 2;
  }
  const int64_t total = c.epochs * per_epoch, first = trainer->steps();
  const auto run_start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  int64_t start_epoch = trainer->steps() / per_epoch, start_step = trainer->steps() % per_epoch;
  // The loader's batch buffers pinned for the device where the backend pins (cuda).
  HostPinning pinning;
  if (StatusOr<const Backend*> b = find_backend(c.backend); b.ok()) {
    pinning = HostPinning{(*b)->pin_host_memory, (*b)->unpin_host_memory};
  }
  double last_loss = 0;
  for (int64_t epoch = start_epoch; epoch < c.epochs; ++epoch) {
    auto epoch_start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t steps = 0;
    // Batch s + 1 (this rank's rows of it) is gathered on the loader's thread while step
    // s runs (runtime/data/loader.h), from the same columns, order and gather_batch as the
    // AOT driver's.
    const int64_t first_step = epoch == start_epoch ? start_step : 0;
    const std::vector<int64_t> order = epoch_order(c.seed, epoch, data->train_size());
    Loader loader(first_step, per_epoch, {Type{DType::f32, input}, Type{DType::i64, {rows}}},
                  [&](int64_t s, std::vector<Tensor>& into) -> Status {
                    gather_batch(data->train_columns(), order.data() + s * c.batch, c.batch, rank, world, into);
                    return Status();
                  },
                  pinning);
    for (int64_t s = first_step; s < per_epoch; ++s) {
      StatusOr<const std::vector<Tensor>*> batch = loader.next();
      if (!batch.ok()) return fail(batch.error());
      StatusOr<double> loss = trainer->step(**batch);
      if (!loss.ok()) return fail(loss.error());
      loss_sum += *loss;
      ++steps;
      const double elapsed = since(run_start);
      const double steps_per_s = static_cast<double>(trainer->steps() - first) / std::max(elapsed, 1e-9);
      progress.update(trainer->steps(), total, epoch, c.epochs, *loss, trainer->lr(), steps_per_s);
      if (s + 1 < per_epoch) {  // the epoch's last step is recorded with its test accuracy
        log.record({.step = trainer->steps(), .epoch = epoch + 1, .loss = *loss, .lr = trainer->lr(),
                    .examples_per_s = steps_per_s * c.batch, .elapsed_s = elapsed});
      } else {
        last_loss = *loss;
      }
    }
    double seconds = since(epoch_start);
    if (c.profile) {
      StatusOr<std::string> report = trainer->profile_report();
      if (report.ok()) progress.line(*report);
      (void)trainer->set_profiling(true);  // a fresh table for the next epoch
    }
    StatusOr<double> accuracy = test_accuracy(*trainer, *data, c.layout);
    if (!accuracy.ok()) return fail(accuracy.error());
    const double elapsed = since(run_start);
    log.record({.step = trainer->steps(), .epoch = epoch + 1, .loss = last_loss, .lr = trainer->lr(),
                .examples_per_s = static_cast<double>(trainer->steps() - first) * c.batch / std::max(elapsed, 1e-9),
                .elapsed_s = elapsed},
               {{"test_accuracy", *accuracy}});
    log.end_epoch(epoch + 1, seconds);
    char line[160];
    std::snprintf(line, sizeof(line), "epoch %lld/%lld: mean loss %.4f, %.1f s (%.2f min), test accuracy: %.4f",
                  static_cast<long long>(epoch + 1), static_cast<long long>(c.epochs), steps > 0 ? loss_sum / steps : 0.0, seconds,
                  seconds / 60, *accuracy);
    progress.line(line);
  }
  if (rank != 0) return 0;
  if (!c.report.empty()) {
    Status written = log.write_report(c.report, c.name + " on Fashion-MNIST");
    if (!written.ok()) return fail(written.error());
    progress.line("report: " + c.report);
  }
  Status saved = trainer->save(c.checkpoint_out);
  if (!saved.ok()) return fail(saved.error());
  std::printf("checkpoint: %s (step %lld)\n", c.checkpoint_out.c_str(),
              static_cast<long long>(trainer->steps()));
  return 0;
}

}  // namespace weft::examples

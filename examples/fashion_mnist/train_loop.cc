#include "examples/fashion_mnist/train_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "runtime/backend.h"
#include "runtime/collective/mpi_communicator.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/flag_values.h"
#include "runtime/monitor/monitor.h"
#include "tools/weftc/args.h"

namespace weft::examples {
namespace {

[[noreturn]] void usage(const std::string& problem, bool allow_bn) {
  std::fprintf(stderr,
               "%s\nusage: [--epochs=N] [--batch=B] [--lr=X] [--seed=S] [--backend=NAME]\n"
               "       [--checkpoint-out=PATH] [--resume=PATH [--partial-load]] [--data=DIR]\n"
               "       [--max-steps=N]\n"
               "       [--profile] [--check-numerics] [--metrics-csv=PATH] [--report=PATH]\n"
               "       [--serve=PORT] (the live dashboard on 127.0.0.1:PORT; 0: a free port)\n"
               "       [--no-cuda-graph] (--backend=cuda: launch by launch, not one CUDA graph)\n"
               "       [--data-parallel] (under mpirun: each rank trains on its share of every "
               "batch)%s\n",
               problem.c_str(), allow_bn ? " [--bn]" : "");
  std::exit(1);
}


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

}  // namespace

void parse_flags(int argc, char** argv, RunConfig& c, bool allow_bn) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    std::string flag = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    auto bad_value = [&] { usage("bad value for " + flag + ": '" + value + "'", allow_bn); };
    auto number = [&](double low) {
      const FlagNumber<double> v = parse_real_number(value);
      if (!v.ok() || !(v.value >= low)) bad_value();
      return v.value;
    };
    auto count = [&](int low) {
      const FlagNumber<int64_t> v = parse_whole_number(value);
      if (!v.ok() || v.value < low || v.value > std::numeric_limits<int>::max()) bad_value();
      return static_cast<int>(v.value);
    };
    if (flag == "--epochs") c.epochs = count(0);
    else if (flag == "--batch") c.batch = count(1);
    else if (flag == "--lr") c.lr = number(0);
    else if (flag == "--seed") {
      const FlagNumber<uint64_t> v = parse_unsigned_number(value);
      if (!v.ok()) bad_value();
      c.seed = v.value;
    }
    else if (flag == "--max-steps") c.max_steps = count(0);
    else if (flag == "--backend") c.backend = value;
    else if (flag == "--checkpoint-out") c.checkpoint_out = cli::resolve_path(value);
    else if (flag == "--resume") c.resume = cli::resolve_path(value);
    else if (flag == "--data") c.data = cli::resolve_path(value);
    else if (flag == "--bn" && allow_bn && eq == std::string::npos) c.bn = true;
    else if (flag == "--profile" && eq == std::string::npos) c.profile = true;
    else if (flag == "--no-cuda-graph" && eq == std::string::npos) c.cuda_graph = false;
    else if (flag == "--partial-load" && eq == std::string::npos) c.partial_load = true;
    else if (flag == "--check-numerics" && eq == std::string::npos) c.check_numerics = true;
    else if (flag == "--data-parallel" && eq == std::string::npos) c.data_parallel = true;
    else if (flag == "--metrics-csv" && !value.empty()) c.metrics_csv = cli::resolve_path(value);
    else if (flag == "--report" && !value.empty()) c.report = cli::resolve_path(value);
    else if (flag == "--serve") c.serve = count(0);
    else usage("unknown flag '" + a + "'", allow_bn);
  }
  if (c.checkpoint_out.empty()) c.checkpoint_out = cli::resolve_path(c.name + ".safetensors");
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
    std::fprintf(stderr, "--batch=%d is larger than the training set; use at most %lld\n",
                 c.batch, static_cast<long long>(data->train_size()));
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
  std::fprintf(out, "%s: %lld parameters, Adam lr %g, batch %d, %lld steps per epoch, backend %s\n",
               c.name.c_str(), static_cast<long long>(trainer->model().parameter_count()), c.lr,
               c.batch, static_cast<long long>(per_epoch), c.backend.c_str());
  if (c.data_parallel) {
    std::fprintf(out, "data parallel: %d ranks, %lld rows each (%s)\n", world,
                 static_cast<long long>(rows), options.communicator->describe().c_str());
  }
  if (c.profile) {
    if (Status s = trainer->set_profiling(true); !s.ok()) return fail(s.error());
  }
  monitor::Progress progress(out, /*every=*/100, collective::launched_by_mpi_launcher());
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
    std::snprintf(line, sizeof(line), "epoch %lld/%d: mean loss %.4f, %.1f s (%.2f min), test accuracy: %.4f",
                  static_cast<long long>(epoch + 1), c.epochs, steps > 0 ? loss_sum / steps : 0.0, seconds,
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

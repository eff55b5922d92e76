// Run under `mpirun -np 2` by sync_bn_test: what data parallelism means beyond averaged
// gradients, checked on every rank in one launch (each line "ok: ..." or "FAIL: ...",
// exit 1 on any failure):
//   - SyncBatchNorm: 2 ranks, each on its half of every global batch, equal one process
//     with plain batch norm on the whole batch (losses, parameters and running
//     statistics after 4 SGD steps, to 1e-5), where 2 ranks without sync do not;
//   - parameters: ranks seeded differently start from rank 0's parameters; ranks resumed
//     from different checkpoints are refused with the error (printed as "error: ..."
//     for the test to pin); ranks resumed from the same one train on; rank 0 alone
//     writes checkpoints; a rank whose checkpoint load fails stops the other at once
//     (its error printed by rank 0, naming rank 1).
//
//   mpirun -np 2 sync_bn_check --dir=DIR   # DIR: where the checkpoints go

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "runtime/collective/parameters.h"
#include "runtime/collective/world.h"
#include "tests/data_parallel/sync_bn_model.h"

namespace {

using namespace weft;
using Values = std::map<std::string, Tensor>;

constexpr int64_t kGlobalBatch = 8, kSteps = 4;
int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Global batch `step`: smooth, distinct values; 3 classes.
std::pair<Tensor, Tensor> global_batch(int64_t step) {
  Tensor x(Type{DType::f32, {kGlobalBatch, 3, 4, 4}});
  Tensor y(Type{DType::i64, {kGlobalBatch}});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * step) +
                                            0.1 * static_cast<double>(i % 5));
  }
  for (int64_t i = 0; i < kGlobalBatch; ++i) y.data<int64_t>()[i] = (i + step) % 3;
  return {std::move(x), std::move(y)};
}

struct Run {
  std::vector<double> losses;
  Values values;
};

// A step for this rank's share of the global batch, `world` ranks.
StatusOr<Trainer> compile(bool sync, std::shared_ptr<collective::Communicator> comm, uint64_t seed,
                          int world) {
  TrainOptions options;
  options.seed = seed;
  options.bind.communicator = std::move(comm);
  const Type x{DType::f32, {kGlobalBatch / world, 3, 4, 4}};
  return Trainer::compile(testing::sync_bn_convnet(sync), {{"x", x}}, LossSpec::cross_entropy(),
                          OptimizerSpec::sgd(/*lr=*/0.1), options);
}

// kSteps steps on this rank's share of each global batch (all of it in one process).
StatusOr<Run> train(bool sync, std::shared_ptr<collective::Communicator> comm) {
  const int rank = comm ? comm->rank() : 0, world = comm ? comm->world_size() : 1;
  WEFT_ASSIGN_OR_RETURN(Trainer trainer, compile(sync, comm, /*seed=*/7, world));
  Run run;
  for (int64_t s = 0; s < kSteps; ++s) {
    auto [x, y] = global_batch(s);
    WEFT_ASSIGN_OR_RETURN(Tensor xs, collective::shard_batch(x, rank, world));
    WEFT_ASSIGN_OR_RETURN(Tensor ys, collective::shard_batch(y, rank, world));
    WEFT_ASSIGN_OR_RETURN(double loss, trainer.step({xs, ys}));
    run.losses.push_back(loss);
  }
  run.values = trainer.values();
  return run;
}

// The largest |a - b| / max(1, |b|) over the losses and every f32 value; infinity when
// the runs hold different values.
double difference(const Run& a, const Run& b) {
  if (a.losses.size() != b.losses.size() || a.values.size() != b.values.size()) return INFINITY;
  double worst = 0;
  auto compare = [&](double u, double v) {
    worst = std::max(worst, std::abs(u - v) / std::max(1.0, std::abs(v)));
  };
  for (size_t s = 0; s < a.losses.size(); ++s) compare(a.losses[s], b.losses[s]);
  for (const auto& [name, value] : a.values) {
    auto it = b.values.find(name);
    if (it == b.values.end() || it->second.type() != value.type()) return INFINITY;
    if (value.dtype() != DType::f32) continue;
    for (int64_t i = 0; i < value.numel(); ++i) compare(value.data<float>()[i], it->second.data<float>()[i]);
  }
  return worst;
}

void check_sync_batch_norm(const std::shared_ptr<collective::Communicator>& world) {
  StatusOr<Run> global = train(/*sync=*/false, nullptr);
  StatusOr<Run> synced = train(/*sync=*/true, world);
  StatusOr<Run> unsynced = train(/*sync=*/false, world);
  if (!global.ok() || !synced.ok() || !unsynced.ok()) {
    const Status s = !global.ok() ? global.status() : !synced.ok() ? synced.status() : unsynced.status();
    return check(false, "training: " + s.to_string());
  }
  char figures[160];
  std::snprintf(figures, sizeof(figures), " (largest relative difference %.2g; without sync %.2g)",
                difference(*synced, *global), difference(*unsynced, *global));
  check(difference(*synced, *global) <= 1e-5,
        "2 ranks with SyncBatchNorm equal one process on the global batch: losses, parameters, "
        "running statistics" + std::string(figures));
  check(difference(*unsynced, *global) > 1e-4, "2 ranks without sync do not");
}

// A checkpoint of the 2-rank model (its per-rank batch) written by this rank alone.
Status save_seeded(const std::string& path, uint64_t seed) {
  WEFT_ASSIGN_OR_RETURN(Trainer alone, compile(/*sync=*/false, nullptr, seed, /*world=*/2));
  return alone.save(path);
}

Status barrier(collective::Communicator& comm) {
  double one = 1;
  return comm.all_reduce(&one, 1, DType::f64, collective::Reduction::sum);
}

void check_parameters(const std::shared_ptr<collective::Communicator>& world, const std::string& dir) {
  const int rank = world->rank();
  // Seeded inits: rank r draws from seed 7 + r, and starts from rank 0's (seed 7's).
  StatusOr<Trainer> seeded = compile(/*sync=*/false, world, /*seed=*/7 + rank, /*world=*/2);
  StatusOr<Trainer> seed7 = compile(/*sync=*/false, nullptr, /*seed=*/7, /*world=*/2);
  if (!seeded.ok() || !seed7.ok()) {
    return check(false, "compile: " + (seeded.ok() ? seed7.status() : seeded.status()).to_string());
  }
  check(collective::hash_values(seeded->values()) == collective::hash_values(seed7->values()),
        "ranks seeded differently start from rank 0's parameters");

  // Checkpoints: a.safetensors (seed 7) by rank 0, b.safetensors (seed 8) by rank 1.
  const std::string a = dir + "/a.safetensors", b = dir + "/b.safetensors";
  if (Status s = save_seeded(rank == 0 ? a : b, 7 + rank); !s.ok()) {
    return check(false, "save: " + s.to_string());
  }
  if (Status s = barrier(*world); !s.ok()) return check(false, "barrier: " + s.to_string());
  StatusOr<LoadReport> mixed = seeded->load(rank == 0 ? a : b);
  check(!mixed.ok(), "ranks resumed from different checkpoints are refused");
  if (!mixed.ok()) std::printf("error: %s\n", mixed.error().message.c_str());

  StatusOr<Trainer> resumed = compile(/*sync=*/false, world, /*seed=*/7 + rank, /*world=*/2);
  if (!resumed.ok()) return check(false, "compile: " + resumed.status().to_string());
  StatusOr<LoadReport> same = resumed->load(a);
  check(same.ok(), "ranks resumed from the same checkpoint train on" +
                       (same.ok() ? std::string() : ": " + same.status().to_string()));

  // Checkpoints: rank 0 alone writes (each rank asks for its own file here).
  const std::string mine = dir + "/saved_by_rank" + std::to_string(rank) + ".safetensors";
  if (Status s = resumed->save(mine); !s.ok()) return check(false, "save: " + s.to_string());
  const bool written = std::ifstream(mine).good();
  check(written == (rank == 0), "checkpoints are written by rank 0 alone");

  // A rank whose load fails takes part in the agreement with its reason: rank 0, which
  // loaded, learns it there at once (it waited for rank 1 until a timeout before).
  StatusOr<LoadReport> failed = resumed->load(rank == 0 ? a : dir + "/missing.safetensors");
  check(!failed.ok(), "a rank whose checkpoint load fails stops every rank");
  if (!failed.ok() && rank == 0) std::printf("error: %s\n", failed.error().message.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // whole lines, as mpirun forwards them
  std::string dir = ".";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--dir=", 0) == 0) dir = arg.substr(6);
  }
  // The launch's world (MPI under mpirun), joined as the driver joins it for the cpu
  // backend the checks train on (runtime/backend.h's step_communicator).
  StatusOr<std::shared_ptr<collective::Communicator>> world = collective::world_from_environment();
  if (world.ok()) world = step_communicator("cpu", *world, collective::local_rank(), std::chrono::seconds(300));
  if (!world.ok()) {
    std::fprintf(stderr, "sync_bn_check: %s\n", world.error().to_string().c_str());
    return 1;
  }
  check_sync_batch_norm(*world);
  check_parameters(*world, dir);
  return failures == 0 ? 0 : 1;
}

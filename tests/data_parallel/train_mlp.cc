// Trains a small MLP (16-32-32-4, ReLU, Adam, cross-entropy, seed 7) on a deterministic
// synthetic stream of global batches, and writes every step's loss and the final
// parameters as hex floats, so that runs can be compared exactly.
//
//   train_mlp --ranks=none   --out=FILE   # one process, no all_reduce ops
//   train_mlp --ranks=single --out=FILE   # one process, all_reduce through single_process()
//   mpirun -np 2 train_mlp --ranks=mpi --out=FILE   # each rank trains on its half
//   RANK=r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=P train_mlp --ranks=launch ...
//                                  # here Gloo
//
// --ranks=mpi and --ranks=launch (two names for the launches above) both join the launch
// as the AOT driver's --data-parallel does: the launch's communicator
// (collective::world_from_environment: MPI under mpirun, Gloo under the torchrun
// variables), then the backend's (runtime/backend.h's step_communicator).
//
// Every rank writes FILE.rankR ("loss STEP HEX" lines, then "param NAME HEX HEX ...").
// --batch=B sets the global batch (32), --steps=S the steps (20), --hidden=H the hidden
// width (32), --bucket_bytes=N the all_reduce bucket size (TrainOptions's default; 0: one
// call per gradient), --first_bucket_bytes=N the first bucket's (TrainOptions's default),
// --split_bytes=N computes weight gradients of at least N bytes as --split_blocks=K row
// blocks, each reduced on its own (TrainOptions::split_gradient_bytes and _blocks, whose
// defaults they keep; 0: no split), --blocking waits for each bucket's reduction as soon as it starts
// (TrainOptions::overlap_all_reduce off), --accumulate=K splits every global batch into K
// micro-batches (OptimizerSpec::with_accumulation(K): one update per global batch, one
// loss line per micro-batch), --backend=cpu|reference; --describe prints the
// step's all_reduce invocations and where the step waits for them, --time the median
// step time and the median time per step spent inside the all_reduce calls (after 5
// warm-up steps), --profile (a compiled CPU step with more than one rank) the time per
// step of the invocations that run while each bucket's reduction is in flight, from the
// executor's profile of the steps after the warm-up (cpu::Executor::set_profiling; with
// WEFT_PROFILE_CLOCK=thread the thread's CPU time, which load hardly moves):
// "rank 0: bucket 0 (264709 elements) in flight over invocations 19-34: 1012.4 us per
// step", what can hide it. A compiled CPU step with more than one rank ends with "rank R: N
// all_reduce calls on E elements over S micro-batches" (cpu::Executor's tally).
// Errors go to stderr, exit 1.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/backend.h"
#include "runtime/collective/bucket_plan.h"
#include "runtime/collective/communicator.h"
#include "runtime/collective/world.h"
#include "runtime/cpu/executor.h"

namespace {

using namespace weft;

constexpr int64_t kFeatures = 16;
constexpr int64_t kClasses = 4;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Global batch `step`: x uniform in [-1, 1), label = the argmax of x's first 4 features.
std::pair<Tensor, Tensor> global_batch(int64_t step, int64_t batch) {
  Tensor x(Type{DType::f32, {batch, kFeatures}});
  Tensor y(Type{DType::i64, {batch}});
  float* px = x.data<float>();
  int64_t* py = y.data<int64_t>();
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < kFeatures; ++j) {
      const uint64_t bits = splitmix64((static_cast<uint64_t>(step) << 32) ^ (i * kFeatures + j));
      px[i * kFeatures + j] = static_cast<float>(bits >> 40) / float(1 << 24) * 2.0f - 1.0f;
    }
    py[i] = std::max_element(px + i * kFeatures, px + i * kFeatures + kClasses) -
            (px + i * kFeatures);
  }
  return {std::move(x), std::move(y)};
}

int fail(const std::string& message) {
  std::fprintf(stderr, "train_mlp: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ranks = "none", out, backend = "cpu";
  int64_t batch = 32, steps = 20;
  int64_t bucket_bytes = -1, first_bucket_bytes = -1, hidden = 32, accumulate = 1;
  int64_t split_bytes = -1, split_blocks = -1;
  bool time = false, describe = false, blocking = false, profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--ranks=", 0) == 0) ranks = a.substr(8);
    else if (a.rfind("--out=", 0) == 0) out = a.substr(6);
    else if (a.rfind("--batch=", 0) == 0) batch = std::atoll(a.c_str() + 8);
    else if (a.rfind("--steps=", 0) == 0) steps = std::atoll(a.c_str() + 8);
    else if (a.rfind("--backend=", 0) == 0) backend = a.substr(10);
    else if (a.rfind("--bucket_bytes=", 0) == 0) bucket_bytes = std::atoll(a.c_str() + 15);
    else if (a.rfind("--first_bucket_bytes=", 0) == 0) first_bucket_bytes = std::atoll(a.c_str() + 21);
    else if (a.rfind("--split_bytes=", 0) == 0) split_bytes = std::atoll(a.c_str() + 14);
    else if (a.rfind("--split_blocks=", 0) == 0) split_blocks = std::atoll(a.c_str() + 15);
    else if (a.rfind("--hidden=", 0) == 0) hidden = std::atoll(a.c_str() + 9);
    else if (a.rfind("--accumulate=", 0) == 0) accumulate = std::atoll(a.c_str() + 13);
    else if (a == "--describe") describe = true;
    else if (a == "--time") time = true;
    else if (a == "--profile") profile = true;
    else if (a == "--blocking") blocking = true;
    else return fail("unknown argument " + a);
  }
  TrainOptions options;
  options.seed = 7;
  options.backend = backend;
  if (bucket_bytes >= 0) options.bind.all_reduce_bucket_bytes = bucket_bytes;
  if (first_bucket_bytes >= 0) options.bind.first_all_reduce_bucket_bytes = first_bucket_bytes;
  if (split_bytes >= 0) options.split_gradient_bytes = split_bytes;
  if (split_blocks >= 0) options.split_gradient_blocks = static_cast<int>(split_blocks);
  options.overlap_all_reduce = !blocking;
  if (ranks == "mpi" || ranks == "launch") {  // the launch's world, joined as the driver joins it
    StatusOr<std::shared_ptr<collective::Communicator>> world = collective::world_from_environment();
    if (!world.ok()) return fail(world.error().to_string());
    StatusOr<std::shared_ptr<collective::Communicator>> comm =
        step_communicator(backend, *world, collective::local_rank(), std::chrono::seconds(300));
    if (!comm.ok()) return fail(comm.error().to_string());
    options.bind.communicator = *comm;
  } else if (ranks == "single") {
    options.bind.communicator = collective::single_process();
  } else if (ranks != "none") {
    return fail("--ranks must be none, single, mpi or launch, not " + ranks);
  }
  const int rank = options.bind.communicator ? options.bind.communicator->rank() : 0;
  const int world = options.bind.communicator ? options.bind.communicator->world_size() : 1;
  if (accumulate < 1 || batch % accumulate != 0) {
    return fail("--accumulate must divide the global batch " + std::to_string(batch));
  }
  const int64_t micro_batch = batch / accumulate;
  if (micro_batch % world != 0) {
    // What shard_batch would say, before compiling a step for a fractional batch.
    Tensor probe(Type{DType::f32, {micro_batch, kFeatures}});
    return fail(collective::shard_batch(probe, rank, world).error().to_string());
  }

  auto net = FlowBuilder::from(Linear(kFeatures, hidden))
                 .through(ReLU())
                 .through(Linear(hidden, hidden))
                 .through(ReLU())
                 .through(Linear(hidden, kClasses))
                 .build();
  if (!net.ok()) return fail(net.error().to_string());
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {micro_batch / world, kFeatures}}}},
                                  LossSpec::cross_entropy(),
                                  OptimizerSpec::adam(/*lr=*/1e-2).with_accumulation(accumulate), options);
  if (!trainer.ok()) return fail(trainer.error().to_string());

  if (describe && rank == 0 && trainer->compiled_step() != nullptr) {
    // The step's collective invocations, as the executor bound them.
    std::istringstream lines(trainer->compiled_step()->describe());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("all_reduce") != std::string::npos || line.find("waits for") != std::string::npos) {
        std::printf("%s\n", line.c_str());
      }
    }
  }
  // The compiled CPU step, for the time its all_reduce calls take (null elsewhere).
  auto* executor = dynamic_cast<cpu::Executor*>(trainer->compiled_step());
  std::vector<double> losses;
  std::vector<double> step_ms, all_reduce_ms;
  for (int64_t s = 0; s < steps * accumulate; ++s) {
    // Micro-batch s % K of global batch s / K, then this rank's share of it.
    auto [x, y] = global_batch(s / accumulate, batch);
    const int64_t micro = s % accumulate;
    StatusOr<Tensor> xm = collective::shard_batch(x, static_cast<int>(micro), static_cast<int>(accumulate));
    StatusOr<Tensor> ym = collective::shard_batch(y, static_cast<int>(micro), static_cast<int>(accumulate));
    if (!xm.ok()) return fail(xm.error().to_string());
    if (!ym.ok()) return fail(ym.error().to_string());
    StatusOr<Tensor> xs = collective::shard_batch(*xm, rank, world);
    StatusOr<Tensor> ys = collective::shard_batch(*ym, rank, world);
    if (!xs.ok()) return fail(xs.error().to_string());
    if (!ys.ok()) return fail(ys.error().to_string());
    const auto start = std::chrono::steady_clock::now();
    if (profile && executor && s == 5 * accumulate) executor->set_profiling(true);  // after the warm-up
    const double reduced_us = executor ? executor->all_reduce_us() : 0;
    StatusOr<double> loss = trainer->step({*xs, *ys});
    step_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    all_reduce_ms.push_back(executor ? (executor->all_reduce_us() - reduced_us) / 1e3 : 0);
    if (!loss.ok()) return fail(loss.error().to_string());
    losses.push_back(*loss);
  }
  if (time && steps > 5) {
    auto median_after_warm_up = [](std::vector<double> v) {
      v.erase(v.begin(), v.begin() + 5);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("rank %d of %d: median step %.4f ms over %lld steps (global batch %lld), "
                "in all_reduce calls %.4f ms\n",
                rank, world, median_after_warm_up(step_ms), static_cast<long long>(steps - 5),
                static_cast<long long>(batch), median_after_warm_up(all_reduce_ms));
  }
  if (profile && executor && world > 1) {
    // The plan the executor runs (cpu::Executor::plan_buckets makes it from these options).
    StatusOr<collective::BucketPlan> plan = collective::plan_buckets(
        executor->program(), {options.bind.first_all_reduce_bucket_bytes, options.bind.all_reduce_bucket_bytes});
    if (!plan.ok()) return fail(plan.error().to_string());
    const std::vector<double> us = executor->profile_us_per_step();
    for (size_t k = 0; k < plan->buckets.size() && !us.empty(); ++k) {
      const collective::Bucket& b = plan->buckets[k];
      double in_flight = 0;
      for (size_t i = b.start_after + 1; i < b.wait_before; ++i) in_flight += us[i];
      std::printf("rank %d: bucket %zu (%lld elements) in flight over invocations %zu-%zu: %.1f us per step\n", rank,
                  k, static_cast<long long>(b.count), b.start_after + 1, b.wait_before - 1, in_flight);
    }
  }
  if (executor && world > 1) {
    std::printf("rank %d: %lld all_reduce calls on %lld elements over %lld micro-batches\n", rank,
                static_cast<long long>(executor->all_reduce_calls()),
                static_cast<long long>(executor->all_reduce_elements()),
                static_cast<long long>(steps * accumulate));
  }
  if (!out.empty()) {
    std::ofstream f(out + ".rank" + std::to_string(rank));
    char hex[64];
    for (size_t s = 0; s < losses.size(); ++s) {
      std::snprintf(hex, sizeof(hex), "%a", losses[s]);
      f << "loss " << s << " " << hex << "\n";
    }
    for (const auto& [name, value] : trainer->values()) {
      if (value.dtype() != DType::f32) continue;
      f << "param " << name;
      for (int64_t i = 0; i < value.numel(); ++i) {
        std::snprintf(hex, sizeof(hex), "%a", static_cast<double>(value.data<float>()[i]));
        f << " " << hex;
      }
      f << "\n";
    }
    if (!f) return fail("cannot write " + out + ".rank" + std::to_string(rank));
  }
  return 0;
}

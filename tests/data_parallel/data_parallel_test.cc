// Data parallelism on CPU over MPI (and Gloo), end to end (DESIGN.md, decision 11): 2
// ranks, each training on its half of every global batch, against 1 process on the whole
// batch; world size 1 with the option on against the option off; the compiled backend's
// all_reduce against the reference interpreter; and the errors a user can hit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpu_backend.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/reference/interpreter.h"
#include "tests/testing/free_port.h"
#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"

namespace weft {
namespace {
namespace data_parallel_test {  // this file's names, apart in its package's unity test

using testing::CommandResult;
using testing::kMpiEnv;
using testing::kMpirun;
using testing::run_command;
using testing::run_mpi;

// Bazel runs the test in its runfiles root.
const std::string kBinary = "tests/data_parallel/train_mlp";
struct TrainedRun {
  std::vector<double> losses;
  std::map<std::string, std::vector<double>> params;
  std::string text;  ///< The file as written.
};

TrainedRun read_run(const std::string& path) {
  TrainedRun r;
  std::ifstream f(path);
  std::stringstream all;
  all << f.rdbuf();
  r.text = all.str();
  std::istringstream lines(r.text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string kind, name, word;
    in >> kind >> name;
    if (kind == "loss") {
      in >> word;
      r.losses.push_back(std::strtod(word.c_str(), nullptr));
    } else if (kind == "param") {
      while (in >> word) r.params[name].push_back(std::strtod(word.c_str(), nullptr));
    }
  }
  return r;
}

std::string tmp(const std::string& name) { return testing::test_tmpdir() + "/" + name; }

// Every parameter of `want` within `tolerance` (relative to the largest magnitude of the
// parameter's values) of `got`'s.
void expect_losses_near(const TrainedRun& want, const TrainedRun& got, double tolerance) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s) {
    EXPECT_NEAR(got.losses[s], want.losses[s], tolerance * std::abs(want.losses[s])) << "step " << s;
  }
}

void expect_params_near(const TrainedRun& want, const TrainedRun& got, double tolerance) {
  for (const auto& [name, values] : want.params) {
    ASSERT_EQ(got.params.count(name), 1u) << name;
    const std::vector<double>& have = got.params.at(name);
    ASSERT_EQ(have.size(), values.size()) << name;
    double scale = 0;
    for (double v : values) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(have[i], values[i], tolerance * scale) << name << "[" << i << "]";
    }
  }
}

// 2 torchrun-style ranks of train_mlp (Gloo over TCP, runtime/collective/world.h) with
// `flags`; rank 0's result first.
std::vector<CommandResult> gloo_ranks(const std::string& flags) {
  const std::string port = std::to_string(testing::free_port());
  std::vector<std::unique_ptr<testing::Process>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(std::make_unique<testing::Process>(
        "env WEFT_NUM_THREADS=1 RANK=" + std::to_string(r) + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
        port + " " + kBinary + " --ranks=launch " + flags));
  }
  std::vector<CommandResult> done;
  for (auto& rank : ranks) done.push_back(rank->finish(120));
  return done;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// 2 ranks, overlapped (the default), against 1 process on the global batch, with small
// buckets (1 KiB): the step schedules each gradient's all_reduce right after the gradient
// (passes/schedule.h), so the first bucket (the loss and the last layer's gradients)
// starts during the backward pass and the second after it, both waited for by the
// update. Blocking (each reduction waited for as it starts) gives bitwise the same
// parameters, and so do 2 torchrun-style ranks over Gloo, overlapped and blocking.
// Gradient accumulation over 2 micro-batches (8 rows per rank each) makes the same
// updates as the large batch. One process run, three mpirun launches and two Gloo ones.
TEST(DataParallel, TwoRanksMatchOneProcessOnTheGlobalBatch) {
  CommandResult one = run_command(kBinary + " --ranks=none --out=" + tmp("one"));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  CommandResult two =
      run_mpi(kMpirun + kBinary + " --ranks=mpi --bucket_bytes=1024 --describe --out=" + tmp("two"));
  ASSERT_EQ(two.exit_code, 0) << two.out;
  const TrainedRun want = read_run(tmp("one.rank0"));
  const TrainedRun r0 = read_run(tmp("two.rank0"));
  const TrainedRun r1 = read_run(tmp("two.rank1"));
  ASSERT_EQ(want.losses.size(), 20u);
  ASSERT_EQ(want.params.size(), 18u);  // 3 weights, 3 biases, Adam's 2 slots for each
  ASSERT_EQ(r0.params.size(), want.params.size());
  // Both ranks hold bitwise the same losses and parameters: they reduce the same bytes.
  EXPECT_EQ(r0.text, r1.text);
  expect_losses_near(want, r0, 1e-6);
  // The loss moved: the comparison is about a model that trains.
  EXPECT_LT(want.losses.back(), 0.8 * want.losses.front());
  expect_params_near(want, r0, 1e-6);
  EXPECT_EQ(count(two.out, "into bucket of 5"), 5) << two.out;
  EXPECT_EQ(count(two.out, "into bucket of 2"), 2) << two.out;
  EXPECT_EQ(count(two.out, ": one call on 1189 elements (MPI rank 0 of 2"), 1) << two.out;
  EXPECT_EQ(count(two.out, ": one call on 544 elements (MPI rank 0 of 2"), 1) << two.out;
  EXPECT_EQ(count(two.out, "| first waits for 2 bucket(s)"), 1) << two.out;

  CommandResult blocking =
      run_mpi(kMpirun + kBinary + " --ranks=mpi --bucket_bytes=1024 --blocking --out=" + tmp("blocking"));
  ASSERT_EQ(blocking.exit_code, 0) << blocking.out;
  EXPECT_EQ(r0.text, read_run(tmp("blocking.rank0")).text);

  // Over Gloo, whose reductions run on its collective thread while the step goes on:
  // overlapped and blocking give the MPI run's bytes (two ranks sum a + b either way).
  for (const char* mode : {"", "--blocking "}) {
    std::vector<CommandResult> gloo = gloo_ranks("--bucket_bytes=1024 " + std::string(mode) + "--out=" + tmp("gloo"));
    ASSERT_EQ(gloo[0].exit_code, 0) << gloo[0].out;
    ASSERT_EQ(gloo[1].exit_code, 0) << gloo[1].out;
    EXPECT_EQ(read_run(tmp("gloo.rank0")).text, r0.text) << mode;
    EXPECT_EQ(read_run(tmp("gloo.rank1")).text, r0.text) << mode;
  }

  CommandResult accumulated = run_mpi(kMpirun + kBinary + " --ranks=mpi --accumulate=2 --out=" + tmp("accumulated"));
  ASSERT_EQ(accumulated.exit_code, 0) << accumulated.out;
  const TrainedRun a0 = read_run(tmp("accumulated.rank0"));
  EXPECT_EQ(a0.losses.size(), 40u);  // one per micro-batch
  expect_params_near(want, a0, 1e-6);  // the accumulators aside
  // Issue 32: the gradients (1,732 elements) are reduced once per window, accumulated;
  // the loss (1 element) every micro-batch, in the gradients' bucket: alone on the
  // window's first micro-batch, with them on its last (20 × (1 + 1,733) elements in 40
  // calls, as many calls as reducing every micro-batch's gradients made, on half the
  // elements; 60 calls when the loss had a bucket of its own).
  EXPECT_EQ(count(accumulated.out, "rank 0: 40 all_reduce calls on 34680 elements over 40 micro-batches"), 1)
      << accumulated.out;
}

// Issue 32: the weight gradients computed as row blocks, each reduced in its own bucket
// (--split_bytes=1024 splits the 32×32 and 32×16 ones: TrainOptions::split_gradient_bytes,
// passes/split_gradients.h). 2 ranks still equal one process on the global batch, and
// overlapped and blocking still give bitwise the same parameters (the same Program).
TEST(DataParallel, SplitGradientsMatchOneProcessAndBlockingBitwise) {
  CommandResult one = run_command(kBinary + " --ranks=none --out=" + tmp("one_split"));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  CommandResult two = run_mpi(kMpirun + kBinary + " --ranks=mpi --split_bytes=1024 --describe --out=" + tmp("split"));
  ASSERT_EQ(two.exit_code, 0) << two.out;
  const TrainedRun want = read_run(tmp("one_split.rank0"));
  const TrainedRun r0 = read_run(tmp("split.rank0"));
  EXPECT_EQ(r0.text, read_run(tmp("split.rank1")).text);
  expect_losses_near(want, r0, 1e-6);
  expect_params_near(want, r0, 1e-6);
  // Two blocks of each split gradient (16×32 and 16×16), the second alone in its bucket:
  // 4 calls per step where 2 were, on the same 1,733 elements.
  EXPECT_EQ(count(two.out, "all_reduce mean f32[512] into bucket"), 2) << two.out;
  EXPECT_EQ(count(two.out, "all_reduce mean f32[256] into bucket"), 2) << two.out;
  EXPECT_EQ(count(two.out, ": one call on 512 elements (MPI rank 0 of 2"), 1) << two.out;
  EXPECT_EQ(count(two.out, ": one call on 256 elements (MPI rank 0 of 2"), 1) << two.out;
  EXPECT_EQ(count(two.out, "rank 0: 80 all_reduce calls on 34660 elements over 20 micro-batches"), 1) << two.out;

  CommandResult blocking =
      run_mpi(kMpirun + kBinary + " --ranks=mpi --split_bytes=1024 --blocking --out=" + tmp("split_blocking"));
  ASSERT_EQ(blocking.exit_code, 0) << blocking.out;
  EXPECT_EQ(r0.text, read_run(tmp("split_blocking.rank0")).text);
}

// One bucket holds every gradient and the loss (1,732 parameters + 1): one MPI call per
// step instead of seven, with the same bytes (two ranks sum each element as a + b).
// The bucketed run is profiled too (--profile).
TEST(DataParallel, BucketedAllReduceIsOneCallWithTheSameResult) {
  CommandResult bucketed =
      run_mpi(kMpirun + kBinary + " --ranks=mpi --describe --profile --out=" + tmp("bucketed"));
  ASSERT_EQ(bucketed.exit_code, 0) << bucketed.out;
  CommandResult per_op = run_mpi(kMpirun + kBinary + " --ranks=mpi --describe " +
                                     "--bucket_bytes=0 --out=" + tmp("per_op"));
  ASSERT_EQ(per_op.exit_code, 0) << per_op.out;
  EXPECT_EQ(count(bucketed.out, "into bucket of 7"), 7) << bucketed.out;
  EXPECT_EQ(count(bucketed.out, "rank 0: 20 all_reduce calls on 34660 elements over 20 micro-batches"), 1)
      << bucketed.out;
  EXPECT_EQ(count(bucketed.out, ": one call on 1733 elements (MPI rank 0 of 2"), 1) << bucketed.out;
  // --profile: the time of what runs while the bucket is in flight (profiling the steps
  // after the warm-up changes none of their results: compared below).
  EXPECT_EQ(count(bucketed.out, "rank 0: bucket 0 (1733 elements) in flight over invocations "), 1)
      << bucketed.out;
  EXPECT_EQ(count(per_op.out, "into bucket"), 0) << per_op.out;
  EXPECT_EQ(count(per_op.out, "all_reduce mean f32["), 7) << per_op.out;
  EXPECT_EQ(read_run(tmp("bucketed.rank0")).text, read_run(tmp("per_op.rank0")).text);
  EXPECT_EQ(read_run(tmp("bucketed.rank1")).text, read_run(tmp("per_op.rank1")).text);
}

// Buckets are waited for before the first reader of a result, are kept apart by
// reduction, and leave out a result nothing reads (bucket_check.cc has the graph and the
// closed form; the all_reduce ops of inputs are scheduled first, the readers fused into
// invocation 4).
TEST(DataParallel, BucketsAreWaitedForAtTheirFirstReader) {
  CommandResult r = run_mpi(kMpirun + "tests/data_parallel/bucket_check");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string mpi = " (MPI rank 0 of 2 (Open MPI v4.1.4, progress thread))";
  for (const std::string& line : std::vector<std::string>{
           "0  all_reduce sum f32[4] into bucket of 1: one call on 4 elements" + mpi +
               ", waited before invocation 4 (0.0 of the step's 0.0 MFLOP in between)\n",
           "1  all_reduce mean f32[4] into bucket of 2\n",
           "2  all_reduce mean f32[4] into bucket of 2: one call on 8 elements" + mpi +
               ", waited before invocation 4 (0.0 of the step's 0.0 MFLOP in between)\n",
           "3  all_reduce sum f32[4]" + mpi + "\n",
           "rank 0: out 12.000000 38.500000 83.000000 145.500000\n",
           "rank 1: out 12.000000 38.500000 83.000000 145.500000\n",
       }) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  }
}

TEST(DataParallel, WorldSizeOneIsBitwiseTheStepWithoutAllReduce) {
  CommandResult off = run_command(kBinary + " --ranks=none --out=" + tmp("off"));
  ASSERT_EQ(off.exit_code, 0) << off.out;
  CommandResult on = run_command(kBinary + " --ranks=single --out=" + tmp("on"));
  ASSERT_EQ(on.exit_code, 0) << on.out;
  const TrainedRun a = read_run(tmp("off.rank0"));
  const TrainedRun b = read_run(tmp("on.rank0"));
  ASSERT_EQ(a.losses.size(), 20u);
  EXPECT_EQ(a.text, b.text);
}

// train_mlp joins the launch as the driver does (world_from_environment, then
// runtime/backend.h's step_communicator): without a launcher, world.h's message.
TEST(DataParallel, MpiRanksWithoutMpirunIsAnError) {
  CommandResult r = run_command(kBinary + " --ranks=mpi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "train_mlp: error: data parallelism needs a launcher, and none started this process. Under "
            "MPI: `mpirun -np N PROGRAM --data-parallel` or `srun -n N --mpi=pmix PROGRAM --data-parallel` "
            "(they set OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK); torchrun-style (Gloo over TCP): set "
            "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in every process, e.g. `RANK=0 WORLD_SIZE=2 "
            "MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 PROGRAM --data-parallel` and the same with RANK=1. Or "
            "drop --data-parallel to train in one process\n");
}

TEST(DataParallel, AGlobalBatchThatDoesNotSplitIsAnError) {
  CommandResult r = run_mpi(kMpirun + kBinary + " --ranks=mpi --batch=33");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("train_mlp: error: the global batch of 33 rows (f32[33,16]) does not split "
                       "evenly over 2 ranks; use a batch size that is a multiple of the world "
                       "size\n"),
            std::string::npos)
      << r.out;
}

TEST(DataParallel, SeveralRanksNeedTheCpuBackend) {
  CommandResult r = run_mpi(kMpirun + kBinary + " --ranks=mpi --backend=reference");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("train_mlp: error: data parallelism over 2 ranks needs the cpu or cuda backend; "
                       "the reference interpreter runs one process\n"),
            std::string::npos)
      << r.out;
}

TEST(DataParallel, RanksWithDifferentStepsAreAnError) {
  // mpirun's MPMD form: rank 0 a 32-wide MLP, rank 1 a 64-wide one.
  CommandResult r = run_mpi(kMpiEnv + "mpirun -np 1 " + kBinary +
                                " --ranks=mpi --hidden=32 : -np 1 " + kBinary +
                                " --ranks=mpi --hidden=64");
  EXPECT_NE(r.exit_code, 0);
  const std::string message =
      "train_mlp: error: data parallelism: the 2 ranks compiled different training steps (a "
      "different model, batch size, loss or optimizer on some rank); every rank must compile "
      "the same step for its share of the global batch\n";
  const size_t first = r.out.find(message);
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_NE(r.out.find(message, first + 1), std::string::npos) << "both ranks report it:\n"
                                                                << r.out;
}

// The compiled all_reduce against the reference interpreter's, world size 1: as an op
// alone (operand and result in different buffers: an input and the arena), and inside a
// whole data-parallel training step.
TEST(DataParallel, CompiledAllReduceMatchesTheReference) {
  for (const char* reduction : {"mean", "sum"}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      Graph g("f");
      const Type t{dtype, {3, 5}};
      ValueId x = g.add_input("x", t);
      ValueId y = g.add_node(Op::AllReduce, {x}, {{"reduction", std::string(reduction)}}, {}, t);
      g.add_output(g.add_node(Op::Mul, {y, y}, {}, {}, t));
      Tensor in(t);
      for (int64_t i = 0; i < in.numel(); ++i) in.set_double(i, 0.25 * i - 1.5);
      auto ex = codegen::compile_for_cpu(g);
      ASSERT_TRUE(ex.ok()) << ex.error().to_string();
      EXPECT_NE((*ex)->describe().find("all_reduce " + std::string(reduction) + " " +
                                       t.to_string() + " (single process)"),
                std::string::npos)
          << (*ex)->describe();
      ASSERT_TRUE((*ex)->set_input("x", in).ok());
      ASSERT_TRUE((*ex)->run().ok());
      auto want = reference::run(g, {in});
      ASSERT_TRUE(want.ok()) << want.error().to_string();
      std::string why;
      EXPECT_TRUE(all_close((*ex)->output(0), want->outputs[0], 0.0, &why)) << why;
    }
  }
  auto net = FlowBuilder::from(Linear(6, 8)).through(ReLU()).through(Linear(8, 3)).build();
  ASSERT_TRUE(net.ok());
  const std::vector<InputSpec> inputs = {{"x", Type{DType::f32, {4, 6}}}};
  auto cpu = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2),
                              {.seed = 3, .bind = {.communicator = collective::single_process()}});
  auto ref = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2),
                              {.seed = 3, .backend = "reference",
                               .bind = {.communicator = collective::single_process()}});
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  int all_reduces = 0;
  for (const Node& n : ref->step_graph().nodes()) all_reduces += n.op == Op::AllReduce;
  EXPECT_EQ(all_reduces, 5);  // 4 gradients and the loss
  for (int step = 0; step < 10; ++step) {
    Tensor x(Type{DType::f32, {4, 6}});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.7 * i + step));
    Tensor y = Tensor::from_vector<int64_t>({4}, {0, 2, 1, step % 3});
    auto a = cpu->step({x, y});
    auto b = ref->step({x, y});
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_NEAR(*a, *b, 1e-5 * std::abs(*b)) << "step " << step;
  }
}

}  // namespace data_parallel_test
}  // namespace
}  // namespace weft

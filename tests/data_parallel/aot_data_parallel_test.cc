// Data parallelism in an AOT training binary (tools/aot/weft.bzl, training/driver):
// `mpirun -np 2 aot_regressor --data-parallel`, 2 ranks of a model compiled at batch 4,
// against the JIT driver's npy-regressor (the same network, seed and data order) in one
// process at batch 8. Same losses every step and the same test loss after every epoch
// (so the same parameters), rank 0 alone printing and writing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "formats/npy.h"
#include "tests/data_parallel/regressor_data.h"
#include "tests/testing/metrics_csv.h"
#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"

namespace weft {
namespace {

using testing::CommandResult;
using testing::read_metrics;
using testing::kMpiEnv;
using testing::kMpirun;
using testing::run_command;
using testing::run_mpi;

std::string tmp(const std::string& name) { return testing::test_tmpdir() + "/" + name; }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(AotDataParallel, TwoRanksOfTheBinaryMatchOneProcessOnTheGlobalBatch) {
  // 52 samples: 6 global batches of 8 per epoch, 4 left over (dropped).
  StatusOr<std::string> data = testing::write_regressor_data(testing::test_tmpdir());
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  const std::string flags = *data;

  CommandResult one = run_command("WEFT_DRIVER_TEST_MODEL=npy-regressor training/driver/jit_model_train" + flags +
                                  " --metrics-csv=" + tmp("one.csv"));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  CommandResult two = run_mpi(kMpirun + "tests/data_parallel/aot_regressor --data-parallel" + flags +
                              " --metrics-csv=" + tmp("two.csv") + " --checkpoint-out=" + tmp("two.safetensors"));
  ASSERT_EQ(two.exit_code, 0) << two.out;

  // Rank 0 alone prints (each line once) and writes the files.
  EXPECT_EQ(count(two.out, "), batch 8 (2 ranks x 4), 6 steps per epoch, 4 epochs (24 steps)"), 1)
      << two.out;
  EXPECT_EQ(count(two.out, "epoch 4/4: mean loss "), 1) << two.out;
  EXPECT_EQ(count(two.out, "checkpoint: " + tmp("two.safetensors") + " (step 24)"), 1) << two.out;

  std::map<std::string, std::vector<double>> want = read_metrics(tmp("one.csv"));
  std::map<std::string, std::vector<double>> got = read_metrics(tmp("two.csv"));
  ASSERT_EQ(want["loss"].size(), 24u);
  ASSERT_EQ(got["loss"].size(), 24u);
  double worst = 0;
  for (size_t s = 0; s < 24; ++s) {
    worst = std::max(worst, std::abs(got["loss"][s] - want["loss"][s]) / std::abs(want["loss"][s]));
    EXPECT_NEAR(got["loss"][s], want["loss"][s], 1e-5 * std::abs(want["loss"][s])) << "step " << s + 1;
    EXPECT_EQ(got["lr"][s], want["lr"][s]);
    // The test loss after each epoch: the parameters agree.
    if (std::isnan(want["test_loss"][s])) {
      EXPECT_TRUE(std::isnan(got["test_loss"][s])) << "step " << s + 1;
    } else {
      EXPECT_NEAR(got["test_loss"][s], want["test_loss"][s], 1e-5 * want["test_loss"][s]) << "step " << s + 1;
    }
  }
  std::printf("largest relative loss difference over 24 steps: %.3g\n", worst);
  EXPECT_FALSE(std::isnan(want["test_loss"].back()));
  // The model trains: the comparison is about a loss that moves.
  EXPECT_LT(want["loss"].back(), 0.8 * want["loss"].front());
}

// --bucket-mb and --first-bucket-mb reach the binary's model (driver::ModelOptions, the
// generated factory, CompiledModelOptions): by default the step's all_reduce ops share
// a bucket, with --bucket-mb=0 each is its own call (the profile's rows say which); the
// losses are the same bits either way (a mean over 2 ranks of each element).
TEST(AotDataParallel, BucketSizesReachTheModel) {
  StatusOr<std::string> data = testing::write_regressor_data(testing::test_tmpdir());
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  const std::string run = kMpirun + "tests/data_parallel/aot_regressor --data-parallel --epochs=1 --profile" + *data;
  CommandResult bucketed = run_mpi(run + " --metrics-csv=" + tmp("bucketed.csv"));
  ASSERT_EQ(bucketed.exit_code, 0) << bucketed.out;
  CommandResult alone = run_mpi(run + " --bucket-mb=0 --first-bucket-mb=0 --metrics-csv=" + tmp("alone.csv"));
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  EXPECT_GT(count(bucketed.out, "into bucket of"), 0) << bucketed.out;
  EXPECT_EQ(count(alone.out, "into bucket of"), 0) << alone.out;
  EXPECT_GT(count(alone.out, "all_reduce mean"), 0) << alone.out;
  EXPECT_EQ(read_metrics(tmp("alone.csv"))["loss"], read_metrics(tmp("bucketed.csv"))["loss"]);
  CommandResult refused = run_mpi(kMpirun + "tests/data_parallel/aot_regressor --data-parallel --bucket-mb=-1" + *data);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_EQ(count(refused.out, "error: --bucket-mb=-1: must be in [0, 65536] MiB\n"), 2) << refused.out;
}

// Fewer samples than one global batch (the model's 4 rows times 2 ranks): every rank says so.
TEST(AotDataParallel, FewerSamplesThanOneGlobalBatchIsAnError) {
  Tensor x(Type{DType::f32, {6, 3}}), y(Type{DType::f32, {6, 2}});
  for (int64_t i = 0; i < 18; ++i) x.data<float>()[i] = static_cast<float>(i);
  for (int64_t i = 0; i < 12; ++i) y.data<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(write_npy(tmp("x6.npy"), x).ok());
  ASSERT_TRUE(write_npy(tmp("y6.npy"), y).ok());
  CommandResult r = run_mpi(kMpirun + "tests/data_parallel/aot_regressor --data-parallel --train=" + tmp("x6.npy") +
                            "," + tmp("y6.npy"));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, ": 6 training samples do not make one batch of 8 (the model's batch size 4 times 2 "
                         "ranks)\n"),
            2)
      << r.out;
}

// Ranks started from different binaries (MPMD: rank 0 the regressor, rank 1 the
// //bench/aot:mlp driver) stop before their first step, each with the same error, rather
// than hang in mismatched all_reduce calls.
TEST(AotDataParallel, RanksWithDifferentModelsAreAnError) {
  CommandResult r = run_mpi(kMpiEnv + "mpirun " +
                            "-np 1 tests/data_parallel/aot_regressor --data-parallel : "
                            "-np 1 tests/data_parallel/aot_mlp_train --data-parallel");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "error: data parallelism: the 2 ranks run different models (a binary built "
                         "from another model, batch size, loss or optimizer on some rank); every rank "
                         "must run the same binary\n"),
            2)
      << r.out;
  EXPECT_EQ(count(r.out, "training on"), 0) << r.out;
}

// A library built without data_parallel = True has no all_reduce ops in its step: under
// --data-parallel every rank would train alone on its shard, so both refuse to start.
TEST(AotDataParallel, ModelBuiltWithoutDataParallelIsAnError) {
  CommandResult r = run_mpi(kMpirun + "tests/data_parallel/aot_mlp_train --data-parallel");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "error: data parallelism: model 'mlp' was built without data_parallel = "
                         "True (weft_library / weft_binary), so its step does not average "
                         "gradients over the 2 ranks; rebuild it with data_parallel = True\n"),
            2)
      << r.out;
  EXPECT_EQ(count(r.out, "training on"), 0) << r.out;
}

}  // namespace
}  // namespace weft

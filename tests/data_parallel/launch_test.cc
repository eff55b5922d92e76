// Launching like clusters do (runtime/collective/world.h), with the AOT training binary
// //tests/data_parallel:aot_regressor (batch 4, data_parallel = True) under the training
// driver's --data-parallel:
// - torchrun-style: 2 local processes given RANK, WORLD_SIZE, MASTER_ADDR and a free
//   MASTER_PORT (Gloo over TCP) train exactly as one process of the JIT npy-regressor at
//   batch 8 (every step's loss, the test loss after each epoch);
// - faults ($WEFT_TEST_FAULT, training_run.cc's test-only hook): a rank that exits, or
//   hangs, before step 5 makes the other exit non-zero within --collective-timeout=5 with
//   the line naming the peer and the collective, under Gloo and under mpirun; the
//   checkpoint written before the fault is intact and a relaunch from it trains the rest
//   of the run as the uninterrupted one does.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/data_parallel/regressor_data.h"
#include "tests/testing/free_port.h"
#include "tests/testing/metrics_csv.h"
#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"

namespace weft {
namespace {
namespace launch_test {  // this file's names, apart in its package's unity test

using testing::CommandResult;
using testing::Process;
using testing::read_metrics;

std::string tmp(const std::string& name) { return testing::test_tmpdir() + "/" + name; }

// 52 samples of a linear target: 6 global batches of 8 per epoch; 4 epochs, 24 steps.
std::string data_flags() {
  StatusOr<std::string> flags = testing::write_regressor_data(testing::test_tmpdir());
  EXPECT_TRUE(flags.ok()) << flags.error().to_string();
  return flags.ok() ? *flags : std::string();
}

// How every launch below runs the binary: data parallel, a fault noticed within 5 s.
constexpr const char* kDataParallel = " --data-parallel --collective-timeout=5";

// The 2 ranks of a torchrun-style launch of aot_regressor, each with `env` before it;
// rank 0's result first. A rank still running `rank1_timeout_s` after rank 0 ended is
// killed (a hung rank: nobody else ends it).
std::vector<CommandResult> torchrun(const std::string& env, const std::string& flags, double rank1_timeout_s = 120) {
  const std::string port = std::to_string(testing::free_port());
  std::vector<std::unique_ptr<Process>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(std::make_unique<Process>("env " + env + " RANK=" + std::to_string(r) +
                                              " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
                                              " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
                                              " tests/data_parallel/aot_regressor" + kDataParallel + flags));
  }
  std::vector<CommandResult> done;
  done.push_back(ranks[0]->finish(120));
  done.push_back(ranks[1]->finish(rank1_timeout_s));
  return done;
}

void expect_same_losses(const std::string& one_csv, const std::string& got_csv, size_t from_step) {
  std::map<std::string, std::vector<double>> want = read_metrics(one_csv), got = read_metrics(got_csv);
  ASSERT_EQ(want["loss"].size(), 24u);
  ASSERT_EQ(got["loss"].size(), 24u - from_step);
  for (size_t s = from_step; s < 24; ++s) {
    const size_t g = s - from_step;
    EXPECT_NEAR(got["loss"][g], want["loss"][s], 1e-5 * std::abs(want["loss"][s])) << "step " << s + 1;
    if (!std::isnan(want["test_loss"][s])) {
      EXPECT_NEAR(got["test_loss"][g], want["test_loss"][s], 1e-5 * want["test_loss"][s]) << "step " << s + 1;
    }
  }
  EXPECT_LT(want["loss"].back(), 0.8 * want["loss"].front());  // a loss that moves
}

class LaunchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    flags_ = new std::string(data_flags());
    CommandResult one = testing::run_command("WEFT_DRIVER_TEST_MODEL=npy-regressor training/driver/jit_model_train" +
                                             *flags_ + " --metrics-csv=" + tmp("one.csv"));
    ASSERT_EQ(one.exit_code, 0) << one.out;
  }
  static std::string* flags_;
};
std::string* LaunchTest::flags_ = nullptr;

TEST_F(LaunchTest, TorchrunStyleTwoRanksMatchOneProcessOnTheGlobalBatch) {
  std::vector<CommandResult> two = torchrun("", *flags_ + " --metrics-csv=" + tmp("two.csv"));
  ASSERT_EQ(two[0].exit_code, 0) << two[0].out;
  ASSERT_EQ(two[1].exit_code, 0) << two[1].out;
  EXPECT_NE(two[0].out.find("), batch 8 (2 ranks x 4), 6 steps per epoch, 4 epochs (24 steps)"), std::string::npos)
      << two[0].out;
  EXPECT_EQ(two[1].out, "");  // rank 1 prints nothing
  expect_same_losses(tmp("one.csv"), tmp("two.csv"), 0);
}

// Rank 1 exits before step 5; rank 0, in step 5's all_reduce, finds the connection
// reset, exits 1 naming it, and leaves step 4's checkpoint, from which a relaunch
// trains steps 5-24 as the uninterrupted run does.
TEST_F(LaunchTest, GlooRankThatDiesEndsTheOtherAndARelaunchResumes) {
  const std::string ck = " --checkpoint-out=" + tmp("ck.safetensors") + " --checkpoint-every=2";
  std::vector<CommandResult> r = torchrun("WEFT_TEST_FAULT=1:5:exit", *flags_ + ck);
  EXPECT_EQ(r[1].exit_code, 3) << r[1].out;
  EXPECT_EQ(r[0].exit_code, 1) << r[0].out;
  EXPECT_NE(r[0].out.find("error: rank 0 of 2 (Gloo), in all_reduce #1 of step 5 (36 bytes): rank 1 is gone ("),
            std::string::npos)
      << r[0].out;
  std::vector<CommandResult> again =
      torchrun("", *flags_ + " --checkpoint-in=" + tmp("ck.safetensors") + " --metrics-csv=" + tmp("resumed.csv"));
  ASSERT_EQ(again[0].exit_code, 0) << again[0].out;
  ASSERT_EQ(again[1].exit_code, 0) << again[1].out;
  expect_same_losses(tmp("one.csv"), tmp("resumed.csv"), 4);
}

TEST_F(LaunchTest, GlooRankThatHangsEndsTheOtherWithinTheTimeout) {
  std::vector<CommandResult> r = torchrun("WEFT_TEST_FAULT=1:5:hang", *flags_, /*rank1_timeout_s=*/1);
  EXPECT_EQ(r[0].exit_code, 1) << r[0].out;
  EXPECT_NE(r[0].out.find("error: rank 0 of 2 (Gloo), in all_reduce #1 of step 5 (36 bytes): rank 1 did not answer "
                          "within 5 s (it died or hangs); exiting"),
            std::string::npos)
      << r[0].out;
}

// Under mpirun: a rank that exits ends the job through mpirun, which names it; one that
// hangs is left by the other, whose watchdog prints the line and exits 1 (mpirun then
// ends the job).
TEST_F(LaunchTest, MpiRankThatDiesOrHangsEndsTheJob) {
  CommandResult died = testing::run_mpi("WEFT_TEST_FAULT=1:5:exit " + testing::kMpirun +
                                        "tests/data_parallel/aot_regressor" + kDataParallel + *flags_);
  EXPECT_NE(died.exit_code, 0) << died.out;
  EXPECT_NE(died.out.find("Process name: [["), std::string::npos) << died.out;
  EXPECT_NE(died.out.find(",1],1]\n  Exit code:    3"), std::string::npos) << died.out;
  CommandResult hung = testing::run_mpi("WEFT_TEST_FAULT=1:5:hang " + testing::kMpirun +
                                        "tests/data_parallel/aot_regressor" + kDataParallel + *flags_);
  EXPECT_EQ(hung.exit_code, 1) << hung.out;
  EXPECT_NE(hung.out.find("\nerror: rank 0 of 2 (MPI), in all_reduce #1 of step 5 (36 bytes): rank 1 did not answer "
                          "within 5 s (it died or hangs); exiting\n"),
            std::string::npos)
      << hung.out;
}

}  // namespace launch_test
}  // namespace
}  // namespace weft

// world_from_environment's choice and its errors (no launcher, torchrun variables
// missing or malformed, srun without PMI), local_rank's variables, and the watchdog that
// ends a rank stuck in a collective with the line naming it.
#include "runtime/collective/world.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "runtime/collective/watchdog.h"
#include "tests/testing/free_port.h"

namespace weft::collective {
namespace {

// Every variable a launcher sets, unset before each test (bazel test sets none of them;
// running the binary by hand might).
class WorldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                             "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                             "SLURM_PROCID", "SLURM_NTASKS", "GLOO_SOCKET_IFNAME"}) {
      unsetenv(name);
    }
  }
  static std::string error_of_world() {
    StatusOr<std::shared_ptr<Communicator>> world = world_from_environment(std::chrono::seconds(2));
    return world.ok() ? "a world: " + (*world)->describe() : world.error().message;
  }
};

TEST_F(WorldTest, NoLauncherNamesTheVariablesAndTheCommands) {
  EXPECT_EQ(detect_launcher(), Launcher::none);
  EXPECT_EQ(error_of_world(),
            "data parallelism needs a launcher, and none started this process. Under MPI: `mpirun -np N PROGRAM "
            "--data-parallel` or `srun -n N --mpi=pmix PROGRAM --data-parallel` (they set OMPI_COMM_WORLD_SIZE, "
            "PMI_SIZE or PMIX_RANK); torchrun-style (Gloo over TCP): set RANK, WORLD_SIZE, MASTER_ADDR and "
            "MASTER_PORT in every process, e.g. `RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "
            "PROGRAM --data-parallel` and the same with RANK=1. Or drop --data-parallel to train in one process");
}

TEST_F(WorldTest, MpiLaunchersAreDetected) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    setenv(name, "2", 1);
    setenv("RANK", "0", 1);  // MPI wins over the torchrun variables
    EXPECT_EQ(detect_launcher(), Launcher::mpi) << name;
    unsetenv(name);
  }
  EXPECT_EQ(detect_launcher(), Launcher::torchrun);
}

TEST_F(WorldTest, TorchrunVariablesMustAllBeSetAndValid) {
  setenv("RANK", "1", 1);
  EXPECT_EQ(detect_launcher(), Launcher::torchrun);
  EXPECT_EQ(error_of_world(),
            "torchrun-style launch: WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not set; every process needs RANK, "
            "WORLD_SIZE, MASTER_ADDR and MASTER_PORT (LOCAL_RANK optional), e.g. `RANK=1 WORLD_SIZE=2 "
            "MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 PROGRAM --data-parallel`");
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500x", 1);
  EXPECT_EQ(error_of_world(), "torchrun-style launch: MASTER_PORT=29500x is not a TCP port (1 to 65535)");
  setenv("MASTER_PORT", "29500", 1);
  setenv("RANK", "2", 1);
  EXPECT_EQ(error_of_world(), "torchrun-style launch: RANK=2 is not a rank in [0, WORLD_SIZE=2)");
  setenv("WORLD_SIZE", "0", 1);
  EXPECT_EQ(error_of_world(), "torchrun-style launch: WORLD_SIZE=0 is not a world size of 1 or more");
  // Set but empty: it waited out the timeout for "the rendezvous at :29500".
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  setenv("MASTER_ADDR", "", 1);
  EXPECT_EQ(error_of_world(), "torchrun-style launch: MASTER_ADDR is empty; set it to rank 0's address as every "
                              "rank reaches it (127.0.0.1 on one machine)");
}

TEST_F(WorldTest, ATorchrunWorldOfOneJoinsAlone) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("MASTER_ADDR", "localhost", 1);
  setenv("MASTER_PORT", "0", 1);
  EXPECT_EQ(error_of_world(), "torchrun-style launch: MASTER_PORT=0 is not a TCP port (1 to 65535)");
  const std::string port = std::to_string(testing::free_port());
  setenv("MASTER_PORT", port.c_str(), 1);
  EXPECT_EQ(error_of_world(), "a world: Gloo rank 0 of 1 (TCP, rendezvous at localhost:" + port + ")");
}

TEST_F(WorldTest, SrunWithoutPmiIsAnError) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(detect_launcher(), Launcher::none);
  EXPECT_EQ(error_of_world(),
            "data parallelism: Slurm started this task (SLURM_PROCID=1 of SLURM_NTASKS=4) without PMI, so MPI "
            "cannot find the other tasks: launch with `srun --mpi=pmix -n N PROGRAM --data-parallel` (`srun "
            "--mpi=list` names this Slurm's plugins)");
  setenv("PMIX_RANK", "1", 1);  // srun --mpi=pmix
  EXPECT_EQ(detect_launcher(), Launcher::mpi);
}

TEST_F(WorldTest, LocalRankComesFromTheLauncher) {
  EXPECT_EQ(local_rank(), 0);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(local_rank(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(local_rank(), 2);
  setenv("LOCAL_RANK", "1", 1);
  EXPECT_EQ(local_rank(), 1);
}

// A transport with no timeout of its own: all_reduce never returns.
class Stuck : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  Status all_reduce(void*, int64_t count, DType, Reduction) override {
    if (count > 1) std::this_thread::sleep_for(std::chrono::hours(1));
    return Status();
  }
  Status broadcast(void*, int64_t, int) override { return Status(); }
  std::string describe() const override { return "stuck"; }
};

TEST(WatchdogTest, ARankStuckInACollectiveExitsNamingItAndThePeer) {
  EXPECT_EXIT(
      {
        std::shared_ptr<Communicator> comm = watched(std::make_shared<Stuck>(), "MPI", std::chrono::milliseconds(300));
        float x[4] = {};
        note_step(5);
        (void)comm->all_reduce(x, 1, DType::f32, Reduction::mean);  // returns: disarmed
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        (void)comm->all_reduce(x, 4, DType::f32, Reduction::mean);
      },
      ::testing::ExitedWithCode(kExitCollectiveFailed),
      "^error: rank 0 of 2 \\(MPI\\), in all_reduce #2 of step 5 \\(16 bytes\\): rank 1 did not answer within "
      "0\\.3 s \\(it died or hangs\\); exiting\n$");
}

// A transport whose started reduction completes on the third test().
class Slow : public Stuck {
 public:
  class Pending : public PendingReduction {
   public:
    explicit Pending(int* tests) : tests_(tests) {}
    bool test() override { return ++*tests_ >= 3; }
    Status wait() override { return Status(); }

   private:
    int* tests_;
  };
  StatusOr<std::unique_ptr<PendingReduction>> start_all_reduce(void*, int64_t, DType, Reduction) override {
    return std::unique_ptr<PendingReduction>(std::make_unique<Pending>(&tests));
  }
  int tests = 0;
};

// The executor's polls reach the transport through the watchdog (MPI advances a
// reduction inside them where no progress thread does).
TEST(WatchdogTest, AWatchedReductionIsTestedByItsTransport) {
  auto slow = std::make_shared<Slow>();
  std::shared_ptr<Communicator> comm = watched(slow, "MPI", std::chrono::seconds(60));
  float x[4] = {};
  StatusOr<std::unique_ptr<PendingReduction>> pending = comm->start_all_reduce(x, 4, DType::f32, Reduction::sum);
  ASSERT_TRUE(pending.ok());
  EXPECT_FALSE((*pending)->test());
  EXPECT_FALSE((*pending)->test());
  EXPECT_TRUE((*pending)->test());
  EXPECT_EQ(slow->tests, 3);
  EXPECT_TRUE((*pending)->wait().ok());
}

TEST(WatchdogTest, SizesAndPeersInMessages) {
  EXPECT_EQ(format_bytes(512), "512 bytes");
  EXPECT_EQ(format_bytes(1100000), "1.1 MB");
  EXPECT_EQ(format_seconds(std::chrono::seconds(300)), "300 s");
  EXPECT_EQ(peer_of(1, 2), "rank 0");
  EXPECT_EQ(peer_of(1, 4), "a peer");
}

}  // namespace
}  // namespace weft::collective

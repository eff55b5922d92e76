// [Distributed] #32: the AOT CUDA training driver with --data-parallel as a user launches
// it (//examples/fashion_mnist:train_mlp_cuda_dp, built with data_parallel = True, so it
// links the launch's world: Open MPI and Gloo). Under the torchrun variables of a world of
// one (Gloo) and under `mpirun -np 1` (MPI) it joins the world, then asks the cuda backend
// for its communicator (runtime/backend.h's communicator_for: NCCL on the GPU of the
// local rank, its unique id sent over that world). Without a GPU that is where it stops,
// exiting 1 with the pinned line, before any data is read. On a GPU the binary trains:
// tests/cuda/nccl_check.sh compares its losses with the run without --data-parallel.
// The JIT example (//examples/fashion_mnist:mlp --backend=cuda) likewise.
#include <gtest/gtest.h>

#include <string>

#include "runtime/cuda/executor.h"
#include "tests/testing/free_port.h"
#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"

namespace {

using weft::testing::CommandResult;
using weft::testing::kMpiEnv;
using weft::testing::run_mpi;

constexpr const char* kBinary = "examples/fashion_mnist/train_mlp_cuda_dp";

TEST(NcclDriver, WithoutAGpuEveryLauncherGetsTheBackendsRefusal) {
  if (weft::cuda::available()) GTEST_SKIP() << "a GPU is present: tests/cuda/nccl_check.sh trains with it";
  const std::string expected = "error: --data-parallel: no CUDA device: " + weft::cuda::unavailable_reason() + "\n";
  const std::string torchrun = "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                               std::to_string(weft::testing::free_port()) + " ";
  for (const std::string& launch : {torchrun, kMpiEnv + "mpirun -np 1 "}) {
    SCOPED_TRACE(launch);
    CommandResult r = run_mpi(launch + kBinary + " --data-parallel --max-steps=1");
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
  }
}

// The JIT examples take the same path with --backend=cuda (the driver's connect_ranks,
// then the Trainer keeps the communicator it is given).
TEST(NcclDriver, TheJitExampleOnCudaAsksTheSameBackend) {
  if (weft::cuda::available()) GTEST_SKIP() << "a GPU is present: tests/cuda/nccl_check.sh trains with it";
  CommandResult r = weft::testing::run_command(
      "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
      std::to_string(weft::testing::free_port()) +
      " examples/fashion_mnist/mlp --backend=cuda --data-parallel --max-steps=1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "error: --data-parallel: no CUDA device: " + weft::cuda::unavailable_reason() + "\n");
}

// Linking the world, the binary no longer says that --data-parallel is unavailable.
TEST(NcclDriver, HelpOffersDataParallel) {
  CommandResult help = weft::testing::run_command(std::string(kBinary) + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("This binary's model was compiled for the cuda backend"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("--data-parallel is not available"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--data-parallel"), std::string::npos) << help.out;
}

}  // namespace

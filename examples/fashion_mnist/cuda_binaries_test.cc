// The AOT CUDA training binaries (weft_binary with backend = "cuda") as a user runs them.
// Without a GPU they start, and the first thing that needs the device fails with the
// backend's pinned message; flags are truthful about the backend; the binaries can be
// carried to a GPU machine (no MLIR, LLVM, Open MPI, oneDNN or libcuda). On a
// GPU, both train a few steps.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/cuda/executor.h"
#include "tests/testing/subprocess.h"

namespace {

using weft::testing::CommandResult;
using weft::testing::run_command;

constexpr const char* kBinaries[] = {"examples/fashion_mnist/train_cuda",
                                     "examples/fashion_mnist/train_mlp_cuda"};

TEST(TrainCuda, LinksNothingTheGpuMachineLacks) {
  for (const char* b : kBinaries) {
    CommandResult r = run_command(std::string("ldd ") + b);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    for (const char* lib : {"libMLIR", "libLLVM", "libmpi", "libcuda.so", "libdnnl"}) {
      EXPECT_EQ(r.out.find(lib), std::string::npos) << b << " links " << lib << ":\n" << r.out;
    }
    EXPECT_NE(r.out.find("libcudart"), std::string::npos) << r.out;
  }
}

TEST(TrainCuda, HelpAndFlagsNameTheBackend) {
  for (const char* b : kBinaries) {
    CommandResult help = run_command(std::string(b) + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.out;
    EXPECT_NE(help.out.find("\nThis binary's model was compiled for the cuda backend (weft_binary's "
                            "`backend`); --backend=cuda is accepted, any other is an error. It "
                            "links no MPI: --data-parallel is not available.\n"),
              std::string::npos)
        << help.out;
    CommandResult cpu = run_command(std::string(b) + " --backend=cpu --max-steps=1");
    EXPECT_EQ(cpu.exit_code, 2) << cpu.out;
    EXPECT_EQ(cpu.out, "error: --backend=cpu: this binary's model was compiled for cuda, and a "
                       "binary trains on the backend it was built for; build one with backend = "
                       "\"cpu\" (weft_binary, tools/aot/weft.bzl)\n");
    CommandResult dp = run_command(std::string(b) + " --data-parallel --max-steps=1");
    EXPECT_EQ(dp.exit_code, 2) << dp.out;
    EXPECT_EQ(dp.out, "error: --data-parallel: this binary links no MPI (it was built without "
                      "data_parallel = True, so it trains in one process); drop --data-parallel, "
                      "or build it with data_parallel = True (weft_binary, tools/aot/weft.bzl)\n");
  }
}

TEST(TrainCuda, WithoutAGpuSaysSo) {
  if (weft::cuda::available()) GTEST_SKIP() << "a GPU is present (TrainsOnTheGpu runs)";
  for (const char* b : kBinaries) {
    CommandResult r = run_command(std::string(b) + " --epochs=1 --max-steps=1 --backend=cuda");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(r.out, "error: no CUDA device: " + weft::cuda::unavailable_reason() + "\n") << b;
  }
}

TEST(TrainCuda, TrainsOnTheGpu) {
  if (!weft::cuda::available()) {
    GTEST_SKIP() << "no CUDA device: " << weft::cuda::unavailable_reason();
  }
  // Fashion-MNIST: $WEFT_FASHION_MNIST (a copied folder), else Debian's path.
  const char* env = std::getenv("WEFT_FASHION_MNIST");
  const std::string data = env ? env : "/usr/share/datasets/fashion-mnist";
  if (!std::ifstream(data + "/train-images-idx3-ubyte.gz").good()) {
    GTEST_SKIP() << "no Fashion-MNIST at " << data << " (set WEFT_FASHION_MNIST)";
  }
  for (const char* b : kBinaries) {
    CommandResult r = run_command(std::string(b) + " --data=" + data + " --epochs=1 --max-steps=20");
    EXPECT_EQ(r.exit_code, 0) << b << ":\n" << r.out;
    EXPECT_NE(r.out.find("test accuracy: "), std::string::npos) << r.out;
  }
}

}  // namespace

// #28: under an address-space limit (`ulimit -v`), `weftc run` died with an uncaught
// std::bad_alloc (or a thread that could not start) in a band of limits just above what
// its libraries need. Swept over that band, every run now either works or ends with one
// clear error and exit status 1 (runtime/out_of_memory.h): never an abort.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/testing/subprocess.h"

namespace weft {
namespace {
namespace address_space_test {  // this file's names, apart in its package's unity test

std::string weftc(int limit_mib, const std::string& args) {
  static const std::string binary = std::string(std::getenv("PWD")) + "/tools/weftc/weftc";
  return "ulimit -v " + std::to_string(limit_mib * 1024) + "; exec " + binary + " " + args;
}

TEST(AddressSpace, EveryLimitGivesAResultOrAClearError) {
  std::string run = "run examples/mlp/mlp.wir --out " + testing::test_tmpdir() + "/out";
  for (const char* name : {"x", "labels", "w1", "b1", "w2", "b2", "lr"}) {
    run += std::string(" --input ") + name + "=examples/mlp/" + name + ".npy";
  }
  // The lowest limit at which the dynamic loader maps weftc's libraries (MLIR, LLVM,
  // CUDA's), found by bisection; below it the loader refuses (exit 127), before main.
  int lo = 64, hi = 16384;
  ASSERT_EQ(testing::run_command(weftc(hi, "--help")).exit_code, 0);
  while (hi - lo > 8) {
    const int mid = (lo + hi) / 2;
    (testing::run_command(weftc(mid, "--help")).exit_code != 127 ? hi : lo) = mid;
  }
  // From a little above it (the libraries' own static initializers need a few MiB more,
  // and the layout varies from run to run) through where the run has room to finish: the
  // result, or one message, never an abort.
  int worked = 0, refused = 0;
  for (int limit = hi + 32; limit <= hi + 432; limit += 50) {
    testing::CommandResult r = testing::run_command(weftc(limit, run));
    if (r.exit_code == 0) {
      ++worked;
      continue;
    }
    EXPECT_EQ(r.exit_code, 1) << "limit " << limit << " MiB:\n" << r.out;
    EXPECT_NE(r.out.find("weftc: error: "), std::string::npos) << "limit " << limit << " MiB:\n" << r.out;
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << "limit " << limit << " MiB:\n" << r.out;
    ++refused;
  }
  EXPECT_GT(worked, 0);
  EXPECT_GT(refused, 0) << "the sweep should start where the headroom check refuses";
  testing::CommandResult low = testing::run_command(weftc(hi + 32, run));
  EXPECT_NE(low.out.find("weftc: error: the address-space limit (ulimit -v: " + std::to_string(hi + 32) +
                         " MiB) leaves less than 256 MiB free once weft's libraries are loaded; raise the limit"),
            std::string::npos)
      << low.out;
}

}  // namespace address_space_test
}  // namespace
}  // namespace weft

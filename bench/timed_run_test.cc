// The result line's config says what ran the steps (#29: a CUDA run was labelled
// "reference interpreter, 1 thread").

#include "bench/timed_run.h"

#include <gtest/gtest.h>

namespace weft::bench {
namespace {

TEST(TimedRun, RunConfigNamesTheBackend) {
  EXPECT_EQ(run_config("cpu", 8), "compiled cpu, 8 threads");
  EXPECT_EQ(run_config("cuda", 0), "compiled cuda");
  EXPECT_EQ(run_config("reference", 0), "reference interpreter, 1 thread");
}

}  // namespace
}  // namespace weft::bench

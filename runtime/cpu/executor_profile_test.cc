// The Executor's profile report names its clock: wall time by default, the calling
// thread's CPU time with WEFT_PROFILE_CLOCK=thread (the one-thread figures that stay
// put while other processes load the machine). It also refuses a thread count that is
// not one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/cpu/executor.h"

namespace weft::cpu {
namespace {

// The report's first line after two profiled steps of an empty Program, with
// WEFT_PROFILE_CLOCK as given (unset when null) while profiling is switched on.
std::string first_line(const char* clock) {
  if (clock) setenv("WEFT_PROFILE_CLOCK", clock, /*overwrite=*/1);
  else unsetenv("WEFT_PROFILE_CLOCK");
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(Program{}, {}, {.num_threads = 1});
  EXPECT_TRUE(ex.ok());
  if (!ex.ok()) return "";
  (*ex)->set_profiling(true);
  unsetenv("WEFT_PROFILE_CLOCK");
  EXPECT_TRUE((*ex)->run().ok());
  EXPECT_TRUE((*ex)->run().ok());
  const std::string report = (*ex)->profile_report();
  return report.substr(0, report.find('\n'));
}

TEST(ExecutorProfile, WallTimeByDefault) {
  EXPECT_EQ(first_line(nullptr),
            "2 steps, 0.0 us per step in 0 invocations (0 on the reference interpreter), then 0 "
            "updates copied");
}

TEST(ExecutorProfile, ThreadCpuTimeWhenAskedFor) {
  EXPECT_EQ(first_line("thread"),
            "2 steps, 0.0 us of the calling thread's CPU time per step in 0 invocations (0 on "
            "the reference interpreter), then 0 updates copied");
  // Any other value keeps the wall clock.
  EXPECT_EQ(first_line("wall").find("CPU time"), std::string::npos);
}

// create() refuses a thread count that is not one (thread_pool.h's thread_count_problem):
// WEFT_NUM_THREADS=-4 ran on every core.
TEST(ExecutorThreads, RefusesANegativeCountFromTheEnvironment) {
  setenv("WEFT_NUM_THREADS", "-4", /*overwrite=*/1);
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(Program{}, {}, {});
  unsetenv("WEFT_NUM_THREADS");
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message,
            "WEFT_NUM_THREADS='-4' (the environment): must be a positive count; unset it to use every core");
  EXPECT_TRUE(Executor::create(Program{}, {}, {}).ok());
}

}  // namespace
}  // namespace weft::cpu

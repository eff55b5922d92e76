// bench/loops and bench/loops_cuda (child processes): the trips per step and the loop
// overhead lines of a real model's forms, and the pinned refusals (a bad --device, CUDA
// without a GPU, an unknown model).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "bench/process.h"
#include "runtime/cuda/executor.h"

namespace weft::bench {
namespace {
namespace loops_test {  // this file's names, apart in its package's unity test

ProcessResult run_binary(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), "bench/" + name);
  const char* dir = std::getenv("TEST_TMPDIR");
  return run_process(args, {}, {}, std::string(dir ? dir : "/tmp") + "/" + name + ".stderr");
}

// The whitespace-separated fields of the first line of `out` that starts with `prefix`.
std::vector<std::string> row(const std::string& out, const std::string& prefix) {
  std::stringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind(prefix, 0) != 0) continue;
    std::stringstream fields(l);
    std::vector<std::string> v;
    for (std::string f; fields >> f;) v.push_back(f);
    return v;
  }
  return {};
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// feedback_fixed's one for_n(10) loop: 10 trips forward and 10 in its gradient's loop per
// step, looped and recomputed; none unrolled. Each loop invocation gets a direct line.
TEST(Loops, TripsPerStepAndOneOverheadLinePerLoop) {
  ProcessResult r = run_binary("loops", {"--models=feedback_fixed", "--steps=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> looped = row(r.out, "feedback_fixed    looped ");
  const std::vector<std::string> unrolled = row(r.out, "feedback_fixed    unrolled ");
  ASSERT_EQ(looped.size(), 10u) << r.out;
  ASSERT_EQ(unrolled.size(), 10u) << r.out;
  EXPECT_EQ(looped[8], "20") << r.out;
  EXPECT_EQ(unrolled[8], "0") << r.out;
  EXPECT_EQ(unrolled[9], "-") << r.out;
  EXPECT_EQ(count(r.out, "feedback_fixed    looped    loop #"), 2) << r.out;
  EXPECT_EQ(count(r.out, "feedback_fixed    recompute loop #"), 2) << r.out;
  EXPECT_EQ(count(r.out, " us per trip ("), 4) << r.out;
  EXPECT_EQ(count(r.out, "  loop 10x over @"), 4) << r.out;  // the executor's line under each
}

TEST(Loops, BadDeviceIsPinned) {
  ProcessResult r = run_binary("loops", {"--device=tpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "loops: --device=tpu: one of cpu, cuda\n");
}

TEST(Loops, CudaWithoutAGpuIsRefused) {
  if (cuda::available()) GTEST_SKIP() << "a GPU is present";
  ProcessResult r = run_binary("loops", {"--device=cuda"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "loops: --device=cuda needs an NVIDIA GPU, and this machine has none (" +
                       cuda::unavailable_reason() +
                       "); tests/cuda/loop_overhead_check.sh measures the same on a GPU machine\n");
  EXPECT_EQ(r.out, "");
}

TEST(LoopsCuda, WithoutAGpuIsRefused) {
  if (cuda::available()) GTEST_SKIP() << "a GPU is present";
  ProcessResult r = run_binary("loops_cuda", {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "loops_cuda: needs an NVIDIA GPU, and this machine has none (" + cuda::unavailable_reason() + ")\n");
}

TEST(LoopsCuda, UnknownModelIsPinned) {
  ProcessResult r = run_binary("loops_cuda", {"--models=feedback_fixed,nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "loops_cuda: no model 'nope' in the AOT CUDA libraries of bench/aot\n");
}

}  // namespace loops_test
}  // namespace
}  // namespace weft::bench

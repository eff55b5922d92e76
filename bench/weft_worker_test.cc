// bench/weft_worker's --profile table (a child process, as the suite runs it): 25 rows by
// default, --profile-rows=N of them, and the flags' pinned errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "bench/process.h"

namespace weft::bench {
namespace {

ProcessResult run_weft_worker(std::vector<std::string> args) {
  args.insert(args.begin(), "bench/weft_worker");
  const char* dir = std::getenv("TEST_TMPDIR");
  return run_process(args, {}, {}, std::string(dir ? dir : "/tmp") + "/weft_worker.stderr");
}

// The rows of the profile table in `err`: the lines after its heading.
int table_rows(const std::string& err) {
  std::stringstream ss(err);
  bool in_table = false;
  int rows = 0;
  for (std::string l; std::getline(ss, l);) {
    if (in_table && l.find(" us ") != std::string::npos) ++rows;
    if (l.find("time  share  invocation") != std::string::npos) in_table = true;
  }
  return rows;
}

TEST(WeftWorker, ProfileRowsSetsTheTablesLength) {
  const std::vector<std::string> run = {"--model=mlp", "--random-init", "--warmup=0",
                                        "--epochs=1", "--steps=1", "--profile"};
  ProcessResult all = run_weft_worker(run);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(table_rows(all.err), 25);  // mlp's step has more invocations than that
  std::vector<std::string> three = run;
  three.push_back("--profile-rows=3");
  ProcessResult r = run_weft_worker(three);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(table_rows(r.err), 3) << r.err;
}

TEST(WeftWorker, ProfileRowsErrorIsPinned) {
  ProcessResult r = run_weft_worker({"--model=mlp", "--random-init", "--profile", "--profile-rows=x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "weft_worker: error: bad value for --profile-rows: 'x' (an integer in [1, 100000])\n");
}

// The worker is its own program, not a weftc command: its flag errors name it alone.
TEST(WeftWorker, UnknownFlagNamesTheWorker) {
  ProcessResult r = run_weft_worker({"--help"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("weft_worker: error: unknown flag '--help'; accepted flags: --model, ", 0), 0u)
      << r.err;
  EXPECT_EQ(r.err.find("weftc"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace weft::bench

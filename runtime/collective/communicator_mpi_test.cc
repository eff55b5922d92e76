// The MPI communicator on 2 ranks: `mpirun -np 2 mpi_check` (mpi_check_main.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"

namespace weft::collective {
namespace {

TEST(MpiCommunicator, TwoRanksSumAndAverage) {
  testing::CommandResult r = testing::run_mpi(testing::kMpirun + "runtime/collective/mpi_check");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const std::string rank : {"rank 0: ", "rank 1: "}) {
    // Ranks contribute (1, 0, 0) and (2, 2, -1).
    for (const std::string& line : std::vector<std::string>{
             "MPI rank " + rank.substr(5, 1) + " of 2 (Open MPI v4.1.4, progress thread)",
             "f32 sum: 3.000000 2.000000 -1.000000",
             "f32 mean: 1.500000 1.000000 -0.500000",
             "f64 mean: 1.500000 1.000000 -0.500000",
             // i64 contributes (1, 0, 0) and (2, 2, -1) too.
             "i64 sum: 3.000000 2.000000 -1.000000",
             "i64 mean: all_reduce: the mean over MPI needs f32 or f64 values, got i64",
             "f16 sum: all_reduce over MPI: dtype f16 is not supported (f32, f64, i32, i64, "
             "u8); keep gradients in f32",
             "started f32 mean: 1.500000",
             // 1 + 2 on each of two elements.
             "started 1 MiB sum, completed during a 1 s sleep: yes, 6.000000",
             // The progress thread sleeps between tests while the caller waits: a
             // yielding one ran only after the spinner's time slice (mpi_progress.h).
             "150 waited 1 MiB reductions beside a busy thread on the rank's CPU: under 0.6 s",
             "broadcast from rank 1: rank 1",
             "broadcast from rank 7: broadcast: root rank 7 outside the 2 ranks",
         }) {
      EXPECT_NE(r.out.find(rank + line + "\n"), std::string::npos) << rank + line << "\n" << r.out;
    }
  }
}

}  // namespace
}  // namespace weft::collective

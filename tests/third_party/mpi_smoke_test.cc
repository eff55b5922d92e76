// Open MPI: the library links and reports its version without starting a job.
#include <gtest/gtest.h>
#include <mpi.h>

TEST(MpiSmoke, ReportsVersion) {
  int version = 0, subversion = 0;
  ASSERT_EQ(MPI_Get_version(&version, &subversion), MPI_SUCCESS);
  EXPECT_GE(version, 3);
}

#include "runtime/collective/communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/collective/mpi_communicator.h"

namespace weft::collective {
namespace {

TEST(CommunicatorTest, SingleProcessLeavesTheBytesAlone) {
  std::shared_ptr<Communicator> one = single_process();
  EXPECT_EQ(one->rank(), 0);
  EXPECT_EQ(one->world_size(), 1);
  float x[3] = {1.5f, -2.0f, 3.25f};
  ASSERT_TRUE(one->all_reduce(x, 3, DType::f32, Reduction::mean).ok());
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], -2.0f);
  EXPECT_EQ(x[2], 3.25f);
  int64_t k[2] = {7, -9};
  ASSERT_TRUE(one->all_reduce(k, 2, DType::i64, Reduction::sum).ok());
  EXPECT_EQ(k[0], 7);
  Status s = one->all_reduce(k, 2, DType::i64, Reduction::mean);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "all_reduce: the mean of i64 values is not defined; use reduction \"sum\"");
}

TEST(CommunicatorTest, SingleProcessStartsBroadcastsAndRefusesOtherRoots) {
  std::shared_ptr<Communicator> one = single_process();
  float x[2] = {4.0f, -1.0f};
  StatusOr<std::unique_ptr<PendingReduction>> pending =
      one->start_all_reduce(x, 2, DType::f32, Reduction::mean);
  ASSERT_TRUE(pending.ok());
  ASSERT_TRUE((*pending)->wait().ok());
  EXPECT_EQ(x[0], 4.0f);
  int64_t k = 3;
  pending = one->start_all_reduce(&k, 1, DType::i64, Reduction::mean);
  ASSERT_TRUE(pending.ok());  // the failure comes with wait()
  EXPECT_EQ((*pending)->wait().error().message,
            "all_reduce: the mean of i64 values is not defined; use reduction \"sum\"");
  EXPECT_TRUE(one->broadcast(x, sizeof x, 0).ok());
  EXPECT_EQ(x[1], -1.0f);
  EXPECT_EQ(one->broadcast(x, sizeof x, 1).error().message, "broadcast from rank 1 in a single process");
}

TEST(CommunicatorTest, ParsesReductions) {
  EXPECT_EQ(*parse_reduction("sum"), Reduction::sum);
  EXPECT_EQ(*parse_reduction("mean"), Reduction::mean);
  StatusOr<Reduction> bad = parse_reduction("max");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown all_reduce reduction \"max\"; expected \"mean\" or \"sum\"");
}

TEST(CommunicatorTest, ShardBatchTakesThisRanksRows) {
  Tensor global = Tensor::from_vector<float>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  StatusOr<Tensor> second = shard_batch(global, /*rank=*/1, /*world_size=*/2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->type().to_string(), "f32[2,2]");
  EXPECT_EQ(second->data<float>()[0], 4.0f);
  EXPECT_EQ(second->data<float>()[3], 7.0f);
}

TEST(CommunicatorTest, ShardBatchNeedsADivisibleBatch) {
  Tensor global = Tensor::from_vector<float>({3, 2}, {0, 1, 2, 3, 4, 5});
  StatusOr<Tensor> part = shard_batch(global, /*rank=*/0, /*world_size=*/2);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.error().message,
            "the global batch of 3 rows (f32[3,2]) does not split evenly over 2 ranks; use a "
            "batch size that is a multiple of the world size");
  StatusOr<Tensor> scalar = shard_batch(Tensor::scalar(DType::f32, 1), 0, 1);
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.error().message, "shard_batch: a batch needs a leading batch axis, got f32[]");
}

// The mean's division (every communicator's) is one IEEE division per element, block or
// tail alike: bitwise the scalar quotient, for f32 and f64, counts around a block.
TEST(CommunicatorTest, DivisionByTheWorldSizeIsTheScalarQuotient) {
  for (int world : {2, 3, 7}) {
    for (int64_t count : {0, 5, 16, 37, 1000}) {
      std::vector<float> f(static_cast<size_t>(count));
      std::vector<double> d(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        f[static_cast<size_t>(i)] = 0.1f + 1.37f * static_cast<float>(i);
        d[static_cast<size_t>(i)] = 0.1 + 1.37 * static_cast<double>(i);
      }
      std::vector<float> fq = f;
      std::vector<double> dq = d;
      divide_by_world_size(fq.data(), count, DType::f32, world);
      divide_by_world_size(dq.data(), count, DType::f64, world);
      for (size_t i = 0; i < f.size(); ++i) {
        const float want_f = f[i] / static_cast<float>(world);
        const double want_d = d[i] / static_cast<double>(world);
        EXPECT_EQ(std::memcmp(&fq[i], &want_f, sizeof(float)), 0) << world << " " << count << " " << i;
        EXPECT_EQ(std::memcmp(&dq[i], &want_d, sizeof(double)), 0) << world << " " << count << " " << i;
      }
    }
  }
}

TEST(CommunicatorTest, MpiWorldNeedsAnMpiLauncher) {
  // bazel test runs this without mpirun: none of the launcher's variables is set.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) unsetenv(name);
  EXPECT_FALSE(launched_by_mpi_launcher());
  StatusOr<std::shared_ptr<Communicator>> world = mpi_world();
  ASSERT_FALSE(world.ok());
  EXPECT_EQ(world.error().message,
            "data parallelism over MPI: this process was not started by an MPI launcher (none "
            "of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK is set); run it as `mpirun -np N "
            "PROGRAM` (or `srun -n N PROGRAM`), or train in one process with "
            "collective::single_process()");
}

}  // namespace
}  // namespace weft::collective

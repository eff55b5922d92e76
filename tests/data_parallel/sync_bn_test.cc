// SyncBatchNorm and the parameters every rank starts from (DESIGN.md, decision 11): one
// `mpirun -np 2 sync_bn_check` launch checks 2 ranks with SyncBatchNorm against one
// process with batch norm on the global batch, seeded inits made rank 0's, ranks
// resumed from different checkpoints refused and a rank whose checkpoint load fails
// stopping the other at once (their messages pinned here); in this process,
// sync on against sync off (bitwise: the all_reduce ops of one process change nothing)
// and the synchronized step's graph.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"
#include "tests/data_parallel/sync_bn_model.h"

namespace weft {
namespace {
namespace sync_bn_test {  // this file's names, apart in its package's unity test

using testing::CommandResult;
using testing::kMpirun;
using testing::run_mpi;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(SyncBatchNorm, TwoRanksMatchTheGlobalBatchAndRanksAgreeOnParameters) {
  const std::string dir = testing::test_tmpdir();
  CommandResult r = run_mpi(kMpirun + "tests/data_parallel/sync_bn_check --dir=" + dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "FAIL"), 0u) << r.out;
  for (const char* line : {"ok: 2 ranks with SyncBatchNorm equal one process on the global batch",
                           "ok: 2 ranks without sync do not",
                           "ok: ranks seeded differently start from rank 0's parameters",
                           "ok: ranks resumed from different checkpoints are refused",
                           "ok: ranks resumed from the same checkpoint train on",
                           "ok: checkpoints are written by rank 0 alone",
                           "ok: a rank whose checkpoint load fails stops every rank"}) {
    EXPECT_EQ(count(r.out, line), 2u) << line << "\n" << r.out;  // on both ranks
  }
  EXPECT_EQ(count(r.out, "error: data parallelism: rank 1's parameters differ from rank 0's (rank 1's "
                         "loaded from " + dir + "/b.safetensors, rank 0's loaded from " + dir +
                         "/a.safetensors); start every rank from the same checkpoint\n"),
            2u)
      << r.out;
  EXPECT_EQ(count(r.out, "error: data parallelism: rank 1 could not load " + dir +
                             "/missing.safetensors (cannot open for reading: No such file or directory); every "
                             "rank stops\n"),
            1u)
      << r.out;
}

const Type kBatch{DType::f32, {6, 3, 4, 4}};

struct Trained {
  std::vector<double> losses;
  std::map<std::string, Tensor> values;
};

Trained train(bool sync, std::shared_ptr<collective::Communicator> comm) {
  TrainOptions options;
  options.seed = 3;
  options.bind.communicator = std::move(comm);
  StatusOr<Trainer> t = Trainer::compile(testing::sync_bn_convnet(sync), {{"x", kBatch}},
                                         LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2), options);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  Trained out;
  Tensor x(kBatch);
  Tensor y(Type{DType::i64, {6}});
  for (int64_t step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = static_cast<float>((i * 7 + step * 3) % 11) / 5.0f - 1.0f;
    }
    for (int64_t i = 0; i < 6; ++i) y.data<int64_t>()[i] = (i + step) % 3;
    StatusOr<double> loss = t->step({x, y});
    EXPECT_TRUE(loss.ok()) << loss.status().to_string();
    out.losses.push_back(loss.ok() ? *loss : 0);
  }
  out.values = t->values();
  return out;
}

// One process: SyncBatchNorm's all_reduce ops are the identity, so the step is bitwise
// plain batch norm's, with no communicator and with single_process().
TEST(SyncBatchNorm, OneProcessIsBitwisePlainBatchNorm) {
  const Trained plain = train(/*sync=*/false, nullptr);
  for (auto comm : {std::shared_ptr<collective::Communicator>(), collective::single_process()}) {
    const Trained synced = train(/*sync=*/true, comm);
    EXPECT_EQ(synced.losses, plain.losses);
    ASSERT_EQ(synced.values.size(), plain.values.size());
    for (const auto& [name, value] : plain.values) {
      const Tensor& other = synced.values.at(name);
      ASSERT_EQ(other.type(), value.type()) << name;
      EXPECT_EQ(std::memcmp(other.raw_data(), value.raw_data(), value.bytes()), 0) << name;
    }
  }
}

// The step holds the statistics' all_reduce ops, forward (mean, variance, the count) and
// backward (the gradient of each: an all_reduce of its cotangent); eval holds none.
TEST(SyncBatchNorm, StatisticsAreAllReducedInTheStepOnly) {
  auto count_all_reduce = [](bool sync, bool training) {
    BuildOptions build;
    build.training = training;
    StatusOr<Model> m = testing::sync_bn_convnet(sync)->build({{"x", kBatch}}, build);
    EXPECT_TRUE(m.ok());
    return count(print_graph(m->graph()), "= all_reduce(");
  };
  EXPECT_EQ(count_all_reduce(/*sync=*/true, /*training=*/true), 3u);
  EXPECT_EQ(count_all_reduce(/*sync=*/false, /*training=*/true), 0u);
  EXPECT_EQ(count_all_reduce(/*sync=*/true, /*training=*/false), 0u);
  EXPECT_EQ(BatchNorm2d(4, {.sync = true})->describe(), "BatchNorm2d(4, sync)");
}

}  // namespace sync_bn_test
}  // namespace
}  // namespace weft

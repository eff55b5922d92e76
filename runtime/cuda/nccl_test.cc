// NCCL without a GPU: the bootstrap through a fake transport (two threads of one process
// as two ranks, ThreadRanks) up to the first NCCL call that needs a device — the unique
// id is NCCL's own (ncclGetUniqueId needs none) — the one-rank-per-device refusals, the
// dtypes NCCL reduces. NcclCommunicator::create skips what needs a GPU, saying so. (The
// cuda backend's refusal of a communicator that is not NCCL is pinned in
// runtime:backend_test.)
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/collective/watchdog.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/nccl_bootstrap.h"
#include "runtime/cuda/nccl_communicator.h"
#include "runtime/cuda/thread_ranks.h"

namespace weft::cuda {
namespace {

// Runs `body(rank)` on two threads, each a rank of one ThreadRanks world.
template <typename Result>
std::vector<Result> on_two_ranks(const std::function<Result(collective::Communicator&)>& body) {
  ThreadRanks world(2);
  std::optional<Result> second;
  std::thread other([&] { second.emplace(body(*world.rank(1))); });
  Result first = body(*world.rank(0));
  other.join();
  return {std::move(first), std::move(*second)};
}

std::string error_of(const Status& s) { return s.ok() ? "ok" : s.error().message; }

TEST(NcclBootstrap, EveryRankGetsRankZerosUniqueId) {
  int made = 0;
  const auto ids = on_two_ranks<StatusOr<NcclUniqueIdBytes>>([&](collective::Communicator& host) {
    return exchange_unique_id(host, [&]() -> StatusOr<NcclUniqueIdBytes> {
      ++made;  // only rank 0 calls it
      ncclUniqueId id;
      if (ncclGetUniqueId(&id) != ncclSuccess) return Error{"ncclGetUniqueId failed"};
      NcclUniqueIdBytes bytes;
      std::memcpy(bytes.data(), id.internal, bytes.size());
      return bytes;
    });
  });
  ASSERT_TRUE(ids[0].ok()) << ids[0].error().to_string();
  ASSERT_TRUE(ids[1].ok()) << ids[1].error().to_string();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(*ids[0], *ids[1]);
  EXPECT_NE(*ids[0], NcclUniqueIdBytes{}) << "NCCL's id is not all zeros";
}

TEST(NcclBootstrap, RankZerosFailureReachesEveryRank) {
  const auto ids = on_two_ranks<StatusOr<NcclUniqueIdBytes>>([](collective::Communicator& host) {
    return exchange_unique_id(host, []() -> StatusOr<NcclUniqueIdBytes> {
      return Error{"ncclGetUniqueId: unhandled system error"};
    });
  });
  for (const auto& id : ids) {
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.error().message,
              "the NCCL unique id: rank 0 could not make it: ncclGetUniqueId: unhandled system error");
  }
}

TEST(NcclBootstrap, TwoRanksOnOneDeviceAreRefusedOnBoth) {
  const auto checks = on_two_ranks<std::string>([](collective::Communicator& host) {
    const NcclPlacement me{.rank = host.rank(), .world_size = 2, .local_rank = 0, .host = "a", .gpu = ""};
    return error_of(check_one_rank_per_device(host, me, /*device_count=*/1));
  });
  for (const std::string& e : checks) {
    EXPECT_EQ(e, "ranks 0 and 1 both use CUDA device 0 on host a: NCCL runs one rank per GPU (give each "
                 "rank of a machine its own LOCAL_RANK, and start at most as many ranks per machine as it has "
                 "GPUs)");
  }
}

TEST(NcclBootstrap, LocalRankBeyondTheDevicesIsRefused) {
  const auto checks = on_two_ranks<std::string>([](collective::Communicator& host) {
    const NcclPlacement me{.rank = host.rank(), .world_size = 2, .local_rank = 2 * host.rank(), .host = "a", .gpu = ""};
    return error_of(check_one_rank_per_device(host, me, /*device_count=*/2));
  });
  EXPECT_EQ(checks[0], "ok");
  EXPECT_EQ(checks[1], "rank 1: local rank 2 needs CUDA device 2, but host a has 2: NCCL runs one rank per GPU "
                       "(start at most as many ranks per machine as it has GPUs, or give each its own: one "
                       "CUDA_VISIBLE_DEVICES per rank, srun --gpus-per-task=1)");
}

TEST(NcclBootstrap, TheDeviceOfALocalRank) {
  EXPECT_EQ(nccl_device(/*local_rank=*/1, /*device_count=*/2), 1);
  EXPECT_EQ(nccl_device(/*local_rank=*/0, /*device_count=*/1), 0);
  // srun --gpus-per-task=1: each process sees only its own GPU, as device 0.
  EXPECT_EQ(nccl_device(/*local_rank=*/3, /*device_count=*/1), 0);
  EXPECT_EQ(nccl_device(/*local_rank=*/2, /*device_count=*/2), -1);
  EXPECT_EQ(nccl_device(/*local_rank=*/0, /*device_count=*/0), -1);
  EXPECT_EQ(nccl_device(/*local_rank=*/-1, /*device_count=*/1), -1);
}

// A launcher that gives each process its own GPU (srun --gpus-per-task=1): local ranks 0
// and 1 each see one device, device 0, which are two GPUs (two PCI bus ids) — accepted;
// the same GPU twice is refused, naming it.
TEST(NcclBootstrap, OneVisibleGpuPerProcessIsItsOwnUnlessShared) {
  for (const bool shared : {false, true}) {
    const auto checks = on_two_ranks<std::string>([&](collective::Communicator& host) {
      const NcclPlacement me{.rank = host.rank(), .world_size = 2, .local_rank = host.rank(), .host = "a",
                             .gpu = shared || host.rank() == 0 ? "0000:3b:00.0" : "0000:5e:00.0"};
      return error_of(check_one_rank_per_device(host, me, /*device_count=*/1));
    });
    for (const std::string& e : checks) {
      EXPECT_EQ(e, shared ? "ranks 0 and 1 both use CUDA device 0 (PCI bus 0000:3b:00.0) on host a: NCCL runs one "
                            "rank per GPU (give each rank of a machine its own LOCAL_RANK, and start at most as many ranks per "
                            "machine as it has GPUs)"
                          : "ok");
    }
  }
}

TEST(NcclBootstrap, OneDevicePerRankPasses) {
  for (const bool two_hosts : {false, true}) {
    const auto checks = on_two_ranks<std::string>([&](collective::Communicator& host) {
      const NcclPlacement me{.rank = host.rank(), .world_size = 2, .local_rank = two_hosts ? 0 : host.rank(),
                             .host = two_hosts ? "h" + std::to_string(host.rank()) : "a",
                             .gpu = ""};
      return error_of(check_one_rank_per_device(host, me, /*device_count=*/two_hosts ? 1 : 2));
    });
    EXPECT_EQ(checks[0], "ok") << two_hosts;
    EXPECT_EQ(checks[1], "ok") << two_hosts;
  }
}

TEST(NcclCommunicator, DtypesNcclReduces) {
  EXPECT_EQ(*nccl_data_type(DType::f32, collective::Reduction::mean), ncclFloat32);
  EXPECT_EQ(*nccl_data_type(DType::bf16, collective::Reduction::mean), ncclBfloat16);
  EXPECT_EQ(*nccl_data_type(DType::i64, collective::Reduction::sum), ncclInt64);
  EXPECT_EQ(nccl_data_type(DType::i32, collective::Reduction::mean).error().message,
            "all_reduce mean of i32: the mean of an integer dtype is not defined");
  EXPECT_EQ(nccl_data_type(DType::boolean, collective::Reduction::sum).error().message,
            "all_reduce of bool: NCCL reduces f32, f64, f16, bf16, i32, i64 and u8");
}

// Without a GPU, create() goes through both host exchanges on every rank and then says
// there is no device (rather than leaving the other ranks waiting).
TEST(NcclCommunicator, CreateWithoutAGpuSaysSo) {
  if (available()) GTEST_SKIP() << "a GPU is present: tests/cuda/nccl_check.sh runs NCCL on it";
  const auto made = on_two_ranks<std::string>([](collective::Communicator& host) {
    // ThreadRanks' world outlives the call: the shared_ptr here does not own it.
    std::shared_ptr<collective::Communicator> borrowed(&host, [](collective::Communicator*) {});
    StatusOr<std::shared_ptr<NcclCommunicator>> c = NcclCommunicator::create(borrowed, host.rank());
    return c.ok() ? std::string("ok") : c.error().message;
  });
  for (const std::string& e : made) EXPECT_EQ(e, "no CUDA device: " + unavailable_reason());
}

// --collective-timeout on cuda: the line of a step whose reductions did not finish, and
// the watchdog that prints it, runs the communicator's ncclCommAbort and exits 1 (what
// NcclCommunicator::watch_step arms; the abort itself needs a GPU and a second rank).
TEST(NcclWatchdog, AStepThatRunsOutPrintsAbortsAndExits) {
  collective::note_step(37);
  EXPECT_EQ(step_timed_out(0, 2, 1100000, std::chrono::seconds(300)),
            "rank 0 of 2 (NCCL), in all_reduce #1 of step 37 (1.1 MB): rank 1 did not answer within 300 s "
            "(it died or hangs); exiting");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        collective::Watchdog watchdog(std::chrono::milliseconds(100), [] { std::fprintf(stderr, "aborted\n"); });
        watchdog.arm(step_timed_out(1, 4, 4096, watchdog.timeout()));
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(collective::kExitCollectiveFailed),
      "error: rank 1 of 4 \\(NCCL\\), in all_reduce #2 of step 37 \\(4.1 kB\\): a peer did not answer "
      "within 0.1 s \\(it died or hangs\\); exiting\naborted");
}

// Disarmed in time, it does nothing.
TEST(NcclWatchdog, AStepThatFinishesInTimeGoesOn) {
  bool aborted = false;
  {
    collective::Watchdog watchdog(std::chrono::milliseconds(200), [&aborted] { aborted = true; });
    watchdog.arm(step_timed_out(0, 2, 4, watchdog.timeout()));
    watchdog.disarm();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  EXPECT_FALSE(aborted);
}

}  // namespace
}  // namespace weft::cuda

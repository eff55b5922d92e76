// The Gloo communicator with threads as ranks, each joining through the TcpStore at
// 127.0.0.1 as torchrun-style processes do: sums, means and broadcasts equal to the
// values computed here; a started reduction that goes on while the caller does, equal to
// the blocking one; a peer that never calls, or that left, fails the collective with
// the line naming it and the collective.
#include "runtime/collective/gloo_communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/collective/watchdog.h"
#include "tests/testing/free_port.h"

namespace weft::collective {
namespace {

// Runs `body(rank, comm)` on `ranks` threads, each a rank of one Gloo world.
void with_ranks(int ranks, std::chrono::milliseconds timeout,
                const std::function<void(int, Communicator&)>& body) {
  const int port = testing::free_port();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      StatusOr<std::shared_ptr<Communicator>> world = gloo_world(
          {.rank = r, .world_size = ranks, .master_addr = "127.0.0.1", .master_port = port, .timeout = timeout,
           .interface = ""});
      ASSERT_TRUE(world.ok()) << world.error().message;
      body(r, **world);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(GlooCommunicatorTest, ThreeRanksSumMeanAndBroadcast) {
  with_ranks(3, std::chrono::seconds(20), [](int r, Communicator& comm) {
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.world_size(), 3);
    float f[3] = {1.0f * r, 0.5f, -2.0f * r};
    ASSERT_TRUE(comm.all_reduce(f, 3, DType::f32, Reduction::sum).ok());
    EXPECT_EQ(f[0], 3.0f);
    EXPECT_EQ(f[1], 1.5f);
    EXPECT_EQ(f[2], -6.0f);
    double d[2] = {3.0 * r, 1.5};
    ASSERT_TRUE(comm.all_reduce(d, 2, DType::f64, Reduction::mean).ok());
    EXPECT_EQ(d[0], 3.0);
    EXPECT_EQ(d[1], 1.5);
    int64_t k = int64_t{1} << (40 + r);
    ASSERT_TRUE(comm.all_reduce(&k, 1, DType::i64, Reduction::sum).ok());
    EXPECT_EQ(k, int64_t{7} << 40);
    StatusOr<std::unique_ptr<PendingReduction>> started = comm.start_all_reduce(f, 3, DType::f32, Reduction::mean);
    ASSERT_TRUE(started.ok());
    ASSERT_TRUE((*started)->wait().ok());
    EXPECT_EQ(f[1], 1.5f);
    uint8_t id[5] = {0, 0, 0, 0, static_cast<uint8_t>(r)};
    if (r == 1) id[0] = 42;
    ASSERT_TRUE(comm.broadcast(id, sizeof id, /*root=*/1).ok());
    EXPECT_EQ(id[0], 42);
    EXPECT_EQ(id[4], 1);
    EXPECT_EQ(comm.broadcast(id, 1, 3).error().message, "broadcast: root rank 3 outside the 3 ranks");
    int32_t n = 1;
    EXPECT_EQ(comm.all_reduce(&n, 1, DType::i32, Reduction::mean).error().message,
              "all_reduce: the mean over Gloo needs f32 or f64 values, got i32");
  });
}

// start_all_reduce returns before the peers have called (rank 1 calls only once rank 0's
// start has returned: a blocking start would wait for it until the timeout), the
// reduction completes while rank 0 goes on, and its bytes equal the blocking
// all_reduce's of the same values, queued behind it, and the mean computed here.
TEST(GlooCommunicatorTest, AStartedReductionGoesOnWhileTheCallerComputes) {
  std::atomic<bool> started{false};
  with_ranks(2, std::chrono::seconds(20), [&](int r, Communicator& comm) {
    std::vector<float> a(1 << 16), b;
    for (size_t i = 0; i < a.size(); ++i) a[i] = 0.1f * static_cast<float>(i % 97) * static_cast<float>(r + 1);
    b = a;
    if (r == 1) {
      while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    StatusOr<std::unique_ptr<PendingReduction>> pending =
        comm.start_all_reduce(a.data(), static_cast<int64_t>(a.size()), DType::f32, Reduction::mean);
    const bool done_at_once = pending.ok() && (*pending)->test();
    started = true;  // (also where the start failed: rank 1 must not wait forever)
    ASSERT_TRUE(pending.ok()) << pending.error().message;
    if (r == 0) {
      EXPECT_FALSE(done_at_once);  // rank 1 had not called yet
    }
    ASSERT_TRUE(comm.all_reduce(b.data(), static_cast<int64_t>(b.size()), DType::f32, Reduction::mean).ok());
    while (!(*pending)->test()) std::this_thread::yield();
    ASSERT_TRUE((*pending)->wait().ok());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    for (size_t i = 0; i < a.size(); i += 4099) {
      const float x = 0.1f * static_cast<float>(i % 97);
      EXPECT_EQ(a[i], (x + 2 * x) / 2) << i;
    }
  });
}

TEST(GlooCommunicatorTest, APeerThatDoesNotAnswerFailsTheCollectiveWithinTheTimeout) {
  std::atomic<bool> failed{false};
  with_ranks(2, std::chrono::milliseconds(500), [&](int r, Communicator& comm) {
    if (r == 1) {  // hangs: stays in the job without calling, until rank 0 gave up
      while (!failed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    note_step(37);
    float x[4] = {};
    Status s = comm.all_reduce(x, 4, DType::f32, Reduction::mean);
    failed = true;
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message,
              "rank 0 of 2 (Gloo), in all_reduce #1 of step 37 (16 bytes): rank 1 did not answer within 0.5 s "
              "(it died or hangs); exiting");
  });
}

TEST(GlooCommunicatorTest, APeerThatLeftFailsTheCollective) {
  std::atomic<bool> left{false};
  std::atomic<int> joined{0};
  with_ranks(2, std::chrono::seconds(20), [&](int r, Communicator& comm) {
    ++joined;
    if (r == 1) {
      while (joined < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // both joined
      left = true;
      return;  // with_ranks' thread ends: the communicator closes its connections
    }
    while (!left) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    note_step(2);
    double x[1000] = {};
    Status s = comm.all_reduce(x, 1000, DType::f64, Reduction::sum);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message.rfind("rank 0 of 2 (Gloo), in all_reduce #1 of step 2 (8.0 kB): rank 1 is gone (", 0),
              0u)
        << s.error().message;
  });
}

TEST(GlooCommunicatorTest, UnsupportedDtypesAndAFailedJoinAreErrors) {
  StatusOr<std::shared_ptr<Communicator>> one =
      gloo_world({.rank = 0,
                  .world_size = 1,
                  .master_addr = "127.0.0.1",
                  .master_port = testing::free_port(),
                  .timeout = std::chrono::seconds(300),
                  .interface = ""});
  ASSERT_TRUE(one.ok()) << one.error().message;
  uint16_t half[2] = {};
  EXPECT_EQ((*one)->all_reduce(half, 2, DType::f16, Reduction::sum).error().message,
            "all_reduce over Gloo: dtype f16 is not supported (f32, f64, i32, i64, u8); keep gradients in f32");
  const int port = testing::free_port();  // nobody serves it
  StatusOr<std::shared_ptr<Communicator>> lonely =
      gloo_world({.rank = 1, .world_size = 2, .master_addr = "127.0.0.1", .master_port = port,
                  .timeout = std::chrono::milliseconds(300), .interface = ""});
  ASSERT_FALSE(lonely.ok());
  EXPECT_EQ(lonely.error().message,
            "data parallelism over Gloo: rank 1 of 2 could not join: the rendezvous at 127.0.0.1:" +
                std::to_string(port) +
                " (MASTER_ADDR:MASTER_PORT) did not answer within 0.3 s: is rank 0 running, and is MASTER_ADDR "
                "its address as this host reaches it?");
}

}  // namespace
}  // namespace weft::collective

// StopSignals: SIGINT and SIGTERM are blocked on every thread started while it lives (so
// no signal frame is ever written on a thread that runs kernels: bug 1 of issue 16), the
// watcher takes the first one once defer() was called (before it, the first ends the process),
// and a second one ends the process.
#include "training/driver/stop_signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace weft::driver {
namespace {

bool blocked(int number) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, number) == 1;
}

int wait_for_signal(const StopSignals& s) {
  for (int i = 0; i < 400 && s.received() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return s.received();
}

TEST(StopSignals, BlocksThemOnEveryThreadStartedWhileItLives) {
  ASSERT_FALSE(blocked(SIGINT));
  {
    StopSignals signals;
    EXPECT_TRUE(blocked(SIGINT));
    EXPECT_TRUE(blocked(SIGTERM));
    bool worker_int = false, worker_term = false;
    std::thread([&] {
      worker_int = blocked(SIGINT);
      worker_term = blocked(SIGTERM);
    }).join();
    EXPECT_TRUE(worker_int);
    EXPECT_TRUE(worker_term);
    EXPECT_EQ(signals.received(), 0);
  }
  EXPECT_FALSE(blocked(SIGINT));
  EXPECT_FALSE(blocked(SIGTERM));
  struct sigaction now = {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(StopSignals, TheWatcherTakesTheFirstOne) {
  StopSignals signals;
  signals.defer();
  // Busy threads that run while the signal comes: none of them may take it.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop) {
    }
  });
  ::kill(::getpid(), SIGTERM);
  EXPECT_EQ(wait_for_signal(signals), SIGTERM);
  stop = true;
  busy.join();
}

TEST(StopSignalsDeathTest, ASecondOneEndsTheProcess) {
  EXPECT_EXIT(
      {
        StopSignals signals;
        signals.defer();
        ::kill(::getpid(), SIGINT);
        if (wait_for_signal(signals) != SIGINT) ::_exit(3);
        ::kill(::getpid(), SIGINT);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        ::_exit(4);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(StopSignalsDeathTest, BeforeDeferTheFirstOneEndsTheProcess) {
  // A run stopped while it joins its ranks (a rendezvous may wait --collective-timeout,
  // 300 s by default, for a peer) or compiles: nothing to save, so it ends at once.
  EXPECT_EXIT(
      {
        StopSignals signals;
        ::kill(::getpid(), SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        ::_exit(signals.received() == 0 ? 4 : 5);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace weft::driver

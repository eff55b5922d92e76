#include "runtime/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <string>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace weft::cpu {
namespace {

TEST(PartitionTest, CoversRangeInBalancedChunksOfAtLeastGrain) {
  for (int threads = 1; threads <= 8; ++threads) {
    for (int64_t n : {0, 1, 2, 3, 7, 16, 17, 100, 1000, 4097}) {
      for (int64_t grain : {-1, 0, 1, 2, 3, 16, 1000, 5000}) {
        const Partition p = Partition::make(n, grain, threads);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " grain=" << grain
                                        << " threads=" << threads);
        if (n == 0) {
          EXPECT_EQ(p.num_chunks, 0);
          continue;
        }
        ASSERT_GE(p.num_chunks, 1);
        EXPECT_LE(p.num_chunks, threads);
        EXPECT_EQ(p.begin(0), 0);
        EXPECT_EQ(p.end(p.num_chunks - 1), n);
        const int64_t g = grain < 1 ? 1 : grain;
        for (int i = 0; i < p.num_chunks; ++i) {
          const int64_t size = p.end(i) - p.begin(i);
          if (p.num_chunks > 1) {
            EXPECT_GE(size, g);
          }
          EXPECT_LE(size - (p.end(0) - p.begin(0)), 0);  // Sizes never grow...
          EXPECT_GE(size, p.end(0) - p.begin(0) - 1);    // ...and differ by at most one.
        }
      }
    }
  }
}

TEST(ThreadPoolTest, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 2, 5, 63, 64, 65, 1000, 100003}) {
      for (int64_t grain : {1, 3, 64, 1 << 20}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[i].load(), 1) << "i=" << i << " n=" << n << " grain=" << grain
                                       << " threads=" << threads;
        }
      }
    }
  }
}

TEST(ThreadPoolTest, ChunksMatchPartitionAndRunOnTheirThread) {
  ThreadPool pool(4);
  const Partition expected = Partition::make(1001, 10, 4);
  for (int run = 0; run < 100; ++run) {
    std::vector<int64_t> begins(4, -1), ends(4, -1);
    std::vector<std::thread::id> ids(4);
    pool.for_each_chunk(1001, 10, [&](int chunk, int64_t begin, int64_t end) {
      begins[chunk] = begin;
      ends[chunk] = end;
      ids[chunk] = std::this_thread::get_id();
    });
    for (int i = 0; i < expected.num_chunks; ++i) {
      EXPECT_EQ(begins[i], expected.begin(i));
      EXPECT_EQ(ends[i], expected.end(i));
    }
    EXPECT_EQ(ids[0], std::this_thread::get_id());  // Chunk 0 runs on the caller.
    for (int i = 1; i < 4; ++i) EXPECT_NE(ids[i], ids[0]);
  }
}

// Values spread over many magnitudes, so that the order of float additions matters.
std::vector<float> awkward_values(int64_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-20, 20);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mant(rng), exp(rng));
  return v;
}

float sum_with(ThreadPool& pool, const std::vector<float>& v, int64_t grain) {
  return pool.parallel_reduce(
      static_cast<int64_t>(v.size()), grain, 0.0f,
      [&](int64_t begin, int64_t end) {
        float s = 0.0f;
        for (int64_t i = begin; i < end; ++i) s += v[i];
        return s;
      },
      [](float a, float b) { return a + b; });
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

TEST(ThreadPoolTest, FloatReductionIsBitwiseReproducible) {
  const std::vector<float> v = awkward_values(100000);
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads, {.spin_us = threads % 2 ? 0 : 50});
    const float first = sum_with(pool, v, 1000);
    // The expected value, computed serially with the same partition and fold order.
    const Partition p = Partition::make(v.size(), 1000, threads);
    float expected = 0.0f;
    for (int c = 0; c < p.num_chunks; ++c) {
      float s = 0.0f;
      for (int64_t i = p.begin(c); i < p.end(c); ++i) s += v[i];
      expected += s;
    }
    EXPECT_EQ(bits(first), bits(expected)) << "threads=" << threads;
    for (int run = 0; run < 100; ++run) {
      ASSERT_EQ(bits(sum_with(pool, v, 1000)), bits(first)) << "run " << run;
    }
    // A fresh pool of the same size gives the same bits.
    ThreadPool again(threads);
    EXPECT_EQ(bits(sum_with(again, v, 1000)), bits(first));
  }
}

TEST(ThreadPoolTest, ReduceCombinesInChunkOrder) {
  ThreadPool pool(4);
  // A non-commutative combine: concatenating chunk ids shows the fold order.
  const int64_t order = pool.parallel_reduce(
      400, 100, int64_t{0},
      [](int64_t begin, int64_t) { return begin / 100 + 1; },
      [](int64_t acc, int64_t x) { return acc * 10 + x; });
  EXPECT_EQ(order, 1234);
}

TEST(ThreadPoolTest, NestedCallsRunInlineWithTheSamePartition) {
  ThreadPool pool(3);
  const std::vector<float> v = awkward_values(30000);
  const float outer = sum_with(pool, v, 100);
  std::vector<float> inner(3, 0.0f);
  std::vector<int> inner_chunks(3, 0);
  std::mutex mu;
  pool.for_each_chunk(3, 1, [&](int chunk, int64_t, int64_t) {
    EXPECT_TRUE(ThreadPool::in_parallel_region());
    const std::thread::id me = std::this_thread::get_id();
    int chunks = 0;
    pool.for_each_chunk(30, 1, [&](int, int64_t, int64_t) {
      EXPECT_EQ(std::this_thread::get_id(), me);  // Inline: never another thread.
      ++chunks;
    });
    inner[chunk] = sum_with(pool, v, 100);
    std::lock_guard<std::mutex> lock(mu);
    inner_chunks[chunk] = chunks;
  });
  EXPECT_FALSE(ThreadPool::in_parallel_region());
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(inner_chunks[c], 3);  // Same partition as an outer call: 3 chunks.
    EXPECT_EQ(bits(inner[c]), bits(outer));
  }
}

TEST(ThreadPoolTest, OneThreadRunsInline) {
  ThreadPool pool(1);
  int calls = 0;
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallel_for(1000, 1, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
    ++calls;  // Not atomic: only the caller runs.
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, ConcurrentCallersBothComplete) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int r = 0; r < 2000; ++r) {
      pool.parallel_for(100, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
    }
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total.load(), 2 * 2000 * 100);
}

TEST(ThreadPoolTest, DestroysWhileIdle) {
  for (int spin : {0, 1000}) {
    for (int threads : {1, 2, 4, 8}) {
      { ThreadPool never_used(threads, {.spin_us = spin}); }
      ThreadPool pool(threads, {.spin_us = spin});
      std::atomic<int> n{0};
      pool.parallel_for(8, 1, [&](int64_t b, int64_t e) { n += static_cast<int>(e - b); });
      EXPECT_EQ(n.load(), 8);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // Workers go to sleep.
    }
  }
}

TEST(ThreadPoolTest, StressManyTinyTasks) {
  for (int spin : {0, 20}) {
    ThreadPool pool(4, {.spin_us = spin});
    std::vector<int64_t> slots(4, 0);
    int64_t expected = 0;
    for (int r = 0; r < 20000; ++r) {
      const int64_t n = r % 9;
      expected += n * (n - 1) / 2;
      pool.for_each_chunk(n, 1, [&](int chunk, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) slots[chunk] += i;  // One writer per slot.
      });
    }
    EXPECT_EQ(slots[0] + slots[1] + slots[2] + slots[3], expected) << "spin=" << spin;
  }
}

TEST(ThreadPoolTest, WorkerExceptionReachesCaller) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(2, 1,
                                 [](int64_t begin, int64_t) {
                                   if (begin == 1) throw std::runtime_error("chunk 1");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(2, 1, [&](int64_t b, int64_t e) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n.load(), 2);
}

// A negative count, from the options or from $WEFT_NUM_THREADS, was taken as "every
// core"; it is refused, naming the value and where it came from.
TEST(ThreadCount, RefusesANegativeOrMalformedCount) {
  unsetenv("WEFT_NUM_THREADS");
  EXPECT_EQ(thread_count_problem(0), "");
  EXPECT_EQ(thread_count_problem(3), "");
  EXPECT_EQ(thread_count_problem(-2),
            "num_threads=-2 (an option): must be 0 ($WEFT_NUM_THREADS or every core) or a positive count");
  for (const char* bad : {"-3", "0", "abc", "4x", "99999999999"}) {
    setenv("WEFT_NUM_THREADS", bad, /*overwrite=*/1);
    EXPECT_EQ(thread_count_problem(0), "WEFT_NUM_THREADS='" + std::string(bad) +
                                           "' (the environment): must be a positive count; unset it to use "
                                           "every core");
    EXPECT_EQ(thread_count_problem(2), "") << "an explicit count does not read the environment";
  }
  setenv("WEFT_NUM_THREADS", "", /*overwrite=*/1);  // empty: as if unset
  EXPECT_EQ(thread_count_problem(0), "");
  setenv("WEFT_NUM_THREADS", "3", /*overwrite=*/1);
  EXPECT_EQ(thread_count_problem(0), "");
  EXPECT_EQ(default_num_threads(), 3);
  unsetenv("WEFT_NUM_THREADS");
}

}  // namespace
// A thread count the system cannot start (WEFT_NUM_THREADS=100000 terminated weftc with
// "terminate called without an active exception"): the pool runs on the threads it got.
// In a child process whose address space is too small for 1000 thread stacks.
TEST(ThreadPoolDeathTest, AThreadTheSystemRefusesShrinksThePool) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve more address space than the limit leaves";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max = 512ull << 20;  // 1000 stacks of 8 MiB do not fit
        if (setrlimit(RLIMIT_AS, &limit) != 0) std::exit(3);
        ThreadPool pool(1000);
        std::atomic<int64_t> sum{0};
        pool.parallel_for(10000, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sum += i;
        });
        std::exit(pool.num_threads() > 1 && pool.num_threads() < 1000 && sum == 49995000 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "weft: warning: started [0-9]+ of the 1000 threads asked for");
#endif
}

}  // namespace weft::cpu

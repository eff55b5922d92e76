#include "training/data/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace weft {
namespace {

const std::vector<Type> kTypes = {Type{DType::i64, {2}}, Type{DType::f32, {2, 3}}};

Status fill_with(int64_t n, std::vector<Tensor>& into) {
  into[0].data<int64_t>()[0] = n;
  into[0].data<int64_t>()[1] = -n;
  for (int i = 0; i < 6; ++i) into[1].data<float>()[i] = static_cast<float>(n * 10 + i);
  return Status();
}

TEST(Loader, GivesEveryBatchInOrder) {
  Loader loader(/*first=*/3, /*end=*/40, kTypes, fill_with);
  for (int64_t n = 3; n < 40; ++n) {
    auto batch = loader.next();
    ASSERT_TRUE(batch.ok()) << batch.error().to_string();
    // The consumer "steps" slowly on even batches, quickly on odd ones: the thread must
    // never overwrite the set the consumer holds.
    if (n % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ((*batch)->at(0).data<int64_t>()[0], n);
    EXPECT_EQ((*batch)->at(0).data<int64_t>()[1], -n);
    EXPECT_EQ((*batch)->at(1).data<float>()[5], static_cast<float>(n * 10 + 5));
    EXPECT_EQ((*batch)->at(1).type().to_string(), "f32[2,3]");
  }
  auto past = loader.next();
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().message, "Loader::next: all 40 batches were taken");
  EXPECT_GE(loader.wait_seconds(), 0);
  EXPECT_GE(loader.fill_seconds(), 0);
}

TEST(Loader, PreparesOnlyOneBatchAhead) {
  std::atomic<int64_t> filled{0};
  Loader loader(0, 100, kTypes, [&](int64_t n, std::vector<Tensor>& into) {
    filled = n + 1;
    return fill_with(n, into);
  });
  auto first = loader.next();
  ASSERT_TRUE(first.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Batch 0 is held, batch 1 is ready: set 0 is not refilled until next() is called.
  EXPECT_EQ(filled.load(), 2);
  ASSERT_TRUE(loader.next().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(filled.load(), 3);
}

// A consumer that prefetches (held = 2) holds batch n, which its step reads, and n+1,
// whose copy to the device is under way: next() hands back n-1 only, and the thread
// fills n+2 into the third set, never into one of the two held.
TEST(Loader, WithTwoHeldBatchesNeitherIsRefilledUntilHandedBack) {
  std::atomic<int64_t> filled{0};
  Loader loader(0, 100, kTypes,
                [&](int64_t n, std::vector<Tensor>& into) {
                  filled = n + 1;
                  return fill_with(n, into);
                },
                HostPinning{}, /*held=*/2);
  auto b0 = loader.next();
  auto b1 = loader.next();
  ASSERT_TRUE(b0.ok() && b1.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Batches 0 and 1 held, batch 2 ready in the third set: nothing more.
  EXPECT_EQ(filled.load(), 3);
  EXPECT_EQ((*b0)->at(0).data<int64_t>()[0], 0);
  EXPECT_EQ((*b1)->at(0).data<int64_t>()[0], 1);
  auto b2 = loader.next();  // hands back batch 0 alone
  ASSERT_TRUE(b2.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(filled.load(), 4);  // batch 3, into batch 0's set
  EXPECT_EQ((*b1)->at(0).data<int64_t>()[0], 1) << "batch 1 is still held";
  EXPECT_EQ((*b2)->at(0).data<int64_t>()[0], 2);
  EXPECT_EQ((*b0)->at(0).data<int64_t>()[0], 3) << "batch 0's set was handed back and refilled";
  std::set<const std::vector<Tensor>*> sets = {*b0, *b1, *b2};
  EXPECT_EQ(sets.size(), 3u);
}

// The driver's order with a prefetch: both held batches stay intact however the thread
// and the consumer interleave.
TEST(Loader, WithTwoHeldBatchesEveryBatchArrivesIntact) {
  Loader loader(/*first=*/5, /*end=*/60, kTypes, fill_with, HostPinning{}, /*held=*/2);
  auto current = loader.next();
  ASSERT_TRUE(current.ok());
  for (int64_t n = 5; n + 1 < 60; ++n) {
    auto ahead = loader.next();  // batch n+1, "prefetched"
    ASSERT_TRUE(ahead.ok()) << ahead.error().to_string();
    if (n % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the step on n
    EXPECT_EQ((*current)->at(0).data<int64_t>()[0], n);
    EXPECT_EQ((*current)->at(1).data<float>()[5], static_cast<float>(n * 10 + 5));
    EXPECT_EQ((*ahead)->at(0).data<int64_t>()[1], -(n + 1));
    current = ahead;
  }
  EXPECT_FALSE(loader.next().ok());
}

TEST(Loader, ErrorOfTheThreadSurfacesOnTheConsumer) {
  Loader loader(0, 10, kTypes, [](int64_t n, std::vector<Tensor>& into) -> Status {
    if (n == 2) return Error{"data.csv: row 7, column 'x': 'q' is not a number"};
    return fill_with(n, into);
  });
  ASSERT_TRUE(loader.next().ok());
  ASSERT_TRUE(loader.next().ok());
  auto failed = loader.next();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "data.csv: row 7, column 'x': 'q' is not a number");
}

TEST(Loader, StopsCleanlyWithBatchesLeft) {
  for (int i = 0; i < 20; ++i) {
    Loader loader(0, 1000, kTypes, fill_with);
    ASSERT_TRUE(loader.next().ok());
  }  // each destructor joins a thread waiting for a free set
  Loader untouched(0, 5, kTypes, fill_with);
  Loader empty(4, 4, kTypes, fill_with);
  EXPECT_FALSE(empty.next().ok());
}

// A fake device's pinning: records what is pinned and unpinned; fails the call numbered
// fail_at (0-based) when set.
struct PinLog {
  std::vector<std::pair<void*, int64_t>> pinned;
  std::vector<void*> unpinned;
  int fail_at = -1;
  int calls = 0;
};
PinLog pin_log;

Status fake_pin(void* data, int64_t bytes) {
  if (pin_log.calls++ == pin_log.fail_at) return Error{"no page-locked memory left"};
  pin_log.pinned.emplace_back(data, bytes);
  return Status();
}
void fake_unpin(void* data) { pin_log.unpinned.push_back(data); }

TEST(Loader, PinsBothSetsOnceAndUnpinsThemAtTheEnd) {
  pin_log = PinLog{};
  std::set<const void*> handed_out;
  {
    Loader loader(/*first=*/0, /*end=*/6, kTypes, fill_with, HostPinning{fake_pin, fake_unpin});
    EXPECT_TRUE(loader.pinned());
    EXPECT_FALSE(loader.pin_error().has_value());
    // Two sets of the two inputs: i64[2] (16 bytes) and f32[2,3] (24 bytes).
    ASSERT_EQ(pin_log.pinned.size(), 4u);
    EXPECT_EQ(pin_log.pinned[0].second, 16);
    EXPECT_EQ(pin_log.pinned[1].second, 24);
    for (int64_t n = 0; n < 6; ++n) {
      auto batch = loader.next();
      ASSERT_TRUE(batch.ok()) << batch.error().to_string();
      EXPECT_EQ((*batch)->at(0).data<int64_t>()[0], n);
      for (const Tensor& t : **batch) handed_out.insert(t.raw_data());
    }
    EXPECT_TRUE(pin_log.unpinned.empty()) << "unpinned while in use";
  }
  // Every buffer handed to the consumer was a pinned one, and each is unpinned once.
  std::set<const void*> pinned;
  for (const auto& [p, bytes] : pin_log.pinned) pinned.insert(p);
  EXPECT_EQ(handed_out, pinned);
  EXPECT_EQ(std::set<const void*>(pin_log.unpinned.begin(), pin_log.unpinned.end()), pinned);
  EXPECT_EQ(pin_log.unpinned.size(), 4u);
}

TEST(Loader, AFailedPinLeavesEveryBufferPageableAndBatchesFlow) {
  pin_log = PinLog{};
  pin_log.fail_at = 2;  // the first buffer of the second set
  {
    Loader loader(/*first=*/0, /*end=*/3, kTypes, fill_with, HostPinning{fake_pin, fake_unpin});
    EXPECT_FALSE(loader.pinned());
    ASSERT_TRUE(loader.pin_error().has_value());
    EXPECT_EQ(loader.pin_error()->message, "no page-locked memory left");
    // The two pinned before the failure were unpinned at once.
    EXPECT_EQ(pin_log.unpinned.size(), 2u);
    for (int64_t n = 0; n < 3; ++n) {
      auto batch = loader.next();
      ASSERT_TRUE(batch.ok()) << batch.error().to_string();
      EXPECT_EQ((*batch)->at(1).data<float>()[0], static_cast<float>(n * 10));
    }
  }
  EXPECT_EQ(pin_log.unpinned.size(), 2u);  // nothing more at the end
}

TEST(Loader, WithoutPinningFunctionsNothingIsPinned) {
  Loader loader(/*first=*/0, /*end=*/1, kTypes, fill_with, HostPinning{});
  EXPECT_FALSE(loader.pinned());
  EXPECT_FALSE(loader.pin_error().has_value());
  EXPECT_TRUE(loader.next().ok());
}

}  // namespace
}  // namespace weft

#include "runtime/data/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

}  // namespace
}  // namespace weft

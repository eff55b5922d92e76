// The input prefetch's slot order on the host (executor_prefetch.h): the driver's order
// (prefetch n+1, then take n) alternates the two slots, never writing the slot the next
// step reads; a tensor that was not prefetched is not taken; a prefetch nobody took is
// reported when its slot is reused.
#include "runtime/cuda/executor_prefetch.h"

#include <gtest/gtest.h>

namespace weft::cuda {
namespace {

TEST(PrefetchRing, TheDriversOrderAlternatesTheSlots) {
  PrefetchRing ring;
  int batches[8];
  PrefetchRing::Claim c = ring.claim(&batches[0]);
  EXPECT_EQ(c.slot, 0);
  EXPECT_FALSE(c.replaces_untaken);
  for (int n = 0; n < 7; ++n) {
    c = ring.claim(&batches[n + 1]);  // batch n+1 while step n runs
    EXPECT_EQ(c.slot, (n + 1) % 2) << "batch " << n + 1;
    EXPECT_FALSE(c.replaces_untaken) << "batch " << n + 1;
    EXPECT_EQ(ring.take(&batches[n]), n % 2) << "step " << n << " reads the slot batch " << n << " went to";
    EXPECT_EQ(ring.take(&batches[n]), std::nullopt) << "taken twice";
  }
  EXPECT_EQ(ring.take(&batches[7]), 1);
}

TEST(PrefetchRing, AnotherTensorIsNotTaken) {
  PrefetchRing ring;
  int a = 0, other = 0;
  ring.claim(&a);
  EXPECT_EQ(ring.take(&other), std::nullopt);
  EXPECT_EQ(ring.take(nullptr), std::nullopt);
  EXPECT_EQ(ring.take(&a), 0);  // the prefetch passed over stays for its own set_input
}

TEST(PrefetchRing, AReusedSlotReportsAnUntakenPrefetch) {
  PrefetchRing ring;
  int a = 0, b = 0, c = 0;
  ring.claim(&a);
  ring.claim(&b);
  const PrefetchRing::Claim third = ring.claim(&c);  // a was never taken
  EXPECT_EQ(third.slot, 0);
  EXPECT_TRUE(third.replaces_untaken);
  EXPECT_EQ(ring.take(&a), std::nullopt);
  EXPECT_EQ(ring.take(&b), 1);
  EXPECT_EQ(ring.take(&c), 0);
}

TEST(PrefetchRing, TheSameTensorTwiceIsTakenOldestFirst) {
  PrefetchRing ring;
  int a = 0;
  ring.claim(&a);
  ring.claim(&a);
  EXPECT_EQ(ring.take(&a), 0);
  EXPECT_EQ(ring.take(&a), 1);
}

// A prefetch whose copy could not be queued is forgotten: set_input copies those bytes
// from the host rather than take a slot the copy never filled, and the other slot's
// prefetch is still taken.
TEST(PrefetchRing, AForgottenClaimIsNotTaken) {
  PrefetchRing ring;
  int a = 0, b = 0;
  ring.claim(&a);
  const PrefetchRing::Claim failed = ring.claim(&b);
  ring.forget(failed.slot);
  EXPECT_EQ(ring.take(&b), std::nullopt);
  EXPECT_EQ(ring.take(&a), 0);
  EXPECT_FALSE(ring.claim(&b).replaces_untaken);
}

}  // namespace
}  // namespace weft::cuda

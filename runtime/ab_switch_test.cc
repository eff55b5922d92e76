// The A/B switches read "0" and "1" only; any other value is named on stderr once
// (WEFT_PERSISTENT_LOOPS=yes and WEFT_LOOP_SLOTS=off changed nothing and said nothing).
#include "runtime/ab_switch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace weft {
namespace {

TEST(AbSwitch, ZeroAndOneOnly) {
  setenv("WEFT_TEST_SWITCH_A", "0", 1);
  EXPECT_TRUE(switched_off("WEFT_TEST_SWITCH_A"));
  EXPECT_FALSE(switched_on("WEFT_TEST_SWITCH_A"));
  setenv("WEFT_TEST_SWITCH_A", "1", 1);
  EXPECT_FALSE(switched_off("WEFT_TEST_SWITCH_A"));
  EXPECT_TRUE(switched_on("WEFT_TEST_SWITCH_A"));
  unsetenv("WEFT_TEST_SWITCH_A");
  EXPECT_FALSE(switched_off("WEFT_TEST_SWITCH_A"));
  EXPECT_FALSE(switched_on("WEFT_TEST_SWITCH_A"));
}

TEST(AbSwitch, AnotherValueIsNamedOnce) {
  setenv("WEFT_TEST_SWITCH_B", "yes", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(switched_on("WEFT_TEST_SWITCH_B"));
  EXPECT_FALSE(switched_on("WEFT_TEST_SWITCH_B"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "weft: warning: WEFT_TEST_SWITCH_B=yes is ignored: only 1 turns this opt-in on (it stays off)\n");
  setenv("WEFT_TEST_SWITCH_C", "off", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(switched_off("WEFT_TEST_SWITCH_C"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "weft: warning: WEFT_TEST_SWITCH_C=off is ignored: only 0 turns this optimization off (it stays on)\n");
}

}  // namespace
}  // namespace weft

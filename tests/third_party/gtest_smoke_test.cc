// Links GoogleTest and GoogleMock and uses one matcher from each.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

TEST(GTestSmoke, MatchersWork) {
  std::vector<int> v = {1, 2, 3};
  EXPECT_THAT(v, ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(v.size(), 3u);
}

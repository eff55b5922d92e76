// Checked int64 arithmetic: exact results, overflow sticks. The operands are read before
// the result is stored, whatever order the compiler evaluates arguments in (clang and
// GCC differ; clang once made every product its first factor).

#include "ir/checked_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ir/shape.h"

namespace weft {
namespace {

TEST(Checked, ExactResults) {
  EXPECT_EQ((Checked(6) * 7).value(), 42);
  EXPECT_EQ((Checked(6) + 7).value(), 13);
  EXPECT_EQ((Checked(6) - 7).value(), -1);
  EXPECT_EQ((Checked(42) / 5).value(), 8);
  Checked n = 1;
  for (int64_t d : {2, 3, 11}) n = n * d;
  EXPECT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 66);
  EXPECT_EQ(Shape({2, 3, 11}).numel(), 66);
  EXPECT_EQ((Type{DType::u8, Shape({2, 3, 11})}.bytes()), 66u);
  EXPECT_EQ(checked_numel({4, 5, 6}), 120);
}

TEST(Checked, OverflowSticks) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE((Checked(big) + 1).ok());
  EXPECT_FALSE((Checked(-big) - 2).ok());
  EXPECT_FALSE((Checked(int64_t{1} << 32) * (int64_t{1} << 32)).ok());
  EXPECT_FALSE(((Checked(big) + 1) - 5).ok());
  EXPECT_FALSE((Checked(1) / 0).ok());
  EXPECT_FALSE((Checked(std::numeric_limits<int64_t>::min()) / -1).ok());
  EXPECT_EQ(checked_extent({int64_t{1} << 40, 0, int64_t{1} << 40}), std::nullopt);
}

}  // namespace
}  // namespace weft

// The generated kernels' innermost-read rule (operand_layout.h), which fold-slices asks.
#include "codegen/operand_layout.h"

#include <gtest/gtest.h>

namespace weft::codegen {
namespace {

TEST(OperandLayout, InnermostReadsOfAWindow) {
  // A column of a [4,129] source: read along an [4,1] kernel's rows with stride 129, so
  // not in place; broadcast along an [4,16] kernel's rows (stride 0), so in place.
  EXPECT_FALSE(innermost_contiguous({4, 1}, {4, 1}, {4, 129}));
  EXPECT_TRUE(innermost_contiguous({4, 16}, {4, 1}, {4, 129}));
  // Columns [0,8) of [4,16]: consecutive along the rows.
  EXPECT_TRUE(innermost_contiguous({4, 8}, {4, 8}, {4, 16}));
  // A row of [4,16] read by an [1,16] kernel, and a window broadcast from the left.
  EXPECT_TRUE(innermost_contiguous({1, 16}, {1, 16}, {4, 16}));
  EXPECT_TRUE(innermost_contiguous({3, 4, 8}, {4, 8}, {4, 16}));
  // Trailing size-1 axes of the source do not break contiguity; a rank-0 kernel reads one.
  EXPECT_TRUE(innermost_contiguous({2, 4, 1}, {2, 4, 1}, {2, 8, 1}));
  EXPECT_TRUE(innermost_contiguous({4, 1}, {4, 1}, {4, 1}));
  EXPECT_TRUE(innermost_contiguous({}, {}, {}));
}

}  // namespace
}  // namespace weft::codegen

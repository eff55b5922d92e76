// runtime/pool_geometry.h: the one pooling window every backend starts from.
#include "runtime/pool_geometry.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

Node pooling(IntList kernel, IntList stride, IntList padding) {
  Node n;
  n.op = Op::MaxPool2d;
  n.attrs["kernel"] = std::move(kernel);
  if (!stride.empty()) n.attrs["stride"] = std::move(stride);
  n.attrs["padding"] = std::move(padding);
  return n;
}

TEST(PoolGeometry, HeaderExample) {
  StatusOr<PoolGeometry> g = pool_geometry(pooling({3, 3}, {2, 2}, {1, 1}), Shape{2, 3, 9, 11});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->planes, 6);
  EXPECT_EQ(g->oh, 5);
  EXPECT_EQ(g->ow, 6);
  EXPECT_EQ(pooled_shape(Shape{2, 3, 9, 11}, *g), (Shape{2, 3, 5, 6}));
  // The stride defaults to the kernel.
  g = pool_geometry(pooling({2, 2}, {}, {0, 0}), Shape{1, 1, 7, 8});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->sh, 2);
  EXPECT_EQ(g->oh, 3);
  EXPECT_EQ(g->ow, 4);
}

TEST(PoolGeometry, Errors) {
  EXPECT_EQ(pool_geometry(pooling({0, 2}, {}, {0, 0}), Shape{1, 1, 4, 4}).error().message,
            "max_pool2d: invalid pooling window");
  EXPECT_EQ(pool_geometry(pooling({5, 5}, {}, {0, 0}), Shape{1, 1, 4, 4}).error().message,
            "max_pool2d: the window is larger than the padded input [1,1,4,4]");
  EXPECT_EQ(pool_geometry(pooling({2, 2}, {}, {0, 0}), Shape{1, 4, 4}).error().message,
            "max_pool2d: expects a 4-D NCHW input, got [1,4,4]");
}

}  // namespace
}  // namespace weft

// runtime/conv_geometry.h: the one convolution geometry every backend starts from.
#include "runtime/conv_geometry.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

Node convolution(Attrs attrs = {}) {
  Node n;
  n.op = Op::Conv;
  n.attrs = std::move(attrs);
  n.attrs["groups"] = int64_t{1};
  return n;
}

TEST(ConvGeometry, HeaderExample) {
  StatusOr<ConvGeometry> g =
      conv_geometry(convolution({{"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}}),
                    Shape{2, 3, 9, 11}, Shape{8, 3, 3, 3});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->spatial, 2);
  EXPECT_EQ(g->d, 1);
  EXPECT_EQ(g->kd, 1);
  EXPECT_EQ(g->od, 1);
  EXPECT_EQ(g->oh, 5);
  EXPECT_EQ(g->ow, 6);
  EXPECT_EQ(g->patch(), 27);
  EXPECT_EQ(g->pixels(), 30);
  EXPECT_EQ(g->y_shape(), (Shape{2, 8, 5, 6}));
  EXPECT_EQ(g->x_shape(), (Shape{2, 3, 9, 11}));
  EXPECT_EQ(g->w_shape(), (Shape{8, 3, 3, 3}));
}

TEST(ConvGeometry, ThreeAndOneSpatialDims) {
  // Per-axis attributes land on (d, h, w) in order; absent ones are 1, 0 and 1.
  StatusOr<ConvGeometry> g = conv_geometry(
      convolution({{"stride", IntList{1, 2, 3}}, {"padding", IntList{0, 1, 2}},
                   {"dilation", IntList{1, 2, 2}}}),
      Shape{2, 4, 6, 9, 10}, Shape{6, 4, 3, 2, 3});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->spatial, 3);
  EXPECT_EQ((std::vector<int64_t>{g->sd, g->sh, g->sw, g->pd, g->ph, g->pw, g->dd, g->dh, g->dw}),
            (std::vector<int64_t>{1, 2, 3, 0, 1, 2, 1, 2, 2}));
  EXPECT_EQ(g->y_shape(), (Shape{2, 6, 4, 5, 4}));
  EXPECT_EQ(g->patch(), 4 * 3 * 2 * 3);
  EXPECT_FALSE(g->pointwise());

  g = conv_geometry(convolution(), Shape{3, 2, 7}, Shape{5, 2, 1});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->spatial, 1);
  EXPECT_EQ(g->d * g->h, 1);
  EXPECT_EQ(g->w, 7);
  EXPECT_EQ(g->y_shape(), (Shape{3, 5, 7}));
  EXPECT_TRUE(g->pointwise());
}

TEST(ConvGeometry, Errors) {
  EXPECT_EQ(conv_geometry(convolution(), Shape{2, 3}, Shape{4, 3}).error().message,
            "conv: expects an input [N, C, *spatial] with 1 to 3 spatial dims and a weight of "
            "its rank, got [2,3] and [4,3]");
  EXPECT_EQ(conv_geometry(convolution(), Shape{1, 3, 4, 4, 4}, Shape{4, 3, 3, 3}).error().message,
            "conv: expects an input [N, C, *spatial] with 1 to 3 spatial dims and a weight of "
            "its rank, got [1,3,4,4,4] and [4,3,3,3]");
  EXPECT_EQ(conv_geometry(convolution({{"stride", IntList{1, 1}}}), Shape{1, 3, 4, 4, 4},
                          Shape{4, 3, 3, 3, 3})
                .error()
                .message,
            "conv: stride [1, 1] must have 3 entries, one per spatial dim");
  EXPECT_EQ(conv_geometry(convolution({{"stride", IntList{0, 1}}}), Shape{1, 3, 4, 4},
                          Shape{4, 3, 3, 3})
                .error()
                .message,
            "conv: invalid convolution of [1,3,4,4] by [4,3,3,3]");
  EXPECT_EQ(conv_geometry(convolution(), Shape{1, 3, 2, 4, 4}, Shape{4, 3, 3, 3, 3})
                .error()
                .message,
            "conv: the kernel is larger than the padded input [1,3,2,4,4]");
  EXPECT_EQ(conv_geometry(convolution({{"padding", IntList{0, int64_t{1} << 62}}}),
                          Shape{1, 3, 4, 4}, Shape{4, 3, 3, 3})
                .error()
                .message,
            "conv: the convolution of [1,3,4,4] by [4,3,3,3] with stride [1, 1], padding [0, "
            "4611686018427387904] and dilation [1, 1] has sizes that overflow int64");
}

}  // namespace
}  // namespace weft

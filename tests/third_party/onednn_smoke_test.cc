// oneDNN: a 2x2 sgemm through the C API.
#include <dnnl.h>
#include <gtest/gtest.h>

TEST(OneDnnSmoke, Sgemm) {
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {0, 0, 0, 0};
  ASSERT_EQ(dnnl_sgemm('N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2), dnnl_success);
  EXPECT_FLOAT_EQ(c[0], 19);
  EXPECT_FLOAT_EQ(c[3], 50);
}

// zlib: compress and uncompress a buffer.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

TEST(ZlibSmoke, RoundTrip) {
  std::string text(1000, 'w');
  uLongf packed_size = compressBound(text.size());
  std::vector<Bytef> packed(packed_size);
  ASSERT_EQ(compress(packed.data(), &packed_size, reinterpret_cast<const Bytef*>(text.data()),
                     text.size()),
            Z_OK);
  EXPECT_LT(packed_size, text.size());
  std::string out(text.size(), '\0');
  uLongf out_size = out.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &out_size, packed.data(), packed_size),
            Z_OK);
  EXPECT_EQ(out, text);
}

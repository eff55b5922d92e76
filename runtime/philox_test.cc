#include "runtime/philox.h"

#include <gtest/gtest.h>

namespace weft::philox {
namespace {

// Known-answer vectors for Philox4x32-10 from Random123's kat_vectors.
TEST(PhiloxTest, KnownAnswers) {
  struct Case {
    Block ctr;
    uint32_t k0, k1;
    Block want;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case& c : cases) {
    Block got = philox4x32_10(c.ctr, c.k0, c.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], c.want.v[i]) << i;
  }
}

TEST(PhiloxTest, ElementBlockLayout) {
  // seed fills the key (lo, hi), the element index the low counter words and the
  // offset the high ones.
  const int64_t seed = 0x299f31d0a4093822LL, offset = 0x0370734413198a2eLL;
  const uint64_t index = 0x85a308d3243f6a88ULL;
  Block b = element_block(seed, offset, index);
  EXPECT_EQ(b.v[0], 0xd16cfe09u);
  EXPECT_EQ(b.v[3], 0x24126ea1u);
}

TEST(PhiloxTest, UniformConversions) {
  Block ones{{0xffffffffu, 0xffffffffu, 0, 0}};
  EXPECT_LT(uniform_f32(ones), 1.0f);
  EXPECT_EQ(uniform_f32(ones), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_f64(ones), 1.0 - 0x1p-53);
  EXPECT_EQ(uniform_f16_value(ones), 1.0f - 0x1p-11f);
  EXPECT_EQ(uniform_bf16_value(ones), 1.0f - 0x1p-8f);
  Block zero{{0, 0, 0, 0}};
  EXPECT_EQ(uniform_f32(zero), 0.0f);
  EXPECT_EQ(uniform_f64(zero), 0.0);
  Block half{{0x80000000u, 0, 0, 0}};
  EXPECT_EQ(uniform_f32(half), 0.5f);
  EXPECT_EQ(uniform_f64(half), 0.5);
}

}  // namespace
}  // namespace weft::philox

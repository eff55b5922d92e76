#pragma once
// Counter-based Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC'11), the generator JAX and PyTorch's CUDA backend use. Header-only and
// dependency-free so that every backend (reference, CPU, generated CUDA) computes the
// same bits for the same element.
//
// weft's random ops take a key tensor `i64[2]`: seed = key[0], offset = key[1]. Element
// `i` (row-major index in the output) is drawn from one Philox block:
//   key     = (lo32(seed), hi32(seed))
//   counter = (lo32(i), hi32(i), lo32(offset), hi32(offset))
//   out     = philox4x32_10(counter, key)                  // four 32-bit words
// and converted (only out[0], and out[1] for f64, are used):
//   f32   u = (out[0] >> 8) * 2^-24                        // 24 bits, in [0, 1)
//   f16   u = (out[0] >> 21) * 2^-11                       // exactly representable
//   bf16  u = (out[0] >> 24) * 2^-8                        // exactly representable
//   f64   u = (((u64)out[0] << 32 | out[1]) >> 11) * 2^-53 // 53 bits
// `random_bernoulli {p}` gives 1 where the f32 uniform of the element is < p, else 0,
// in any dtype.

#include <cstdint>

namespace weft::philox {

inline constexpr uint32_t kM0 = 0xD2511F53u;
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;  ///< Golden ratio.
inline constexpr uint32_t kW1 = 0xBB67AE85u;  ///< sqrt(3) - 1.

struct Block {
  uint32_t v[4];
};

/// Philox 4x32 with 10 rounds: the Random123 reference function.
inline constexpr Block philox4x32_10(Block ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Block{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
  }
  return ctr;
}

/// The block for element `index` of a random op with key (seed, offset).
inline constexpr Block element_block(int64_t seed, int64_t offset, uint64_t index) {
  const uint64_t s = static_cast<uint64_t>(seed), o = static_cast<uint64_t>(offset);
  Block ctr{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
             static_cast<uint32_t>(o), static_cast<uint32_t>(o >> 32)}};
  return philox4x32_10(ctr, static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32));
}

/// Uniform in [0, 1) with 24 random bits.
inline constexpr float uniform_f32(const Block& b) {
  return static_cast<float>(b.v[0] >> 8) * (1.0f / 16777216.0f);
}
/// Uniform in [0, 1) with 53 random bits.
inline constexpr double uniform_f64(const Block& b) {
  const uint64_t bits = (static_cast<uint64_t>(b.v[0]) << 32) | b.v[1];
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}
/// Uniform in [0, 1) with 11 random bits, exactly representable in f16.
inline constexpr float uniform_f16_value(const Block& b) {
  return static_cast<float>(b.v[0] >> 21) * (1.0f / 2048.0f);
}
/// Uniform in [0, 1) with 8 random bits, exactly representable in bf16.
inline constexpr float uniform_bf16_value(const Block& b) {
  return static_cast<float>(b.v[0] >> 24) * (1.0f / 256.0f);
}

}  // namespace weft::philox

#pragma once
// f32 <-> f16/bf16 bits, exact or rounded to nearest even: the one definition, for the
// host (runtime/tensor.h's float_to_f16, f16_to_float, float_to_bf16, bf16_to_float call
// these) and for CUDA device code (runtime/cuda/pool.cu's half pooling), compiled by nvcc
// too. Header-only and dependency-free, like philox.h. codegen/emit_half.cc emits the same
// rounding into generated kernels.
//
// f16 after Fabian Giesen's `float_to_half_fast3_rtne` and `half_to_float`: exact, with
// the float unit doing the round-to-nearest-even for subnormal results. bf16 by integer
// ops (denormals kept); NaN stays a quiet NaN in both.

#include <cstdint>
#include <cstring>

#include "ir/host_device.h"

namespace weft::half_bits {

/// The bits of `f`.
WEFT_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

/// The float with bits `u`.
WEFT_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// `value` as IEEE binary16 bits, rounded to nearest even; overflow gives ±inf, NaN
/// gives sign | 0x7e00.
WEFT_HD inline uint16_t float_to_f16(float value) {
  uint32_t u = float_bits(value);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= (127u + 16u) << 23) {  // |value| >= 65536 (or inf/NaN): inf or NaN.
    out = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {  // Result is subnormal or zero.
    const float denorm_magic = bits_float(((127u - 15u) + (23u - 10u) + 1u) << 23);
    float f = bits_float(u) + denorm_magic;
    out = static_cast<uint16_t>(float_bits(f) - float_bits(denorm_magic));
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;  // Rebias, round half down...
    u += mant_odd;                                          // ...or up to even.
    out = static_cast<uint16_t>(u >> 13);                   // Carries into inf past 65504.
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

/// IEEE binary16 `bits` as a float (exact; a NaN keeps its sign and payload).
WEFT_HD inline float f16_to_float(uint16_t bits) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t u = (bits & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & u;
  u += (127u - 15u) << 23;
  float f;
  if (exp == shifted_exp) {  // Inf/NaN.
    u += (128u - 16u) << 23;
    f = bits_float(u);
  } else if (exp == 0) {  // Zero/subnormal: renormalize through the float unit.
    u += 1u << 23;
    f = bits_float(u) - bits_float(113u << 23);
  } else {
    f = bits_float(u);
  }
  return bits_float(float_bits(f) | (static_cast<uint32_t>(bits & 0x8000u) << 16));
}

/// `value` as bfloat16 bits, rounded to nearest even; NaN as its top half with the quiet
/// bit set.
WEFT_HD inline uint16_t float_to_bf16(float value) {
  uint32_t u = float_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// bfloat16 `bits` as a float (exact).
WEFT_HD inline float bf16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace weft::half_bits

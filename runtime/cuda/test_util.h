#pragma once
// What runtime/cuda's tests share.

#include <cstdint>

#include "runtime/tensor.h"

namespace weft::cuda::test_util {

/// Values in [-1, 1) from a linear congruential generator seeded by `seed`.
inline Tensor random_tensor(Type type, uint32_t seed) {
  Tensor t(type);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.set_double(i, static_cast<double>(s >> 8) / (1 << 24) * 2.0 - 1.0);
  }
  return t;
}

}  // namespace weft::cuda::test_util

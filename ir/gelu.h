#pragma once
// gelu's two forms as scalar functions of one element, for every place that computes gelu
// one element at a time: the reference interpreter's kernel (runtime/reference) and the
// persistent loop kernel's register programs, on the host and under nvcc
// (runtime/cuda/recurrent_cell_op.h). The same expression in the same type, so the two
// agree bit for bit.
//
//   float y = gelu_erf(x);    // approximate="none"
//   float t = gelu_tanh(x);   // approximate="tanh"

#include <cmath>

#include "ir/host_device.h"

namespace weft {

/// gelu(x) = x/2 · (1 + erf(x/√2)), computed in T.
template <class T>
WEFT_HD T gelu_erf(T x) {
  const T inv_sqrt2 = static_cast<T>(0.70710678118654752440084436210485);
  return T(0.5) * x * (T(1) + std::erf(x * inv_sqrt2));
}

/// gelu(x) ≈ x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))), computed in T.
template <class T>
WEFT_HD T gelu_tanh(T x) {
  const T sqrt_2_over_pi = static_cast<T>(0.79788456080286535587989211986876);
  return T(0.5) * x * (T(1) + std::tanh(sqrt_2_over_pi * (x + T(0.044715) * x * x * x)));
}

}  // namespace weft

#pragma once
// The pooling kernels' per-element functions (pool.cu), compiled by nvcc for the device
// and by the host compiler for the host: pool_kernels_test runs these same functions over
// host buffers against the reference interpreter, so CI checks the kernels' window
// arithmetic, tie-breaking and summation order without a GPU.
//
// Each function computes one element of its op's result, exactly as
// runtime/reference/contraction.cc ("pooling") does: floor mode, zero padding, windows
// walked in row-major order, the first maximum wins with NaN counting as the maximum,
// average pooling sums in f64 and divides by the full window (padding counts as zeros).
// The backward ops are in gather form: each input element sums, in the reference's
// window order, the gradients of the windows that route to it, so the result is the
// reference's to the last bit and needs no atomics.
//
// Why hand-written and not cuDNN's pooling: weft's backward ops take (x, gy) or (gy)
// alone (autodiff/ never keeps the pooled y), where cudnnPoolingBackward wants
// (y, dy, x); and cuDNN does not promise the reference's first-maximum tie-breaking
// (nor NaN as the maximum), which max_pool2d_backward and max_pool2d_select must match
// so that the gradient goes to the same element on every backend.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "ir/host_device.h"

namespace weft::cuda {

/// The geometry of a pooling over an NCHW input: `planes` = N·C planes of h×w, a kh×kw
/// window moved by (sh, sw) over the input padded by (ph, pw), giving oh×ow outputs per
/// plane (conv_plan.h's plan_pooling makes it from a node).
struct PoolWindow {
  int64_t planes = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;
};

/// The pooling ops pool.cu runs. Operands a and b and the result, by op:
///   kMaxPool        max_pool2d(x)              a = x                   -> [planes, oh, ow]
///   kAvgPool        avg_pool2d(x)              a = x                   -> [planes, oh, ow]
///   kMaxPoolBackward max_pool2d_backward(x, gy) a = x, b = gy           -> [planes, h, w]
///   kAvgPoolBackward avg_pool2d_backward(gy)    a = gy                  -> [planes, h, w]
///   kMaxPoolSelect  max_pool2d_select(x, g)    a = x, b = g ([planes, h, w]) -> [planes, oh, ow]
enum PoolOp : int32_t { kMaxPool, kAvgPool, kMaxPoolBackward, kAvgPoolBackward, kMaxPoolSelect };

/// Elements of `op`'s result.
WEFT_HD inline int64_t pool_result_count(const PoolWindow& g, PoolOp op) {
  return op == kMaxPoolBackward || op == kAvgPoolBackward ? g.planes * g.h * g.w
                                                          : g.planes * g.oh * g.ow;
}

/// Elements of `op`'s operands a and b (0 for b when the op has one operand).
struct PoolOperandCounts {
  int64_t a = 0, b = 0;
};
WEFT_HD inline PoolOperandCounts pool_operand_counts(const PoolWindow& g, PoolOp op) {
  const int64_t in = g.planes * g.h * g.w, pooled = g.planes * g.oh * g.ow;
  switch (op) {
    case kMaxPool: case kAvgPool: return {in, 0};
    case kMaxPoolBackward: return {in, pooled};
    case kAvgPoolBackward: return {pooled, 0};
    case kMaxPoolSelect: return {in, in};
  }
  return {};
}

/// The f32 scratch an f16/bf16 pooling takes (pool.h, launch_pool_half): its operands
/// widened and its f32 result, before rounding.
inline size_t pool_half_workspace_bytes(const PoolWindow& g, PoolOp op) {
  const PoolOperandCounts n = pool_operand_counts(g, op);
  return static_cast<size_t>(n.a + n.b + pool_result_count(g, op)) * sizeof(float);
}

/// a·b rounded once: nvcc would otherwise contract `acc += a * b` into one FMA, which
/// rounds differently from the reference's separate multiply and add.
template <typename T>
WEFT_HD inline T mul_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  return a * b;
#endif
}

/// The index in its plane of the first maximum of window (oy, ox), NaN counting as the
/// maximum; -1 when the window covers padding only.
template <typename T>
WEFT_HD inline int64_t pool_window_argmax(const PoolWindow& g, const T* plane, int64_t oy,
                                          int64_t ox) {
  int64_t best = -1;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t y = oy * g.sh - g.ph + i;
    if (y < 0 || y >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t x = ox * g.sw - g.pw + j;
      if (x < 0 || x >= g.w) continue;
      const T v = plane[y * g.w + x];
      if (best < 0) {
        best = y * g.w + x;
        continue;
      }
      const T b = plane[best];
      const bool b_nan = b != b, v_nan = v != v;
      if (!b_nan && (v > b || v_nan)) best = y * g.w + x;
    }
  }
  return best;
}

/// max_pool2d, element e of the result: the window's first maximum, -inf for padding
/// only.
template <typename T>
WEFT_HD inline T max_pool_element(const PoolWindow& g, const T* x, int64_t e) {
  const int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
  const T* plane = x + p * g.h * g.w;
  const int64_t i = pool_window_argmax(g, plane, oy, ox);
  return i < 0 ? -std::numeric_limits<T>::infinity() : plane[i];
}

/// avg_pool2d, element e of the result: the window's sum in f64 over kh·kw.
template <typename T>
WEFT_HD inline T avg_pool_element(const PoolWindow& g, const T* x, int64_t e) {
  const int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
  const T* plane = x + p * g.h * g.w;
  double sum = 0;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t y = oy * g.sh - g.ph + i;
    if (y < 0 || y >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t xx = ox * g.sw - g.pw + j;
      if (xx >= 0 && xx < g.w) sum += static_cast<double>(plane[y * g.w + xx]);
    }
  }
  return static_cast<T>(sum / static_cast<double>(g.kh * g.kw));
}

/// max_pool2d_select, element e of the result: g at the window's first maximum of x, 0
/// for padding only.
template <typename T>
WEFT_HD inline T max_pool_select_element(const PoolWindow& geo, const T* x, const T* g,
                                         int64_t e) {
  const int64_t ox = e % geo.ow, oy = (e / geo.ow) % geo.oh, p = e / (geo.ow * geo.oh);
  const int64_t i = pool_window_argmax(geo, x + p * geo.h * geo.w, oy, ox);
  return i < 0 ? T(0) : g[p * geo.h * geo.w + i];
}

/// The windows that cover input row y (or column: pass w, pw, sw, kw, ow): [lo, hi],
/// empty when lo > hi.
WEFT_HD inline void pool_covering(int64_t y, int64_t pad, int64_t k, int64_t stride,
                                  int64_t out, int64_t& lo, int64_t& hi) {
  // Window o covers o·stride - pad ... o·stride - pad + k - 1.
  const int64_t first = y + pad - k + 1;
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = (y + pad) / stride;
  if (hi > out - 1) hi = out - 1;
}

/// max_pool2d_backward, element e of the result (an input position): the sum, in the
/// reference's window order, of gy over the windows whose first maximum is this element.
template <typename T>
WEFT_HD inline T max_pool_backward_element(const PoolWindow& g, const T* x, const T* gy,
                                           int64_t e) {
  const int64_t xx = e % g.w, y = (e / g.w) % g.h, p = e / (g.w * g.h);
  const T* plane = x + p * g.h * g.w;
  const T* grad = gy + p * g.oh * g.ow;
  int64_t oy0, oy1, ox0, ox1;
  pool_covering(y, g.ph, g.kh, g.sh, g.oh, oy0, oy1);
  pool_covering(xx, g.pw, g.kw, g.sw, g.ow, ox0, ox1);
  T acc = T(0);
  for (int64_t oy = oy0; oy <= oy1; ++oy) {
    for (int64_t ox = ox0; ox <= ox1; ++ox) {
      if (pool_window_argmax(g, plane, oy, ox) == y * g.w + xx) acc += grad[oy * g.ow + ox];
    }
  }
  return acc;
}

/// True when no two windows share an element (stride >= kernel on both axes, as in the
/// usual 2x2 pooling of stride 2): max_pool2d_backward is then a scatter, below.
WEFT_HD inline bool pool_windows_disjoint(const PoolWindow& g) {
  return g.sh >= g.kh && g.sw >= g.kw;
}

/// max_pool2d_backward in scatter form, for disjoint windows: window e (of planes·oh·ow)
/// puts 0 + its gradient at its first maximum, in a result zeroed before. No element
/// takes two gradients, so these are the gather form's bits (and the reference's: 0 + g,
/// which turns -0 into +0) for one window search per window instead of one per element.
template <typename T>
WEFT_HD inline void max_pool_backward_scatter(const PoolWindow& g, const T* x, const T* gy,
                                              int64_t e, T* out) {
  const int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
  const int64_t i = pool_window_argmax(g, x + p * g.h * g.w, oy, ox);
  if (i >= 0) out[p * g.h * g.w + i] = static_cast<T>(T(0) + gy[e]);
}

/// avg_pool2d_backward, element e of the result: the sum, in the reference's window
/// order, of gy·(1/(kh·kw)) over the windows that cover this element.
template <typename T>
WEFT_HD inline T avg_pool_backward_element(const PoolWindow& g, const T* gy, int64_t e) {
  const int64_t xx = e % g.w, y = (e / g.w) % g.h, p = e / (g.w * g.h);
  const T* grad = gy + p * g.oh * g.ow;
  const T scale = static_cast<T>(1.0 / static_cast<double>(g.kh * g.kw));
  int64_t oy0, oy1, ox0, ox1;
  pool_covering(y, g.ph, g.kh, g.sh, g.oh, oy0, oy1);
  pool_covering(xx, g.pw, g.kw, g.sw, g.ow, ox0, ox1);
  T acc = T(0);
  for (int64_t oy = oy0; oy <= oy1; ++oy) {
    for (int64_t ox = ox0; ox <= ox1; ++ox) acc += mul_rn(grad[oy * g.ow + ox], scale);
  }
  return acc;
}

/// Element e of `op`'s result (a, b as in PoolOp).
template <typename T>
WEFT_HD inline T pool_element(PoolOp op, const PoolWindow& g, const T* a, const T* b, int64_t e) {
  switch (op) {
    case kMaxPool: return max_pool_element(g, a, e);
    case kAvgPool: return avg_pool_element(g, a, e);
    case kMaxPoolBackward: return max_pool_backward_element(g, a, b, e);
    case kAvgPoolBackward: return avg_pool_backward_element(g, a, e);
    default: return max_pool_select_element(g, a, b, e);
  }
}

}  // namespace weft::cuda

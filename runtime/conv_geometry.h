#pragma once
// A convolution's sizes, decided once for every backend: the reference interpreter
// (reference/contraction.cc), the CPU's im2col and oneDNN kernels (cpu/conv.cc,
// cpu/conv_onednn.cc) and the cuDNN plans (cuda/conv_plan.cc) all start here, as the
// pooling backends start from pool_geometry.h.
//
// conv, conv_backward_input and conv_backward_weight take 1, 2 or 3 spatial dims; the
// geometry always has three, the missing leading ones of size 1 (kernel 1, stride 1,
// padding 0, dilation 1), so a kernel written for [D, H, W] serves the other ranks
// unchanged.
//
//   // conv(%x: f32[2,3,9,11], %w: f32[8,3,3,3]) {stride=[2, 2], padding=[1, 1]}
//   StatusOr<ConvGeometry> g = conv_geometry(node, Shape{2, 3, 9, 11}, Shape{8, 3, 3, 3});
//   // g->spatial 2, g->d 1, g->h 9, g->w 11, g->od 1, g->oh 5, g->ow 6, g->patch() 27

#include <cstdint>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct ConvGeometry {
  int spatial = 2;              ///< The op's spatial dims (1 to 3).
  int64_t n = 0, c = 0;         ///< x [n, c, d, h, w].
  int64_t d = 1, h = 1, w = 1;
  int64_t o = 0;                ///< weight [o, c / groups, kd, kh, kw].
  int64_t kd = 1, kh = 1, kw = 1;
  int64_t od = 1, oh = 1, ow = 1;  ///< y [n, o, od, oh, ow].
  int64_t sd = 1, sh = 1, sw = 1;
  int64_t pd = 0, ph = 0, pw = 0;
  int64_t dd = 1, dh = 1, dw = 1;  ///< Dilation.
  int64_t groups = 1;

  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t taps() const { return kd * kh * kw; }
  int64_t patch() const { return cg() * taps(); }  ///< Rows of a group's im2col matrix.
  int64_t pixels() const { return od * oh * ow; }   ///< Output positions of one plane.
  int64_t volume() const { return d * h * w; }      ///< Input positions of one plane.
  bool pointwise() const {
    return taps() == 1 && sd == 1 && sh == 1 && sw == 1 && pd == 0 && ph == 0 && pw == 0;
  }
  /// x, w and y at the op's rank ([n, c, *spatial] ...).
  Shape x_shape() const;
  Shape w_shape() const;
  Shape y_shape() const;
};

/// The geometry of convolution `node` (its stride, padding, dilation and groups) of input
/// shape `x` by weight shape `w`. Errors, naming the op and its location: ranks other
/// than 3 to 5 or differing, attributes of the wrong length or range, channels that the
/// groups do not divide ("invalid convolution of X by W"), sizes that overflow int64, a
/// kernel larger than the padded input.
StatusOr<ConvGeometry> conv_geometry(const Node& node, const Shape& x, const Shape& w);

}  // namespace weft

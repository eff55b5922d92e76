#pragma once
// A pooling op's window, decided once for every backend: the reference interpreter
// (reference/contraction.cc), the CPU's kernels (cpu/pool.cc) and the CUDA plans
// (cuda/conv_plan.cc, which copy it into pool.cu's PoolWindow) all start here, as the
// matmul backends start from matmul_geometry.h.
//
//   // max_pool2d(%x: f32[2,3,9,11]) {kernel=[3, 3], stride=[2, 2], padding=[1, 1]}
//   StatusOr<PoolGeometry> g = pool_geometry(node, Shape{2, 3, 9, 11});
//   // g->planes 6, g->oh 5, g->ow 6

#include <cstdint>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct PoolGeometry {
  int64_t planes = 0, h = 0, w = 0;  ///< planes = N·C of the NCHW input.
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;  ///< The pooled size (floor mode).
};

/// The window of pooling `node` (kernel; stride, defaulting to the kernel; padding) over
/// the NCHW input shape `x`. Errors, naming the op and its location: an input that is
/// not 4-D, attributes without two entries, a kernel or stride below 1 or a negative
/// padding ("invalid pooling window"), sizes that overflow int64, a window larger than
/// the padded input.
StatusOr<PoolGeometry> pool_geometry(const Node& node, const Shape& x);

/// [N, C, oh, ow]: the pooled shape of input `x`.
Shape pooled_shape(const Shape& x, const PoolGeometry& g);

}  // namespace weft

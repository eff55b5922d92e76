#include "runtime/pool_geometry.h"

#include <string>

#include "ir/attribute.h"
#include "ir/checked_math.h"

namespace weft {
namespace {

Error pool_error(const Node& node, const std::string& message) {
  return Error{std::string(op_name(node.op)) + ": " + message, node.loc};
}

}  // namespace

StatusOr<PoolGeometry> pool_geometry(const Node& node, const Shape& x) {
  if (x.rank() != 4) return pool_error(node, "expects a 4-D NCHW input, got " + x.to_string());
  const IntList& kernel = node.ints_attr("kernel");
  const IntList stride = node.has_attr("stride") ? node.ints_attr("stride") : kernel;
  const IntList& padding = node.ints_attr("padding");
  if (kernel.size() != 2 || stride.size() != 2 || padding.size() != 2) {
    return pool_error(node, "kernel, stride and padding need two entries each");
  }
  PoolGeometry g{0, x[2], x[3], kernel[0], kernel[1], stride[0], stride[1],
                 padding[0], padding[1], 0, 0};
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0) {
    return pool_error(node, "invalid pooling window");
  }
  // x may come from an attribute (avg_pool2d_backward's input_shape): check every size.
  const Checked planes = Checked(x[0]) * x[1];
  const Checked oh = (Checked(g.h) + Checked(g.ph) * 2 - g.kh) / g.sh + 1;  // Floor mode.
  const Checked ow = (Checked(g.w) + Checked(g.pw) * 2 - g.kw) / g.sw + 1;
  if (!(planes.ok() && oh.ok() && ow.ok() && (oh * ow * planes).ok() &&
        (Checked(g.kh) * g.kw).ok() && checked_extent(x.dims))) {
    return pool_error(node, "pooling " + x.to_string() + " with kernel " +
                                attribute_to_string(kernel) + ", stride " +
                                attribute_to_string(stride) + " and padding " +
                                attribute_to_string(padding) + " has sizes that overflow int64");
  }
  g.planes = planes.value();
  g.oh = oh.value();
  g.ow = ow.value();
  // Integer division truncates towards zero: a window one to `stride` elements larger
  // than the padded input would still give 1.
  if (g.h + 2 * g.ph < g.kh || g.w + 2 * g.pw < g.kw || g.oh < 1 || g.ow < 1) {
    return pool_error(node, "the window is larger than the padded input " + x.to_string());
  }
  return g;
}

Shape pooled_shape(const Shape& x, const PoolGeometry& g) { return Shape{x[0], x[1], g.oh, g.ow}; }

}  // namespace weft

#include "runtime/conv_geometry.h"

#include <string>

#include "ir/attribute.h"
#include "ir/checked_math.h"
#include "ir/window.h"

namespace weft {
namespace {

Error conv_error(const Node& node, const std::string& message) {
  return Error{std::string(op_name(node.op)) + ": " + message, node.loc};
}

// The op's sizes at rank 2 + spatial: [n, c] followed by the three canonical spatial
// sizes without the leading ones the op does not have.
Shape at_rank(int spatial, int64_t a, int64_t b, int64_t d, int64_t h, int64_t w) {
  std::vector<int64_t> dims{a, b, d, h, w};
  dims.erase(dims.begin() + 2, dims.begin() + 2 + (kMaxSpatialDims - spatial));
  return Shape(std::move(dims));
}

}  // namespace

Shape ConvGeometry::x_shape() const { return at_rank(spatial, n, c, d, h, w); }
Shape ConvGeometry::w_shape() const { return at_rank(spatial, o, cg(), kd, kh, kw); }
Shape ConvGeometry::y_shape() const { return at_rank(spatial, n, o, od, oh, ow); }

StatusOr<ConvGeometry> conv_geometry(const Node& node, const Shape& x, const Shape& w) {
  const int spatial = x.rank() - 2;
  if (spatial < 1 || spatial > kMaxSpatialDims || w.rank() != x.rank()) {
    return conv_error(node, "expects an input [N, C, *spatial] with 1 to 3 spatial dims and a "
                            "weight of its rank, got " + x.to_string() + " and " +
                            w.to_string());
  }
  StatusOr<ConvAttrs> attrs = conv_attrs(node, spatial);
  if (!attrs.ok()) return conv_error(node, attrs.error().message);
  const IntList& stride = attrs->stride;
  const IntList& padding = attrs->padding;
  const IntList& dilation = attrs->dilation;
  ConvGeometry g;
  g.spatial = spatial;
  g.n = x[0], g.c = x[1], g.o = w[0];
  g.groups = node.int_attr("groups");
  // Axis a of the op is canonical axis a + (3 - spatial) of (d, h, w).
  int64_t* const in[] = {&g.d, &g.h, &g.w};
  int64_t* const k[] = {&g.kd, &g.kh, &g.kw};
  int64_t* const s[] = {&g.sd, &g.sh, &g.sw};
  int64_t* const p[] = {&g.pd, &g.ph, &g.pw};
  int64_t* const dl[] = {&g.dd, &g.dh, &g.dw};
  int64_t* const out[] = {&g.od, &g.oh, &g.ow};
  bool valid = g.groups >= 1 && g.c % g.groups == 0 && g.o % g.groups == 0 && w[1] == g.cg();
  const int skip = kMaxSpatialDims - spatial;
  for (int a = 0; a < spatial; ++a) {
    *in[skip + a] = x[2 + a];
    *k[skip + a] = w[2 + a];
    *s[skip + a] = stride[a];
    *p[skip + a] = padding[a];
    *dl[skip + a] = dilation[a];
    valid = valid && stride[a] >= 1 && dilation[a] >= 1 && padding[a] >= 0;
  }
  if (!valid) {
    return conv_error(node, "invalid convolution of " + x.to_string() + " by " + w.to_string());
  }
  // Attributes and shapes may be huge: every size below is computed with overflow checks,
  // after which the kernels' index arithmetic stays within these products.
  bool ok = checked_extent(x.dims) && checked_extent(w.dims);
  Checked pixels(1);
  for (int a = skip; a < kMaxSpatialDims; ++a) {
    const Checked size =
        (Checked(*in[a]) + Checked(*p[a]) * 2 - Checked(*dl[a]) * (Checked(*k[a]) - 1) - 1) /
            *s[a] + 1;
    ok = ok && size.ok();
    if (size.ok()) *out[a] = size.value();
    pixels = pixels * (size.ok() ? size.value() : 0);
  }
  const Checked patch = Checked(g.cg()) * g.kd * g.kh * g.kw;
  if (!(ok && (patch * pixels).ok() && (patch * g.og()).ok())) {
    return conv_error(node, "the convolution of " + x.to_string() + " by " + w.to_string() +
                                " with stride " + attribute_to_string(stride) + ", padding " +
                                attribute_to_string(padding) + " and dilation " +
                                attribute_to_string(dilation) + " has sizes that overflow int64");
  }
  if (g.od < 1 || g.oh < 1 || g.ow < 1) {
    return conv_error(node, "the kernel is larger than the padded input " + x.to_string());
  }
  return g;
}

}  // namespace weft

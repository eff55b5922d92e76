#pragma once
// The per-axis attributes of a convolution over 1, 2 or 3 spatial dims (conv,
// conv_backward_input, conv_backward_weight): stride, padding and dilation have one entry
// per spatial dim, and a node without one means all 1 (stride, dilation) or all 0
// (padding). The shape rules (ir/shape_rules_nn.cc) and every backend's geometry
// (runtime/conv_geometry.h) read them here.
//
//   // conv(%x: f32[2,3,8,9,10], %w: f32[4,3,3,3,3]) {stride=[1, 2, 2]}
//   spatial_attr(node, "stride", /*spatial=*/3, /*fill=*/1)   // [1, 2, 2]
//   spatial_attr(node, "padding", /*spatial=*/3, /*fill=*/0)  // [0, 0, 0] (absent)
//   conv_attrs(node, /*spatial=*/3)                           // all three at once

#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

/// The most spatial dims a convolution has (x [N, C, D, H, W]).
inline constexpr int kMaxSpatialDims = 3;

/// `node`'s ints attribute `name` with `spatial` entries, or `fill` on every axis when
/// the node has no such attribute. Error (the attribute and the count it needs) when it
/// has another number of entries.
StatusOr<IntList> spatial_attr(const Node& node, std::string_view name, int spatial,
                               int64_t fill);

/// A convolution's stride, padding and dilation over `spatial` dims (spatial_attr each,
/// absent: 1, 0, 1). Only their lengths are checked: the caller checks their ranges.
struct ConvAttrs {
  IntList stride, padding, dilation;
};
StatusOr<ConvAttrs> conv_attrs(const Node& node, int spatial);

}  // namespace weft

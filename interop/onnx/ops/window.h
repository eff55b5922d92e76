#pragma once
// What Conv, ConvTranspose and the pools share: their window attributes (kernel_shape,
// strides, dilations, pads, auto_pad) read with ONNX's defaults, and padding a value
// explicitly where a weft op's symmetric padding cannot express the pads.
#include <cstdint>
#include <vector>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {

/// One entry per spatial axis.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end;
  /// Whether pad_begin == pad_end on every axis.
  bool symmetric() const { return pad_begin == pad_end; }
  /// The dilated kernel's extent on axis a.
  int64_t span(size_t a) const { return dilation[a] * (kernel[a] - 1) + 1; }
};

/// Attribute `name` with one entry per spatial axis (`size` of them; `dflt` each when
/// absent); refuses a list of another length or an entry below `min`.
std::vector<int64_t> axis_attr(NodeContext& n, const char* name, int64_t dflt, size_t size, int64_t min);

/// The padding before the data when `total` is split in two (Python's floor division,
/// as ONNX's reference): the smaller half, and the larger one after it when
/// `extra_at_end` (SAME_UPPER), else the other way round. A negative total lengthens.
int64_t padding_before(int64_t total, bool extra_at_end);

/// The window of `n` over the spatial dims of `x_shape` ([N, C, *spatial]) for a kernel
/// of `kernel` (from the weight, or kernel_shape for pools): strides and dilations
/// (default 1), pads [begin..., end...] (default 0) or auto_pad (VALID: none; SAME_UPPER
/// and SAME_LOWER: the output is ceil(in / stride), the odd padding at the end or at the
/// beginning). Refuses negative or ill-sized values.
Window read_window(NodeContext& n, const Shape& x_shape, std::vector<int64_t> kernel);

/// x [N, C, *spatial] padded by `begin` and `end` on the spatial axes with `value`.
ValueId pad_spatial(Emitter& e, ValueId x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, double value);

/// A per-channel bias [C] added to y [N, C, *spatial].
ValueId add_channel_bias(Emitter& e, ValueId y, ValueId bias);

}  // namespace weft::onnx_io

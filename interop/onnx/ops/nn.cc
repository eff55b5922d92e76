// Convolutions: Conv (1 to 3 spatial dims, groups, dilations, strides, pads and auto_pad;
// asymmetric pads by a pad op first) and ConvTranspose (functional::conv_transpose, the
// transposed convolution the ConvTranspose modules emit: output_padding, output_shape,
// asymmetric pads). Also the window attributes the pools share (window.h).

#include "frontend/functional.h"
#include "interop/onnx/convert.h"
#include "interop/onnx/ops/window.h"

namespace weft::onnx_io {

std::vector<int64_t> axis_attr(NodeContext& n, const char* name, int64_t dflt, size_t size, int64_t min) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(size, dflt));
  if (v.size() != size) {
    n.invalid("attribute '" + std::string(name) + "' has " + std::to_string(v.size()) +
              " entries, expected " + std::to_string(size));
  }
  for (int64_t x : v) {
    if (x < min) n.unsupported("attribute '" + std::string(name) + "' with an entry below " + std::to_string(min));
  }
  return v;
}

int64_t padding_before(int64_t total, bool extra_at_end) {
  const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // Python's total // 2
  return extra_at_end ? half : total - half;
}

Window read_window(NodeContext& n, const Shape& xs, std::vector<int64_t> kernel) {
  const size_t k = kernel.size();
  Window w;
  w.kernel = std::move(kernel);
  w.stride = axis_attr(n, "strides", 1, k, 1);
  w.dilation = axis_attr(n, "dilations", 1, k, 1);
  for (int64_t x : w.kernel) {
    if (x < 1) n.invalid("the kernel's sizes must be >= 1");
  }
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = axis_attr(n, "pads", 0, 2 * k, 0);
    w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(k));
    w.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(k), pads.end());
    return w;
  }
  if (n.has_attr("pads")) n.invalid("auto_pad " + auto_pad + " and pads are given together");
  w.pad_begin.assign(k, 0);
  w.pad_end.assign(k, 0);
  if (auto_pad == "VALID") return w;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    n.invalid("auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  }
  for (size_t a = 0; a < k; ++a) {
    const int64_t in = xs[static_cast<int>(a) + 2];
    const int64_t out = (in + w.stride[a] - 1) / w.stride[a];
    const int64_t total = std::max<int64_t>(0, (out - 1) * w.stride[a] + w.span(a) - in);
    w.pad_begin[a] = padding_before(total, /*extra_at_end=*/auto_pad == "SAME_UPPER");
    w.pad_end[a] = total - w.pad_begin[a];
  }
  return w;
}

ValueId pad_spatial(Emitter& e, ValueId x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, double value) {
  IntList low = {0, 0}, high = {0, 0};
  low.insert(low.end(), begin.begin(), begin.end());
  high.insert(high.end(), end.begin(), end.end());
  return e.op(Op::Pad, {x}, {{"low", low}, {"high", high}, {"value", value}});
}

ValueId add_channel_bias(Emitter& e, ValueId y, ValueId bias) {
  IntList channel_shape(static_cast<size_t>(e.rank(y)), 1);
  channel_shape[1] = e.shape(y)[1];
  return e.add(y, e.reshape(bias, channel_shape));
}

namespace {
namespace nn {  // this file's names, apart in the importer's unity units

/// x and w of a convolution, checked: x [N, C, 1 to 3 spatial dims], w of x's rank.
/// Returns the kernel (w's spatial dims), checked against kernel_shape when given.
std::vector<int64_t> conv_kernel(NodeContext& n, const Shape& xs, const Shape& ws) {
  if (xs.rank() < 3 || xs.rank() > 5) {
    n.unsupported("an input of rank " + std::to_string(xs.rank()) +
                  " (weft convolves over 1 to 3 spatial dims)");
  }
  if (ws.rank() != xs.rank()) {
    n.invalid("the weight " + ws.to_string() + " must have the input's rank " + std::to_string(xs.rank()));
  }
  std::vector<int64_t> kernel(ws.dims.begin() + 2, ws.dims.end());
  if (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != kernel) {
    n.invalid("kernel_shape " + Shape(n.attr_ints("kernel_shape")).to_string() +
              " disagrees with the weight " + ws.to_string());
  }
  return kernel;
}

void conv(NodeContext& n) {
  n.expect_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  Emitter& e = n.e();
  // Every input is read before any op is emitted.
  ValueId x = n.input(0), w = n.input(1);
  const ValueId bias = n.has_input(2) ? n.input(2) : kNoValue;
  const Shape xs = e.shape(x), ws = e.shape(w);
  const Window win = read_window(n, xs, conv_kernel(n, xs, ws));
  const int64_t group = n.attr_int("group", 1);
  if (group < 1) n.invalid("group must be >= 1");
  IntList padding = win.pad_begin;
  if (!win.symmetric()) {
    x = pad_spatial(e, x, win.pad_begin, win.pad_end, 0.0);
    padding.assign(padding.size(), 0);
  }
  ValueId y = e.op(Op::Conv, {x, w},
                   {{"stride", win.stride}, {"padding", padding}, {"dilation", win.dilation}, {"groups", group}});
  if (bias != kNoValue) y = add_channel_bias(e, y, bias);
  n.set_output(0, y);
}

void conv_transpose(NodeContext& n) {
  n.expect_attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                  "output_shape", "pads", "strides"});
  Emitter& e = n.e();
  ValueId x = n.input(0), w = n.input(1);
  const ValueId bias = n.has_input(2) ? n.input(2) : kNoValue;
  const Shape xs = e.shape(x), ws = e.shape(w);
  std::vector<int64_t> kernel = conv_kernel(n, xs, ws);
  const size_t k = kernel.size();
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  const bool output_shape = n.has_attr("output_shape");
  // The window of the forward convolution whose input gradient this is. Given the
  // output's shape (or SAME: in·stride), the pads are what makes it that long.
  Window win = same || output_shape ? Window{kernel, axis_attr(n, "strides", 1, k, 1),
                                             axis_attr(n, "dilations", 1, k, 1), {}, {}}
                                    : read_window(n, xs, kernel);
  const std::vector<int64_t> output_padding = axis_attr(n, "output_padding", 0, k, 0);
  const int64_t group = n.attr_int("group", 1);
  if (group < 1 || xs[1] != ws[0] || ws[0] % group != 0) {
    n.invalid("the weight " + ws.to_string() + " must be [C_in, C_out/group, *kernel] for the input " +
              xs.to_string() + " and group " + std::to_string(group));
  }
  if (same || output_shape) {
    std::vector<int64_t> out = n.attr_ints("output_shape");
    if (out.size() == k + 2) out.erase(out.begin(), out.begin() + 2);  // [N, C, *spatial]
    if (!output_shape) {
      out.clear();
      for (size_t a = 0; a < k; ++a) out.push_back(xs[static_cast<int>(a) + 2] * win.stride[a]);
    }
    if (out.size() != k) n.invalid("output_shape needs one entry per spatial dim");
    win.pad_begin.resize(k);
    win.pad_end.resize(k);
    for (size_t a = 0; a < k; ++a) {
      const int64_t total = win.stride[a] * (xs[static_cast<int>(a) + 2] - 1) + output_padding[a] +
                            win.span(a) - out[a];
      // A negative total (a longer output) extends the end, as ONNX's reference does.
      win.pad_begin[a] = padding_before(total, /*extra_at_end=*/auto_pad == "SAME_UPPER");
      win.pad_end[a] = total - win.pad_begin[a];
    }
  }
  for (size_t a = 0; a < k; ++a) {
    const int64_t size = (xs[static_cast<int>(a) + 2] - 1) * win.stride[a] + win.span(a) -
                         win.pad_begin[a] - win.pad_end[a] + output_padding[a];
    if (size < 1) n.invalid("the output would be empty on spatial axis " + std::to_string(a));
  }
  ValueId y = functional::conv_transpose(e, x, w,
                                         {.stride = win.stride,
                                          .dilation = win.dilation,
                                          .pad_begin = win.pad_begin,
                                          .pad_end = win.pad_end,
                                          .output_padding = output_padding,
                                          .groups = group});
  if (bias != kNoValue) y = add_channel_bias(e, y, bias);
  n.set_output(0, y);
}

const OpConverter kOps[] = {
    {"Conv", 1, conv},
    {"ConvTranspose", 1, conv_transpose},
};

}  // namespace nn
}  // namespace

std::span<const OpConverter> nn_converters() { return nn::kOps; }

}  // namespace weft::onnx_io

// Pooling: MaxPool and AveragePool over 1 to 3 spatial dims through functional::pool (the
// 2-D pool ops; 1-D on a unit height, 3-D separably), GlobalAveragePool and GlobalMaxPool
// as reductions. What the pool ops' symmetric, at-most-half-kernel padding cannot say
// (asymmetric pads, ceil_mode's extra windows, count_include_pad = 0) is written with
// explicit pads: -inf for max; for average, the window sum of x padded with zeros
// divided by the window sum of a ones tensor padded as the divisor counts. A dilated
// max pool is the maximum of one strided slice per kernel position.
#include <cmath>
#include <limits>

#include "frontend/functional.h"
#include "interop/onnx/convert.h"
#include "interop/onnx/ops/window.h"

namespace weft::onnx_io {
namespace {
namespace pool {  // this file's names, apart in the importer's unity units

/// A max pool with dilations over x padded already: the elementwise maximum of one
/// strided slice of `xp` per kernel position (the pool ops have no dilation).
ValueId dilated_max_pool(Emitter& e, ValueId xp, const Window& w) {
  const Shape s = e.shape(xp);
  const size_t k = w.kernel.size();
  std::vector<int64_t> at(k, 0);  // the kernel position
  ValueId y = kNoValue;
  for (;;) {
    IntList start = {0, 0}, stop = {s[0], s[1]}, step = {1, 1};
    for (size_t a = 0; a < k; ++a) {
      const int64_t out = (s[static_cast<int>(a) + 2] - w.span(a)) / w.stride[a] + 1;
      start.push_back(at[a] * w.dilation[a]);
      stop.push_back(at[a] * w.dilation[a] + (out - 1) * w.stride[a] + 1);
      step.push_back(w.stride[a]);
    }
    ValueId slice = e.op(Op::Slice, {xp}, {{"start", start}, {"stop", stop}, {"step", step}});
    y = y == kNoValue ? slice : e.op(Op::Maximum, {y, slice});
    size_t a = k;  // the next position, the last axis fastest
    while (a > 0 && ++at[a - 1] == w.kernel[a - 1]) at[--a] = 0;
    if (a == 0) return y;
  }
}

void pool(NodeContext& n, bool max) {
  if (max) {
    n.expect_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  } else {
    n.expect_attrs({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  }
  Emitter& e = n.e();
  ValueId x = n.input(0);
  const Shape xs = e.shape(x);
  if (xs.rank() < 3 || xs.rank() > 5) {
    n.unsupported("an input of rank " + std::to_string(xs.rank()) + " (weft pools over 1 to 3 spatial dims)");
  }
  if (!n.has_attr("kernel_shape")) n.invalid("kernel_shape is required");
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (static_cast<int>(kernel.size()) != xs.rank() - 2) {
    n.invalid("kernel_shape " + Shape(kernel).to_string() + " needs one entry per spatial dim of " +
              e.type(x).to_string());
  }
  const Window w = read_window(n, xs, kernel);
  // storage_order only changes the Indices output, which weft does not compute: a model
  // that reads it is refused there (the importer's not-computed outputs), one that only
  // names it imports.
  const bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;

  // ceil_mode's extra padding at the end: a last window that starts inside the input
  // or its begin padding (PyTorch's rule) is kept, however little of it is covered.
  const size_t k = kernel.size();
  std::vector<int64_t> extra(k, 0), none(k, 0);
  bool direct = w.symmetric(), padded = false, dilated = false;
  for (size_t a = 0; a < k; ++a) {
    const int64_t in = xs[static_cast<int>(a) + 2];
    const int64_t padded_size = in + w.pad_begin[a] + w.pad_end[a];
    if (padded_size < w.span(a)) {
      n.invalid("the window " + Shape(kernel).to_string() + " is larger than the padded input " +
                e.type(x).to_string());
    }
    if (ceil_mode) {
      int64_t out = (padded_size - w.span(a) + w.stride[a] - 1) / w.stride[a] + 1;
      if ((out - 1) * w.stride[a] >= in + w.pad_begin[a]) --out;
      extra[a] = std::max<int64_t>(0, (out - 1) * w.stride[a] + w.span(a) - padded_size);
    }
    direct = direct && extra[a] == 0 && 2 * w.pad_begin[a] <= kernel[a];
    padded = padded || w.pad_begin[a] > 0 || w.pad_end[a] > 0;
    dilated = dilated || w.dilation[a] != 1;
  }
  auto window = [&](ValueId v, const std::vector<int64_t>& padding) {
    return functional::pool(e, v, {.max = max, .kernel = kernel, .stride = w.stride, .padding = padding});
  };
  std::vector<int64_t> end = w.pad_end;
  for (size_t a = 0; a < k; ++a) end[a] += extra[a];
  const bool exact_divisor = include_pad || !padded;
  const double lowest = -std::numeric_limits<double>::infinity();
  if (dilated) {  // MaxPool only: AveragePool has no dilations before opset 19
    n.set_output(0, dilated_max_pool(e, pad_spatial(e, x, w.pad_begin, end, lowest), w));
  } else if (direct && (max || exact_divisor)) {
    n.set_output(0, window(x, w.pad_begin));
  } else if (max) {
    n.set_output(0, window(pad_spatial(e, x, w.pad_begin, end, lowest), none));
  } else if (exact_divisor && extra == none) {
    n.set_output(0, window(pad_spatial(e, x, w.pad_begin, end, 0.0), none));
  } else {
    // The divisor counts the input, the pads too under count_include_pad, never
    // ceil_mode's extra positions.
    ValueId sum = window(pad_spatial(e, x, w.pad_begin, end, 0.0), none);
    ValueId ones = pad_spatial(e, e.full(xs, 1.0, e.type(x).dtype), w.pad_begin, w.pad_end,
                               include_pad ? 1.0 : 0.0);
    ValueId count = window(pad_spatial(e, ones, none, extra, 0.0), none);
    n.set_output(0, e.div(sum, count));
  }
}

void max_pool(NodeContext& n) { pool(n, /*max=*/true); }
void average_pool(NodeContext& n) { pool(n, /*max=*/false); }

IntList spatial_axes(NodeContext& n, ValueId x) {
  const int rank = n.e().rank(x);
  if (rank < 3) n.invalid("the input must be [N, C, *spatial], got " + n.e().type(x).to_string());
  IntList axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

void global_average_pool(NodeContext& n) {
  n.expect_attrs({});
  ValueId x = n.input(0);
  n.set_output(0, n.e().mean(x, spatial_axes(n, x), /*keepdims=*/true));
}

void global_max_pool(NodeContext& n) {
  n.expect_attrs({});
  ValueId x = n.input(0);
  n.set_output(0, n.e().op(Op::Max, {x}, {{"axes", spatial_axes(n, x)}, {"keepdims", true}}));
}

void lp_pool(NodeContext& n) { n.unsupported("Lp pooling (weft has no p-norm pool op)"); }

const OpConverter kOps[] = {
    {"MaxPool", 1, max_pool},
    {"AveragePool", 1, average_pool},
    {"GlobalAveragePool", 1, global_average_pool},
    {"GlobalMaxPool", 1, global_max_pool},
    {"LpPool", 1, lp_pool},
    {"GlobalLpPool", 1, lp_pool},
};

}  // namespace pool
}  // namespace

std::span<const OpConverter> pool_converters() { return pool::kOps; }

}  // namespace weft::onnx_io

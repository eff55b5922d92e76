// Conv1d/2d/3d and ConvTranspose1d/2d/3d: NCL, NCHW or NCDHW input, square (cubic)
// kernels, PyTorch weight layouts. Each emits the one `conv` op of ir/ops.def, which takes
// any of the three ranks.
//
// A transposed convolution is the gradient of a convolution with respect to its input,
// so ConvTranspose emits `conv_backward_input` (functional::conv_transpose). PyTorch's transposed weight
// [in, out/groups, *kernel] is already the weight of the forward convolution that maps
// `out` channels to `in` (group g of that convolution reads input channels
// g·out/groups... and writes output channels g·in/groups...), so it is used as is.
#include <cmath>

#include "frontend/functional.h"
#include "frontend/modules.h"

namespace weft {
namespace {

std::string conv_description(const char* name, int64_t in, int64_t out, const ConvOptions& o) {
  std::string s = std::string(name) + "(" + std::to_string(in) + "->" + std::to_string(out) +
                  ", k" + std::to_string(o.kernel) + ", s" + std::to_string(o.stride) + ", p" +
                  std::to_string(o.padding);
  if (o.output_padding != 0) s += ", op" + std::to_string(o.output_padding);
  if (o.dilation != 1) s += ", d" + std::to_string(o.dilation);
  if (o.groups != 1) s += ", g" + std::to_string(o.groups);
  if (!o.bias) s += ", no bias";
  return s + ")";
}

class ConvModule : public UnaryModule {
 public:
  ConvModule(int spatial, int64_t in, int64_t out, ConvOptions options, bool transposed)
      : spatial_(spatial), in_(in), out_(out), o_(options), transposed_(transposed) {}

  std::string describe() const override {
    const std::string name = std::string(transposed_ ? "ConvTranspose" : "Conv") +
                             std::to_string(spatial_) + "d";
    return conv_description(name.c_str(), in_, out_, o_);
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    check_options(e);
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (t.shape.rank() != spatial_ + 2 || t.shape[1] != in_) {
      static const char* const kLayouts[][2] = {
          {"NCL input [N,", ",L]"}, {"NCHW input [N,", ",H,W]"}, {"NCDHW input [N,", ",D,H,W]"}};
      e.fail(describe() + " expects an " + kLayouts[spatial_ - 1][0] + std::to_string(in_) +
             kLayouts[spatial_ - 1][1] + ", got " + t.to_string());
    }
    // The output's spatial sizes, the same rule on every axis (square kernels).
    const int64_t span = o_.dilation * (o_.kernel - 1) + 1;  // The dilated kernel's extent.
    std::string out_text;
    bool empty = false;
    for (int a = 0; a < spatial_; ++a) {
      const int64_t in = t.shape[2 + a];
      const int64_t size =
          transposed_ ? (in - 1) * o_.stride - 2 * o_.padding + span + o_.output_padding
          : in + 2 * o_.padding < span ? 0
                                       : (in + 2 * o_.padding - span) / o_.stride + 1;
      out_text += (a ? "x" : "") + std::to_string(size);
      empty = empty || size < 1;
    }
    if (empty) {
      e.fail(describe() + ": the input " + t.to_string() + " is too small for a kernel of extent " +
             std::to_string(span) + " (output would be " + out_text + ")");
    }

    // PyTorch's layouts: weight [out, in/groups, *kernel], transposed [in, out/groups,
    // *kernel]; kaiming_uniform(a=sqrt(5)), bias U(±1/sqrt(fan_in)) where fan_in is the
    // weight's dim 1 times the kernel volume (compute_fans does the same).
    IntList wshape = transposed_ ? IntList{in_, out_ / o_.groups} : IntList{out_, in_ / o_.groups};
    int64_t fan_in = wshape[1];
    for (int a = 0; a < spatial_; ++a) {
      wshape.push_back(o_.kernel);
      fan_in *= o_.kernel;
    }
    ValueId weight = e.param("weight", wshape, Initializer::kaiming_uniform(std::sqrt(5.0)), t.dtype);
    auto each = [&](int64_t v) { return IntList(spatial_, v); };
    ValueId y = transposed_
                    ? functional::conv_transpose(e, x, weight,
                                                 {.stride = each(o_.stride),
                                                  .dilation = each(o_.dilation),
                                                  .pad_begin = each(o_.padding),
                                                  .pad_end = each(o_.padding),
                                                  .output_padding = each(o_.output_padding),
                                                  .groups = o_.groups})
                    : e.op(Op::Conv, {x, weight},
                           {{"stride", each(o_.stride)},
                            {"padding", each(o_.padding)},
                            {"dilation", each(o_.dilation)},
                            {"groups", o_.groups}});
    if (!o_.bias) return y;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    ValueId b = e.param("bias", {out_}, Initializer::uniform(-bound, bound), t.dtype);
    IntList channel_shape(static_cast<size_t>(spatial_ + 2), 1);
    channel_shape[1] = out_;
    return e.add(y, e.reshape(b, channel_shape));
  }

 private:
  void check_options(Emitter& e) const {
    if (in_ < 1 || out_ < 1 || o_.kernel < 1 || o_.stride < 1 || o_.dilation < 1 ||
        o_.padding < 0 || o_.groups < 1 || o_.output_padding < 0) {
      e.fail(describe() + ": channels, kernel, stride, dilation and groups must be >= 1 and "
             "padding, output_padding >= 0");
    }
    if (in_ % o_.groups != 0 || out_ % o_.groups != 0) {
      e.fail(describe() + ": groups=" + std::to_string(o_.groups) + " must divide both " +
             std::to_string(in_) + " input and " + std::to_string(out_) + " output channels");
    }
    if (!transposed_ && o_.output_padding != 0) {
      e.fail(describe() + ": output_padding applies to transposed convolutions only");
    }
    // PyTorch allows output_padding < max(stride, dilation); weft's transposed conv is
    // the exact gradient of a forward conv, which pins it below the stride.
    if (transposed_ && o_.output_padding >= o_.stride) {
      e.fail(describe() + ": output_padding=" + std::to_string(o_.output_padding) +
             " must be smaller than stride=" + std::to_string(o_.stride));
    }
  }

  int spatial_;
  int64_t in_, out_;
  ConvOptions o_;
  bool transposed_;
};

}  // namespace

ModulePtr Conv1d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(1, in_channels, out_channels, options, /*transposed=*/false);
}

ModulePtr Conv2d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(2, in_channels, out_channels, options, /*transposed=*/false);
}

ModulePtr Conv3d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(3, in_channels, out_channels, options, /*transposed=*/false);
}

ModulePtr ConvTranspose1d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(1, in_channels, out_channels, options, /*transposed=*/true);
}

ModulePtr ConvTranspose2d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(2, in_channels, out_channels, options, /*transposed=*/true);
}

ModulePtr ConvTranspose3d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(3, in_channels, out_channels, options, /*transposed=*/true);
}

}  // namespace weft

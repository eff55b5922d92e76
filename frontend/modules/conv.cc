// Conv2d and ConvTranspose2d: NCHW input, square kernels, PyTorch weight layouts.
//
// A transposed convolution is the gradient of a convolution with respect to its input,
// so ConvTranspose2d emits `conv2d_backward_input`. PyTorch's transposed weight
// [in, out/groups, kh, kw] is already the OIHW weight of the forward convolution that
// maps `out` channels to `in` (group g of that convolution reads input channels
// g·out/groups... and writes output channels g·in/groups...), so it is used as is.
#include <cmath>

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
  ConvModule(int64_t in, int64_t out, ConvOptions options, bool transposed)
      : in_(in), out_(out), o_(options), transposed_(transposed) {}

  std::string describe() const override {
    return conv_description(transposed_ ? "ConvTranspose2d" : "Conv2d", in_, out_, o_);
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    check_options(e);
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (t.shape.rank() != 4 || t.shape[1] != in_) {
      e.fail(describe() + " expects an NCHW input [N," + std::to_string(in_) + ",H,W], got " +
             t.to_string());
    }
    const int64_t h = t.shape[2], w = t.shape[3];
    const int64_t span = o_.dilation * (o_.kernel - 1) + 1;  // The dilated kernel's extent.
    int64_t oh, ow;
    if (transposed_) {
      oh = (h - 1) * o_.stride - 2 * o_.padding + span + o_.output_padding;
      ow = (w - 1) * o_.stride - 2 * o_.padding + span + o_.output_padding;
    } else {
      oh = (h + 2 * o_.padding - span) / o_.stride + 1;
      ow = (w + 2 * o_.padding - span) / o_.stride + 1;
      if (h + 2 * o_.padding < span || w + 2 * o_.padding < span) oh = ow = 0;
    }
    if (oh < 1 || ow < 1) {
      e.fail(describe() + ": the input " + t.to_string() + " is too small for a kernel of extent " +
             std::to_string(span) + " (output would be " + std::to_string(oh) + "x" +
             std::to_string(ow) + ")");
    }

    // PyTorch: weight kaiming_uniform(a=sqrt(5)), bias U(±1/sqrt(fan_in)), where fan_in
    // is the weight's dim 1 times the kernel area (compute_fans does the same).
    const int64_t k = o_.kernel;
    Shape wshape = transposed_ ? Shape{in_, out_ / o_.groups, k, k} : Shape{out_, in_ / o_.groups, k, k};
    ValueId weight = e.param("weight", wshape, Initializer::kaiming_uniform(std::sqrt(5.0)), t.dtype);
    Attrs attrs = {{"stride", IntList{o_.stride, o_.stride}},
                   {"padding", IntList{o_.padding, o_.padding}},
                   {"dilation", IntList{o_.dilation, o_.dilation}},
                   {"groups", o_.groups}};
    ValueId y;
    if (transposed_) {
      attrs["input_shape"] = IntList{t.shape[0], out_, oh, ow};
      y = e.op(Op::Conv2dBackwardInput, {x, weight}, attrs);
    } else {
      y = e.op(Op::Conv2d, {x, weight}, attrs);
    }
    if (!o_.bias) return y;
    const double bound = 1.0 / std::sqrt(static_cast<double>(wshape[1] * k * k));
    ValueId b = e.param("bias", {out_}, Initializer::uniform(-bound, bound), t.dtype);
    return e.add(y, e.reshape(b, {1, out_, 1, 1}));
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
      e.fail(describe() + ": output_padding applies to ConvTranspose2d only");
    }
    // PyTorch allows output_padding < max(stride, dilation); weft's transposed conv is
    // the exact gradient of a forward conv, which pins it below the stride.
    if (transposed_ && o_.output_padding >= o_.stride) {
      e.fail(describe() + ": output_padding=" + std::to_string(o_.output_padding) +
             " must be smaller than stride=" + std::to_string(o_.stride));
    }
  }

  int64_t in_, out_;
  ConvOptions o_;
  bool transposed_;
};

}  // namespace

ModulePtr Conv2d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(in_channels, out_channels, options, /*transposed=*/false);
}

ModulePtr ConvTranspose2d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(in_channels, out_channels, options, /*transposed=*/true);
}

}  // namespace weft

// Conv1d/2d and ConvTranspose1d/2d: NCL or NCHW input, square kernels, PyTorch weight
// layouts.
//
// A 1-D convolution is the 2-D one on a unit height: [N, C, L] is read as [N, C, 1, L],
// the weight [out, in/groups, k] as [out, in/groups, 1, k], with stride, padding and
// dilation 1, 0, 1 along the height; the result [N, out, 1, L'] is read back as
// [N, out, L']. The reshapes are free, so Conv1d runs on oneDNN and cuDNN unchanged.
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
      e.fail(describe() + (spatial_ == 1 ? " expects an NCL input [N," : " expects an NCHW input [N,") +
             std::to_string(in_) + (spatial_ == 1 ? ",L], got " : ",H,W], got ") + t.to_string());
    }
    // A 1-D input is a 2-D one of height 1, where the kernel has height 1 too.
    const int64_t h = spatial_ == 1 ? 1 : t.shape[2], w = t.shape[spatial_ + 1];
    const int64_t kh = spatial_ == 1 ? 1 : o_.kernel, k = o_.kernel;
    const int64_t sh = spatial_ == 1 ? 1 : o_.stride, ph = spatial_ == 1 ? 0 : o_.padding;
    const int64_t dh = spatial_ == 1 ? 1 : o_.dilation, oph = spatial_ == 1 ? 0 : o_.output_padding;
    const int64_t span = o_.dilation * (o_.kernel - 1) + 1;  // The dilated kernel's extent.
    const int64_t span_h = dh * (kh - 1) + 1;
    int64_t oh, ow;
    if (transposed_) {
      oh = (h - 1) * sh - 2 * ph + span_h + oph;
      ow = (w - 1) * o_.stride - 2 * o_.padding + span + o_.output_padding;
    } else {
      oh = (h + 2 * ph - span_h) / sh + 1;
      ow = (w + 2 * o_.padding - span) / o_.stride + 1;
      if (h + 2 * ph < span_h || w + 2 * o_.padding < span) oh = ow = 0;
    }
    if (oh < 1 || ow < 1) {
      e.fail(describe() + ": the input " + t.to_string() + " is too small for a kernel of extent " +
             std::to_string(span) + " (output would be " +
             (spatial_ == 1 ? std::to_string(ow) : std::to_string(oh) + "x" + std::to_string(ow)) + ")");
    }

    // PyTorch: weight kaiming_uniform(a=sqrt(5)), bias U(±1/sqrt(fan_in)), where fan_in
    // is the weight's dim 1 times the kernel area (compute_fans does the same).
    const IntList w4 = transposed_ ? IntList{in_, out_ / o_.groups, kh, k}
                                   : IntList{out_, in_ / o_.groups, kh, k};
    IntList wshape = w4;
    if (spatial_ == 1) wshape.erase(wshape.begin() + 2);  // PyTorch's [out, in/groups, k].
    ValueId weight = e.param("weight", wshape, Initializer::kaiming_uniform(std::sqrt(5.0)), t.dtype);
    Attrs attrs = {{"stride", IntList{sh, o_.stride}},
                   {"padding", IntList{ph, o_.padding}},
                   {"dilation", IntList{dh, o_.dilation}},
                   {"groups", o_.groups}};
    const int64_t n = t.shape[0];
    ValueId x4 = spatial_ == 1 ? e.reshape(x, {n, in_, 1, w}) : x;
    ValueId w4v = spatial_ == 1 ? e.reshape(weight, w4) : weight;
    ValueId y;
    if (transposed_) {
      attrs["input_shape"] = IntList{n, out_, oh, ow};
      y = e.op(Op::Conv2dBackwardInput, {x4, w4v}, attrs);
    } else {
      y = e.op(Op::Conv2d, {x4, w4v}, attrs);
    }
    IntList channel_shape = {1, out_, 1, 1};
    if (spatial_ == 1) {
      y = e.reshape(y, {n, out_, ow});
      channel_shape.pop_back();
    }
    if (!o_.bias) return y;
    const double bound = 1.0 / std::sqrt(static_cast<double>(w4[1] * kh * k));
    ValueId b = e.param("bias", {out_}, Initializer::uniform(-bound, bound), t.dtype);
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

ModulePtr ConvTranspose1d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(1, in_channels, out_channels, options, /*transposed=*/true);
}

ModulePtr ConvTranspose2d(int64_t in_channels, int64_t out_channels, ConvOptions options) {
  return std::make_shared<ConvModule>(2, in_channels, out_channels, options, /*transposed=*/true);
}

}  // namespace weft

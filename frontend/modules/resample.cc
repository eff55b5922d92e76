// PixelShuffle / PixelUnshuffle, Upsample and Unfold / Fold, all written with existing
// primitives so autodiff and every backend need nothing new:
//   - pixel (un)shuffle is a reshape, a transpose and a reshape;
//   - nearest upsampling by an integer factor broadcasts each value over a new axis;
//   - bilinear upsampling is two matrix products with interpolation matrices (a "tent"
//     max(0, 1 - |src(o) - i|) built from iota), one per spatial axis;
//   - Unfold (im2col) is a grouped conv with a one-hot weight (output channel
//     c·kh·kw + j reads kernel position j of channel c), and Fold (col2im) is the same
//     convolution's gradient w.r.t. its input, conv_backward_input, which sums the
//     overlapping patches as PyTorch does.
#include "frontend/modules.h"

namespace weft {
namespace {

std::string spatial_dims_error(const std::string& who, int spatial, const Type& t) {
  return who + " expects an input [N,C," + std::to_string(spatial) + " spatial dims], got " +
         t.to_string();
}

/// [N, C·r², H, W] <-> [N, C, H·r, W·r] (unshuffle the other way).
class PixelShuffleModule : public UnaryModule {
 public:
  PixelShuffleModule(int64_t factor, bool inverse) : r_(factor), inverse_(inverse) {}

  std::string describe() const override {
    return std::string(inverse_ ? "PixelUnshuffle(" : "PixelShuffle(") + std::to_string(r_) + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (r_ < 1) e.fail(describe() + ": the factor must be >= 1");
    if (t.shape.rank() != 4) e.fail(spatial_dims_error(describe(), 2, t));
    const int64_t n = t.shape[0], c = t.shape[1], h = t.shape[2], w = t.shape[3];
    if (!inverse_) {
      if (c % (r_ * r_) != 0) {
        e.fail(describe() + " needs the channels of " + t.to_string() + " to divide by " +
               std::to_string(r_ * r_));
      }
      ValueId s = e.reshape(x, {n, c / (r_ * r_), r_, r_, h, w});
      s = e.transpose(s, {0, 1, 4, 2, 5, 3});
      return e.reshape(s, {n, c / (r_ * r_), h * r_, w * r_});
    }
    if (h % r_ != 0 || w % r_ != 0) {
      e.fail(describe() + " needs the height and width of " + t.to_string() + " to divide by " +
             std::to_string(r_));
    }
    ValueId s = e.reshape(x, {n, c, h / r_, r_, w / r_, r_});
    s = e.transpose(s, {0, 1, 3, 5, 2, 4});
    return e.reshape(s, {n, c * r_ * r_, h / r_, w / r_});
  }

 private:
  int64_t r_;
  bool inverse_;
};

class UpsampleModule : public UnaryModule {
 public:
  explicit UpsampleModule(UpsampleOptions o) : o_(o) {}

  std::string describe() const override {
    std::string s = "Upsample(x" + std::to_string(o_.scale_factor) +
                    (o_.mode == UpsampleMode::nearest ? ", nearest" : ", bilinear");
    if (o_.align_corners) s += ", align_corners";
    return s + ")";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (o_.scale_factor < 1) e.fail(describe() + ": the scale factor must be >= 1");
    if (o_.align_corners && o_.mode == UpsampleMode::nearest) {
      e.fail(describe() + ": align_corners applies to bilinear upsampling only");
    }
    if (o_.mode == UpsampleMode::bilinear) {
      if (t.shape.rank() != 4) e.fail(spatial_dims_error(describe(), 2, t));
      return bilinear(e, x, t);
    }
    if (t.shape.rank() < 3 || t.shape.rank() > 5) {
      e.fail(describe() + " expects an input [N,C,1 to 3 spatial dims], got " + t.to_string());
    }
    // [N, C, d1, ...] -> [N, C, d1, 1, d2, 1, ...] -> broadcast s on the new axes -> merge.
    IntList expanded = {t.shape[0], t.shape[1]}, repeated = expanded, out = expanded;
    for (int i = 2; i < t.shape.rank(); ++i) {
      expanded.insert(expanded.end(), {t.shape[i], 1});
      repeated.insert(repeated.end(), {t.shape[i], o_.scale_factor});
      out.push_back(t.shape[i] * o_.scale_factor);
    }
    ValueId b = e.op(Op::BroadcastTo, {e.reshape(x, expanded)}, {{"shape", repeated}});
    return e.reshape(b, out);
  }

 private:
  /// The [out, in] matrix that interpolates linearly along one axis of size `in`.
  ValueId interpolation(Emitter& e, int64_t in, DType dtype) const {
    const int64_t out = in * o_.scale_factor;
    auto iota = [&](int64_t axis) {
      return e.op(Op::Iota, {}, {{"shape", IntList{out, in}}, {"axis", axis}, {"dtype", dtype}});
    };
    ValueId dst = iota(0), src;
    if (o_.align_corners) {
      const double scale = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0;
      src = e.mul(dst, e.constant(scale, dtype));
    } else {
      // PyTorch: src = (dst + 0.5) / s - 0.5, clamped below at 0 (and, as the upper
      // neighbour clamps to in - 1, at in - 1 above).
      src = e.sub(e.mul(e.add(dst, e.constant(0.5, dtype)), e.constant(1.0 / o_.scale_factor, dtype)),
                  e.constant(0.5, dtype));
      src = e.op(Op::Maximum, {src, e.constant(0, dtype)});
      src = e.op(Op::Minimum, {src, e.constant(static_cast<double>(in - 1), dtype)});
    }
    ValueId distance = e.op(Op::Abs, {e.sub(src, iota(1))});
    return e.op(Op::Relu, {e.sub(e.constant(1, dtype), distance)});
  }

  ValueId bilinear(Emitter& e, ValueId x, const Type& t) const {
    ValueId mh = interpolation(e, t.shape[2], t.dtype), mw = interpolation(e, t.shape[3], t.dtype);
    ValueId y = e.op(Op::Matmul, {x, mw}, {{"transpose_b", true}});  // [N, C, H, OW]
    return e.matmul(mh, y);                                            // [N, C, OH, OW]
  }

  UpsampleOptions o_;
};

/// The one-hot weight [C·kh·kw, 1, kh, kw] of the grouped convolution that copies each
/// kernel position of each channel to its own output channel.
ValueId patch_weight(Emitter& e, int64_t channels, int64_t k, DType dtype) {
  ValueId positions = e.op(Op::Iota, {}, {{"shape", IntList{k * k}}, {"axis", int64_t{0}}});
  ValueId eye = e.op(Op::OneHot, {positions}, {{"depth", k * k}, {"dtype", dtype}});
  ValueId all = e.op(Op::BroadcastTo, {eye}, {{"shape", IntList{channels, k * k, k * k}}});
  return e.reshape(all, {channels * k * k, 1, k, k});
}

/// `head` then the options: "Unfold(k2, s1, p0, d1)".
std::string unfold_description(const std::string& head, const UnfoldOptions& o) {
  return head + "k" + std::to_string(o.kernel) + ", s" + std::to_string(o.stride) +
         ", p" + std::to_string(o.padding) + ", d" + std::to_string(o.dilation) + ")";
}

Attrs patch_conv_attrs(const UnfoldOptions& o, int64_t channels) {
  return {{"stride", IntList{o.stride, o.stride}},
          {"padding", IntList{o.padding, o.padding}},
          {"dilation", IntList{o.dilation, o.dilation}},
          {"groups", channels}};
}

/// The number of patch positions along an axis of `size`, or <= 0 when none fits.
int64_t patch_count(int64_t size, const UnfoldOptions& o) {
  const int64_t span = o.dilation * (o.kernel - 1) + 1;
  if (size + 2 * o.padding < span) return 0;
  return (size + 2 * o.padding - span) / o.stride + 1;
}

bool valid(const UnfoldOptions& o) {
  return o.kernel >= 1 && o.stride >= 1 && o.dilation >= 1 && o.padding >= 0;
}

/// [N, C, H, W] -> [N, C·k·k, L]: every k x k patch as a column.
class UnfoldModule : public UnaryModule {
 public:
  explicit UnfoldModule(UnfoldOptions o) : o_(o) {}

  std::string describe() const override { return unfold_description("Unfold(", o_); }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (!valid(o_)) e.fail(describe() + ": kernel, stride and dilation must be >= 1, padding >= 0");
    if (t.shape.rank() != 4) e.fail(spatial_dims_error(describe(), 2, t));
    const int64_t oh = patch_count(t.shape[2], o_), ow = patch_count(t.shape[3], o_);
    if (oh < 1 || ow < 1) {
      e.fail(describe() + ": no patch fits in the padded input " + t.to_string());
    }
    const int64_t c = t.shape[1], kk = o_.kernel * o_.kernel;
    ValueId cols = e.op(Op::Conv, {x, patch_weight(e, c, o_.kernel, t.dtype)}, patch_conv_attrs(o_, c));
    return e.reshape(cols, {t.shape[0], c * kk, oh * ow});
  }

 private:
  UnfoldOptions o_;
};

/// [N, C·k·k, L] -> [N, C, H, W]: the adjoint of Unfold, overlapping values summed.
class FoldModule : public UnaryModule {
 public:
  FoldModule(int64_t height, int64_t width, UnfoldOptions o) : h_(height), w_(width), o_(o) {}

  std::string describe() const override {
    return unfold_description("Fold(" + std::to_string(h_) + "x" + std::to_string(w_) + ", ", o_);
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);  // A copy: emitting ops may move the graph's types.
    if (!valid(o_) || h_ < 1 || w_ < 1) {
      e.fail(describe() + ": the output size, kernel, stride and dilation must be >= 1, padding >= 0");
    }
    const int64_t kk = o_.kernel * o_.kernel, oh = patch_count(h_, o_), ow = patch_count(w_, o_);
    if (t.shape.rank() != 3 || t.shape[1] % kk != 0 || t.shape[2] != oh * ow || oh < 1 || ow < 1) {
      e.fail(describe() + " expects an input [N, C·" + std::to_string(kk) + ", " +
             std::to_string(oh * ow) + "] (" + std::to_string(oh) + "x" + std::to_string(ow) +
             " patches), got " + t.to_string());
    }
    const int64_t n = t.shape[0], c = t.shape[1] / kk;
    Attrs attrs = patch_conv_attrs(o_, c);
    attrs["input_shape"] = IntList{n, c, h_, w_};
    return e.op(Op::ConvBackwardInput,
                {e.reshape(x, {n, c * kk, oh, ow}), patch_weight(e, c, o_.kernel, t.dtype)}, attrs);
  }

 private:
  int64_t h_, w_;
  UnfoldOptions o_;
};

}  // namespace

ModulePtr PixelShuffle(int64_t upscale_factor) {
  return std::make_shared<PixelShuffleModule>(upscale_factor, /*inverse=*/false);
}

ModulePtr PixelUnshuffle(int64_t downscale_factor) {
  return std::make_shared<PixelShuffleModule>(downscale_factor, /*inverse=*/true);
}

ModulePtr Upsample(UpsampleOptions options) { return std::make_shared<UpsampleModule>(options); }

ModulePtr Unfold(UnfoldOptions options) { return std::make_shared<UnfoldModule>(options); }

ModulePtr Fold(int64_t height, int64_t width, UnfoldOptions options) {
  return std::make_shared<FoldModule>(height, width, options);
}

}  // namespace weft

// Convolution kernels: conv2d and its two gradients. f32 with at least 16 channels per
// group (for the weight gradient: 16 output and 3 input channels) goes to oneDNN's
// convolution primitives (conv_onednn.cc) when they accept the convolution; f64, and the other f32 convolutions, go through im2col and the GEMM core here (gemm_serial: oneDNN's sgemm on one
// thread for f32, a loop for f64).
//
// The batch is cut into `parts` contiguous runs of images, one per pool chunk; each
// part has its own im2col columns in the kernel's scratch (BoundKernel::scratch_bytes:
// the Executor's one block shared by every kernel), for as many parts as
// default_num_threads() (a larger pool still uses that many parts). For
// conv2d_backward_weight each part sums its images' gradients into its own buffer (part
// 0 straight into the result) and the parts are then added in index order, so the result
// is bitwise reproducible for a given part count. A 1x1 convolution with stride 1 and no
// padding skips im2col: the image is its own column matrix.

#include <cstring>

#include "runtime/cpu/contraction_internal.h"

namespace weft::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Calls f(ki, kj, c, y, iy, x_lo, x_hi, ix0) for every output row y of every kernel tap of
// channel c in group `grp`: output pixels x in [x_lo, x_hi) read input column
// ix0 + x * sw of input row iy (iy < 0 when the row is padding).
template <typename F>
void for_taps(const ConvGeometry& g, F&& f) {
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t ix0 = kj * g.dw - g.pw;
        const int64_t x_lo = std::min(g.ow, std::max<int64_t>(0, ceil_div(-ix0, g.sw)));
        const int64_t x_hi = std::max(x_lo, std::min(g.ow, ceil_div(g.w - ix0, g.sw)));
        const int64_t row = (c * g.kh + ki) * g.kw + kj;
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + ki * g.dh;
          f(row, c, y, iy >= 0 && iy < g.h ? iy : -1, x_lo, x_hi, ix0);
        }
      }
    }
  }
}

// col[patch, pixels] for one image's channel group (`img` points at the group's planes).
template <typename T>
void im2col(const ConvGeometry& g, const T* img, T* col) {
  for_taps(g, [&](int64_t row, int64_t c, int64_t y, int64_t iy, int64_t x_lo, int64_t x_hi,
                  int64_t ix0) {
    T* dst = col + row * g.pixels() + y * g.ow;
    if (iy < 0) {
      std::fill(dst, dst + g.ow, T{0});
      return;
    }
    const T* src = img + (c * g.h + iy) * g.w + ix0;
    std::fill(dst, dst + x_lo, T{0});
    if (g.sw == 1) {
      std::memcpy(dst + x_lo, src + x_lo, (x_hi - x_lo) * sizeof(T));
    } else {
      for (int64_t x = x_lo; x < x_hi; ++x) dst[x] = src[x * g.sw];
    }
    std::fill(dst + x_hi, dst + g.ow, T{0});
  });
}

// The adjoint of im2col: adds col[patch, pixels] into one image's channel group.
template <typename T>
void col2im_add(const ConvGeometry& g, const T* col, T* img) {
  for_taps(g, [&](int64_t row, int64_t c, int64_t y, int64_t iy, int64_t x_lo, int64_t x_hi,
                  int64_t ix0) {
    if (iy < 0) return;
    const T* src = col + row * g.pixels() + y * g.ow;
    T* dst = img + (c * g.h + iy) * g.w + ix0;
    for (int64_t x = x_lo; x < x_hi; ++x) dst[x * g.sw] += src[x];
  });
}

template <typename T>
class ConvKernel final : public BoundKernel {
 public:
  ConvKernel(ConvOp op, const ConvGeometry& g, const void* in0, const void* in1, void* out)
      : op_(op), g_(g), in0_(static_cast<const T*>(in0)), in1_(static_cast<const T*>(in1)),
        out_(static_cast<T*>(out)) {
    slots_ = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>(std::max(default_num_threads(), 2), g.n)));
    if (!g.pointwise()) cols_.assign(slots_, nullptr);
    if (op == ConvOp::kBackwardWeight && slots_ > 1) partials_.assign(slots_ - 1, nullptr);
  }

  // Columns of every part, then the partial weight gradients, each 64-byte aligned.
  int64_t scratch_bytes() const override {
    return static_cast<int64_t>(cols_.size()) * aligned(g_.patch() * g_.pixels()) +
           static_cast<int64_t>(partials_.size()) * aligned(g_.o * g_.patch());
  }

  Status run(ThreadPool& pool) override {
    ensure_scratch();
    const ConvGeometry& g = g_;
    const int parts = std::max(1, std::min(slots_, pool.num_threads()));
    const Partition images = Partition::make(g.n, 1, parts);
    pool.parallel_for(images.num_chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        part(static_cast<int>(s), images.begin(static_cast<int>(s)),
             images.end(static_cast<int>(s)));
      }
    });
    if (op_ == ConvOp::kBackwardWeight && images.num_chunks > 1) {
      const int extra = images.num_chunks - 1;
      pool.parallel_for(g.o * g.patch(), 4096, [&](int64_t begin, int64_t end) {
        for (int s = 0; s < extra; ++s) {
          const T* p = partials_[s];
          for (int64_t i = begin; i < end; ++i) out_[i] += p[i];
        }
      });
    }
    if (op_ == ConvOp::kBackwardWeight && g.n == 0) {
      std::fill(out_, out_ + g.o * g.patch(), T{0});
    }
    return Status::ok_status();
  }

  std::string describe() const override {
    static const char* const kNames[] = {"conv2d", "conv2d_backward_input",
                                         "conv2d_backward_weight"};
    return std::string("im2col+") + (std::is_same_v<T, float> ? "onednn sgemm " : "loop gemm ") +
           kNames[static_cast<int>(op_)] + " " + std::to_string(g_.o) + "x" +
           std::to_string(g_.c) + "x" + std::to_string(g_.kh) + "x" + std::to_string(g_.kw);
  }

 private:
  // Images [b0, b1) with scratch slot s.
  void part(int s, int64_t b0, int64_t b1) {
    const ConvGeometry& g = g_;
    const int64_t in_img = g.c * g.h * g.w, out_img = g.o * g.pixels();
    const int64_t in_grp = g.cg() * g.h * g.w, out_grp = g.og() * g.pixels();
    const int64_t w_grp = g.og() * g.patch();
    T* col = g.pointwise() ? nullptr : cols_[s];
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        switch (op_) {
          case ConvOp::kForward: {  // y = W_g · col(x)
            const T* x = in0_ + b * in_img + grp * in_grp;
            if (col) im2col(g, x, col);
            gemm_serial<T>(false, false, g.og(), g.pixels(), g.patch(), in1_ + grp * w_grp,
                           g.patch(), col ? col : x, g.pixels(), T{0},
                           out_ + b * out_img + grp * out_grp, g.pixels());
            break;
          }
          case ConvOp::kBackwardInput: {  // gx = col2im(W_g^T · gy)
            const T* gy = in0_ + b * out_img + grp * out_grp;
            T* gx = out_ + b * in_img + grp * in_grp;
            gemm_serial<T>(true, false, g.patch(), g.pixels(), g.og(), in1_ + grp * w_grp,
                           g.patch(), gy, g.pixels(), T{0}, col ? col : gx, g.pixels());
            if (col) {
              std::fill(gx, gx + in_grp, T{0});
              col2im_add(g, col, gx);
            }
            break;
          }
          case ConvOp::kBackwardWeight: {  // gW_g += gy · col(x)^T
            const T* x = in0_ + b * in_img + grp * in_grp;
            if (col) im2col(g, x, col);
            T* gw = (s == 0 ? out_ : partials_[s - 1]) + grp * w_grp;
            gemm_serial<T>(false, true, g.og(), g.patch(), g.pixels(),
                           in1_ + b * out_img + grp * out_grp, g.pixels(), col ? col : x,
                           g.pixels(), b == b0 ? T{0} : T{1}, gw, g.patch());
            break;
          }
        }
      }
    }
  }

  // Bytes of `elements` T, rounded up to 64.
  static int64_t aligned(int64_t elements) {
    return (elements * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64;
  }

  void bind_scratch(std::byte* scratch) override {
    for (T*& col : cols_) {
      col = reinterpret_cast<T*>(scratch);
      scratch += aligned(g_.patch() * g_.pixels());
    }
    for (T*& partial : partials_) {
      partial = reinterpret_cast<T*>(scratch);
      scratch += aligned(g_.o * g_.patch());
    }
  }

  ConvOp op_;
  ConvGeometry g_;
  const T* in0_;
  const T* in1_;
  T* out_;
  int slots_ = 1;
  std::vector<T*> cols_;      // im2col columns, one per part (in the scratch).
  std::vector<T*> partials_;  // Weight gradients of parts 1, 2, ... (in the scratch).
};

}  // namespace

std::unique_ptr<BoundKernel> make_im2col_conv_kernel(ConvOp op, const ConvGeometry& g,
                                                     DType dtype, const void* in0,
                                                     const void* in1, void* out) {
  if (dtype == DType::f32) return std::make_unique<ConvKernel<float>>(op, g, in0, in1, out);
  return std::make_unique<ConvKernel<double>>(op, g, in0, in1, out);
}

KernelOr make_conv_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                          void* out) {
  const Node& node = call.node;
  ConvOp op;
  Shape x, w;
  switch (node.op) {
    case Op::Conv2d:
      op = ConvOp::kForward;
      x = call.operand_types[0].shape;
      w = call.operand_types[1].shape;
      break;
    case Op::Conv2dBackwardInput:
      op = ConvOp::kBackwardInput;
      x = Shape(node.ints_attr("input_shape"));
      w = call.operand_types[1].shape;
      break;
    case Op::Conv2dBackwardWeight:
      op = ConvOp::kBackwardWeight;
      x = call.operand_types[0].shape;
      w = Shape(node.ints_attr("weight_shape"));
      break;
    default: return std::unique_ptr<BoundKernel>();
  }
  const DType dtype = call.result_type.dtype;
  if (dtype != DType::f32 && dtype != DType::f64) return std::unique_ptr<BoundKernel>();
  for (const Type& t : call.operand_types) {
    if (t.dtype != dtype) return std::unique_ptr<BoundKernel>();
  }
  const IntList& stride = node.ints_attr("stride");
  const IntList& padding = node.ints_attr("padding");
  const IntList& dilation = node.ints_attr("dilation");
  const int64_t groups = node.int_attr("groups");
  if (x.rank() != 4 || w.rank() != 4 || stride.size() != 2 || padding.size() != 2 ||
      dilation.size() != 2 || groups < 1 || x[1] % groups != 0 || w[0] % groups != 0 ||
      w[1] * groups != x[1]) {
    return call_error(call, "invalid convolution of " + x.to_string() + " by " + w.to_string());
  }
  ConvGeometry g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], 0, 0, stride[0], stride[1],
                 padding[0], padding[1], dilation[0], dilation[1], groups};
  g.oh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  const Shape y{g.n, g.o, g.oh, g.ow};
  WEFT_CHECK(call.result_type.shape == (op == ConvOp::kForward ? y
                                        : op == ConvOp::kBackwardInput ? x : w),
             "conv2d: result type does not match the operands");
  // oneDNN's direct kernels work on blocks of 16 channels: with fewer input channels (the
  // first layer of a CNN) they were no faster than im2col for conv2d, and 2-10x slower
  // for the input gradient (gemm_bench, conv1 1->32 and convnet 3->16). The weight
  // gradient is the exception from 3 input channels on: its im2col GEMM (16x27, k = 1024
  // per image) runs at ~15 GFLOP/s, and oneDNN's was 5-7x faster on convnet 3->16
  // (0.24-0.61 ms against 1.7-3.3 ms), though slower with a single channel (conv1 1->32).
  const bool wide = g.cg() >= 16 && g.og() >= 16;
  const bool weight_grad = op == ConvOp::kBackwardWeight && g.cg() >= 3 && g.og() >= 16;
  if (dtype == DType::f32 && (wide || weight_grad)) {
    if (auto k = make_onednn_conv_kernel(op, g, in[0], in[1], out)) return k;
  }
  return make_im2col_conv_kernel(op, g, dtype, in[0], in[1], out);
}

}  // namespace weft::cpu

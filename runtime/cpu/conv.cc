// Convolution kernels: conv over 1, 2 or 3 spatial dims and its two gradients, all seen
// over [D, H, W] (runtime/conv_geometry.h). f32 with at least 16 channels per group (for
// the weight gradient: 16 output and 3 input channels) goes to oneDNN's convolution
// primitives (conv_onednn.cc) when they accept the convolution; f64, and the other f32
// convolutions, go through im2col and the GEMM core here (gemm_serial: oneDNN's sgemm on
// one thread for f32, a loop for f64). bf16 goes to oneDNN's bf16 primitives whatever its
// channel count where the CPU has AVX512_BF16 (native_bf16()); elsewhere, and for f16,
// make_library_kernel converts to f32 and runs the f32 kernel (half.cc).
//
// The batch is cut into `parts` contiguous runs of images, one per pool chunk; each
// part has its own im2col columns in the kernel's scratch (BoundKernel::scratch_bytes:
// the Executor's one block shared by every kernel), for as many parts as
// default_num_threads() (a larger pool still uses that many parts). For
// conv_backward_weight each part sums its images' gradients into its own buffer (part
// 0 straight into the result) and the parts are then added in index order, so the result
// is bitwise reproducible for a given part count. A 1x1 convolution with stride 1 and no
// padding skips im2col: the image is its own column matrix.

#include <cstring>

#include "runtime/cpu/contraction_internal.h"

namespace weft::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Calls f(row, out_row, plane_row, x_lo, x_hi, ix0) for every im2col row `row` (a
// channel c of the group and a kernel tap (kz, ki, kj)) and every output row out_row =
// oz * oh + oy: output pixels x in [x_lo, x_hi) read input column ix0 + x * sw of input
// row plane_row = (c * d + iz) * h + iy of the group's planes (-1 when that row is
// padding). A convolution over [H, W] or [W] is one with d = kd = od = 1 (conv_geometry.h).
template <typename F>
void for_taps(const ConvGeometry& g, F&& f) {
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t kz = 0; kz < g.kd; ++kz) {
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix0 = kj * g.dw - g.pw;
          const int64_t x_lo = std::min(g.ow, std::max<int64_t>(0, ceil_div(-ix0, g.sw)));
          const int64_t x_hi = std::max(x_lo, std::min(g.ow, ceil_div(g.w - ix0, g.sw)));
          const int64_t row = ((c * g.kd + kz) * g.kh + ki) * g.kw + kj;
          for (int64_t z = 0; z < g.od; ++z) {
            const int64_t iz = z * g.sd - g.pd + kz * g.dd;
            for (int64_t y = 0; y < g.oh; ++y) {
              const int64_t iy = y * g.sh - g.ph + ki * g.dh;
              const bool inside = iz >= 0 && iz < g.d && iy >= 0 && iy < g.h;
              f(row, z * g.oh + y, inside ? (c * g.d + iz) * g.h + iy : -1, x_lo, x_hi, ix0);
            }
          }
        }
      }
    }
  }
}

// col[patch, pixels] for one image's channel group (`img` points at the group's planes).
template <typename T>
void im2col(const ConvGeometry& g, const T* img, T* col) {
  for_taps(g, [&](int64_t row, int64_t out_row, int64_t plane_row, int64_t x_lo, int64_t x_hi,
                  int64_t ix0) {
    T* dst = col + row * g.pixels() + out_row * g.ow;
    if (plane_row < 0) {
      std::fill(dst, dst + g.ow, T{0});
      return;
    }
    const T* src = img + plane_row * g.w + ix0;
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
  for_taps(g, [&](int64_t row, int64_t out_row, int64_t plane_row, int64_t x_lo, int64_t x_hi,
                  int64_t ix0) {
    if (plane_row < 0) return;
    const T* src = col + row * g.pixels() + out_row * g.ow;
    T* dst = img + plane_row * g.w + ix0;
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
    return std::string("im2col+") + (std::is_same_v<T, float> ? "onednn sgemm " : "loop gemm ") +
           conv_describe(op_, g_);
  }

 private:
  // Images [b0, b1) with scratch slot s.
  void part(int s, int64_t b0, int64_t b1) {
    const ConvGeometry& g = g_;
    const int64_t in_img = g.c * g.volume(), out_img = g.o * g.pixels();
    const int64_t in_grp = g.cg() * g.volume(), out_grp = g.og() * g.pixels();
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

std::string conv_describe(ConvOp op, const ConvGeometry& g) {
  static constexpr Op kOps[] = {Op::Conv, Op::ConvBackwardInput, Op::ConvBackwardWeight};
  std::string text(op_name(kOps[static_cast<int>(op)]));
  const Shape w = g.w_shape();
  for (size_t i = 0; i < w.dims.size(); ++i) {
    text += i == 0 ? ' ' : 'x';
    text += std::to_string(w[i]);
  }
  return text;
}

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
    case Op::Conv:
      op = ConvOp::kForward;
      x = call.operand_types[0].shape;
      w = call.operand_types[1].shape;
      break;
    case Op::ConvBackwardInput:
      op = ConvOp::kBackwardInput;
      x = Shape(node.ints_attr("input_shape"));
      w = call.operand_types[1].shape;
      break;
    case Op::ConvBackwardWeight:
      op = ConvOp::kBackwardWeight;
      x = call.operand_types[0].shape;
      w = Shape(node.ints_attr("weight_shape"));
      break;
    default: return std::unique_ptr<BoundKernel>();
  }
  const DType dtype = call.result_type.dtype;
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::bf16) {
    return std::unique_ptr<BoundKernel>();
  }
  for (const Type& t : call.operand_types) {
    if (t.dtype != dtype) return std::unique_ptr<BoundKernel>();
  }
  StatusOr<ConvGeometry> geometry = conv_geometry(node, x, w);
  if (!geometry.ok()) return geometry.error();
  const ConvGeometry& g = *geometry;
  WEFT_CHECK(call.result_type.shape == (op == ConvOp::kForward ? g.y_shape()
                                        : op == ConvOp::kBackwardInput ? x : w),
             "conv: result type does not match the operands");
  // oneDNN's direct kernels work on blocks of 16 channels: with fewer input channels (the
  // first layer of a CNN) they were no faster than im2col for conv, and 2-10x slower
  // for the input gradient (gemm_bench, conv1 1->32 and convnet 3->16). The weight
  // gradient is the exception from 3 input channels on: its im2col GEMM (16x27, k = 1024
  // per image) runs at ~15 GFLOP/s, and oneDNN's was 5-7x faster on convnet 3->16
  // (0.24-0.61 ms against 1.7-3.3 ms), though slower with a single channel (conv1 1->32).
  const bool wide = g.cg() >= 16 && g.og() >= 16;
  const bool weight_grad = op == ConvOp::kBackwardWeight && g.cg() >= 3 && g.og() >= 16;
  if (dtype == DType::bf16) {
    // Any channel count: the alternative is converting to f32 (make_widened_kernel).
    if (!native_bf16()) return std::unique_ptr<BoundKernel>();
    return make_onednn_conv_kernel(op, g, dtype, in[0], in[1], out);
  }
  if (dtype == DType::f32 && (wide || weight_grad)) {
    if (auto k = make_onednn_conv_kernel(op, g, dtype, in[0], in[1], out)) return k;
  }
  return make_im2col_conv_kernel(op, g, dtype, in[0], in[1], out);
}

}  // namespace weft::cpu

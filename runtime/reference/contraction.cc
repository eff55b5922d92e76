// Contraction and windowed kernels: matmul, conv (1-3 spatial dims) and its two
// gradients (through im2col and the gemm core), max/avg pooling and their gradients, and
// max_pool2d_select (the adjoint of max_pool2d_backward).

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/checked_math.h"
#include <cstring>

#include "runtime/conv_geometry.h"
#include "runtime/pool_geometry.h"
#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

// ---- matmul ----

// The tensor with its last two dimensions swapped (a copy).
Tensor transpose_last2(const Tensor& t) {
  std::vector<int64_t> dims = t.shape().dims;
  const int r = t.rank();
  const int64_t rows = dims[r - 2], cols = dims[r - 1];
  std::swap(dims[r - 2], dims[r - 1]);
  Tensor out(Type{t.dtype(), Shape(dims)});
  const int64_t size = dtype_size(t.dtype()), plane = rows * cols;
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t b = 0; b * plane < t.numel(); ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        std::memcpy(dst + ((b * plane) + j * rows + i) * size,
                    src + ((b * plane) + i * cols + j) * size, size);
      }
    }
  }
  return out;
}

Status matmul(const Node& node, const Inputs& in, Tensor& out) {
  // Transpose flags: multiply explicitly transposed copies (the flags never change the
  // arithmetic, only where operands are read from).
  const bool ta = node.bool_attr("transpose_a"), tb = node.bool_attr("transpose_b");
  if ((ta && in[0]->rank() < 2) || (tb && in[1]->rank() < 2)) {
    return node_error(node, "a transposed operand needs rank >= 2");
  }
  if (ta || tb) {
    Node plain = node;
    plain.attrs.erase("transpose_a");
    plain.attrs.erase("transpose_b");
    Tensor a = ta ? transpose_last2(*in[0]) : *in[0];
    Tensor b = tb ? transpose_last2(*in[1]) : *in[1];
    return matmul(plain, {&a, &b}, out);
  }
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.dtype() != b.dtype() || a.rank() == 0 || b.rank() == 0) {
    return node_error(node, "cannot multiply " + a.type().to_string() + " by " +
                                b.type().to_string());
  }
  // NumPy's matmul: a 1-D left operand is a row vector, a 1-D right one a column
  // vector, and the added axis is dropped from the result.
  std::vector<int64_t> ad = a.shape().dims, bd = b.shape().dims;
  if (a.rank() == 1) ad.insert(ad.begin(), 1);
  if (b.rank() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (bd[bd.size() - 2] != k) {
    return node_error(node, "contracted dimensions differ: " + a.type().to_string() + " and " +
                                b.type().to_string());
  }
  const Shape a_batch(std::vector<int64_t>(ad.begin(), ad.end() - 2));
  const Shape b_batch(std::vector<int64_t>(bd.begin(), bd.end() - 2));
  std::optional<Shape> batch = broadcast_shapes(a_batch, b_batch);
  if (!batch) {
    return node_error(node, "batch dimensions of " + a.type().to_string() + " and " +
                                b.type().to_string() + " do not broadcast");
  }
  std::vector<int64_t> want = batch->dims;
  if (a.rank() > 1) want.push_back(m);
  if (b.rank() > 1) want.push_back(n);
  WEFT_RETURN_IF_ERROR(check_result(node, Type{a.dtype(), Shape(want)}, out));
  std::vector<int64_t> sa = broadcast_strides(a_batch, *batch);
  std::vector<int64_t> sb = broadcast_strides(b_batch, *batch);
  return dispatch<kFloats | kInts>(node, a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.data<T>();
    for_each_row<2>(*batch, {sa, sb},
                    [&](int64_t start, const std::array<int64_t, 2>& off,
                        const std::array<int64_t, 2>& st, int64_t count) {
                      for (int64_t i = 0; i < count; ++i) {
                        gemm(m, n, k, pa + (off[0] + i * st[0]) * m * k,
                             pb + (off[1] + i * st[1]) * k * n, pc + (start + i) * m * n,
                             /*accumulate=*/false);
                      }
                    });
    return Status::ok_status();
  });
}

// ---- convolution ----

// The geometry: runtime/conv_geometry.h, shared with the CPU and CUDA backends. Every
// convolution is seen over [D, H, W]; one over fewer spatial dims has leading sizes of 1.

// Calls f(c, kj, row, out_row, plane_row) for every im2col row `row` (channel c of the
// group, tap (kz, ki, kj)) and every output row out_row = oz * oh + oy: plane_row is the
// input row iz * h + iy the tap reads, or -1 where that is padding. The caller walks the
// columns.
template <typename F>
void for_rows(const ConvGeometry& g, F&& f) {
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t kz = 0; kz < g.kd; ++kz) {
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t row = ((c * g.kd + kz) * g.kh + ki) * g.kw + kj;
          for (int64_t z = 0; z < g.od; ++z) {
            const int64_t iz = z * g.sd - g.pd + kz * g.dd;
            for (int64_t y = 0; y < g.oh; ++y) {
              const int64_t iy = y * g.sh - g.ph + ki * g.dh;
              const bool inside = iz >= 0 && iz < g.d && iy >= 0 && iy < g.h;
              f(c, kj, row, z * g.oh + y, inside ? iz * g.h + iy : -1);
            }
          }
        }
      }
    }
  }
}

// col[patch, pixels] for image `img` (its [c, d, h, w] block) and channel group `grp`.
template <typename T>
void im2col(const ConvGeometry& g, const T* img, int64_t grp, T* col) {
  for_rows(g, [&](int64_t c, int64_t kj, int64_t row, int64_t out_row, int64_t plane_row) {
    T* dst = col + row * g.pixels() + out_row * g.ow;
    if (plane_row < 0) {
      std::fill(dst, dst + g.ow, T{0});
      return;
    }
    const T* src = img + ((grp * g.cg() + c) * g.d * g.h + plane_row) * g.w;
    for (int64_t x = 0; x < g.ow; ++x) {
      const int64_t ix = x * g.sw - g.pw + kj * g.dw;
      dst[x] = ix >= 0 && ix < g.w ? src[ix] : T{0};
    }
  });
}

// The adjoint of im2col: adds col[patch, pixels] into `img`.
template <typename T>
void col2im_add(const ConvGeometry& g, const T* col, int64_t grp, T* img) {
  for_rows(g, [&](int64_t c, int64_t kj, int64_t row, int64_t out_row, int64_t plane_row) {
    if (plane_row < 0) return;
    const T* src = col + row * g.pixels() + out_row * g.ow;
    T* dst = img + ((grp * g.cg() + c) * g.d * g.h + plane_row) * g.w;
    for (int64_t x = 0; x < g.ow; ++x) {
      const int64_t ix = x * g.sw - g.pw + kj * g.dw;
      if (ix >= 0 && ix < g.w) dst[ix] += src[x];
    }
  });
}

Status conv(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  WEFT_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(node, x.shape(), w.shape()));
  if (x.dtype() != w.dtype()) return node_error(node, "input and weight dtypes differ");
  WEFT_RETURN_IF_ERROR(check_result(node, Type{x.dtype(), g.y_shape()}, out));
  return dispatch<kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<T> col(static_cast<size_t>(g.patch() * g.pixels()));
    for (int64_t b = 0; b < g.n; ++b) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(g, x.data<T>() + b * g.c * g.volume(), grp, col.data());
        gemm(g.og(), g.pixels(), g.patch(), w.data<T>() + grp * g.og() * g.patch(), col.data(),
             out.data<T>() + (b * g.o + grp * g.og()) * g.pixels(), /*accumulate=*/false);
      }
    }
    return Status::ok_status();
  });
}

Status conv_backward_input(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& gy = *in[0];
  const Tensor& w = *in[1];
  const Shape x_shape(node.ints_attr("input_shape"));
  WEFT_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(node, x_shape, w.shape()));
  if (gy.type() != Type{w.dtype(), g.y_shape()}) {
    return node_error(node, "output gradient " + gy.type().to_string() + " does not match the " +
                                "convolution of " + x_shape.to_string() + " by " +
                                w.type().to_string());
  }
  WEFT_RETURN_IF_ERROR(check_result(node, Type{w.dtype(), x_shape}, out));
  return dispatch<kFloats>(node, w.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<T> wt(static_cast<size_t>(g.patch() * g.og()));
    std::vector<T> col(static_cast<size_t>(g.patch() * g.pixels()));
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      transpose_2d(g.og(), g.patch(), w.data<T>() + grp * g.og() * g.patch(), wt.data());
      for (int64_t b = 0; b < g.n; ++b) {
        gemm(g.patch(), g.pixels(), g.og(), wt.data(),
             gy.data<T>() + (b * g.o + grp * g.og()) * g.pixels(), col.data(),
             /*accumulate=*/false);
        col2im_add(g, col.data(), grp, out.data<T>() + b * g.c * g.volume());
      }
    }
    return Status::ok_status();
  });
}

Status conv_backward_weight(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& gy = *in[1];
  const Shape w_shape(node.ints_attr("weight_shape"));
  WEFT_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(node, x.shape(), w_shape));
  if (gy.type() != Type{x.dtype(), g.y_shape()}) {
    return node_error(node, "output gradient " + gy.type().to_string() + " does not match the " +
                                "convolution of " + x.type().to_string() + " by " +
                                w_shape.to_string());
  }
  WEFT_RETURN_IF_ERROR(check_result(node, Type{x.dtype(), w_shape}, out));
  return dispatch<kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    std::vector<T> col(static_cast<size_t>(g.patch() * g.pixels()));
    std::vector<T> colt(col.size());
    for (int64_t b = 0; b < g.n; ++b) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(g, x.data<T>() + b * g.c * g.volume(), grp, col.data());
        transpose_2d(g.patch(), g.pixels(), col.data(), colt.data());
        gemm(g.og(), g.patch(), g.pixels(), gy.data<T>() + (b * g.o + grp * g.og()) * g.pixels(),
             colt.data(), out.data<T>() + grp * g.og() * g.patch(), /*accumulate=*/true);
      }
    }
    return Status::ok_status();
  });
}

// ---- pooling ----

// The window: runtime/pool_geometry.h, shared with the CPU and CUDA backends.

// Calls f(y, x) for the valid input positions of output pixel (oy, ox), in row-major order.
template <typename F>
void for_window(const PoolGeometry& g, int64_t oy, int64_t ox, F&& f) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t y = oy * g.sh - g.ph + i;
    if (y < 0 || y >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t x = ox * g.sw - g.pw + j;
      if (x >= 0 && x < g.w) f(y, x);
    }
  }
}

// Index in the plane of the first maximum of a window (NaN counts as the maximum);
// -1 when the window holds no input element.
template <typename T>
int64_t window_argmax(const PoolGeometry& g, const T* plane, int64_t oy, int64_t ox) {
  int64_t best = -1;
  for_window(g, oy, ox, [&](int64_t y, int64_t x) {
    const T v = plane[y * g.w + x];
    if (best < 0) {
      best = y * g.w + x;
    } else {
      const T b = plane[best];
      if constexpr (std::is_floating_point_v<T>) {
        if (!std::isnan(b) && (v > b || std::isnan(v))) best = y * g.w + x;
      } else {
        if (v > b) best = y * g.w + x;
      }
    }
  });
  return best;
}

template <bool kMax>
Status pool(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(node, x.shape()));
  WEFT_RETURN_IF_ERROR(check_result(node, Type{x.dtype(), pooled_shape(x.shape(), g)}, out));
  return dispatch<kMax ? (kFloats | kInts) : kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* plane = x.data<T>() + p * g.h * g.w;
      T* dst = out.data<T>() + p * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          if constexpr (kMax) {
            const int64_t i = window_argmax(g, plane, oy, ox);
            // A window of padding only: -inf (the lowest value for integers).
            const T lowest = std::numeric_limits<T>::has_infinity
                                 ? -std::numeric_limits<T>::infinity()
                                 : std::numeric_limits<T>::lowest();
            dst[oy * g.ow + ox] = i < 0 ? lowest : plane[i];
          } else {
            // Padding counts as zeros: divide by the full window.
            double sum = 0;
            for_window(g, oy, ox, [&](int64_t y, int64_t xx) { sum += plane[y * g.w + xx]; });
            dst[oy * g.ow + ox] = static_cast<T>(sum / static_cast<double>(g.kh * g.kw));
          }
        }
      }
    }
    return Status::ok_status();
  });
}

Status max_pool2d_backward(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& gy = *in[1];
  WEFT_ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(node, x.shape()));
  if (gy.type() != Type{x.dtype(), pooled_shape(x.shape(), g)}) {
    return node_error(node, "output gradient " + gy.type().to_string() +
                                " does not match pooling " + x.type().to_string());
  }
  WEFT_RETURN_IF_ERROR(check_result(node, x.type(), out));
  return dispatch<kFloats | kInts>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* plane = x.data<T>() + p * g.h * g.w;
      const T* grad = gy.data<T>() + p * g.oh * g.ow;
      T* dst = out.data<T>() + p * g.h * g.w;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t i = window_argmax(g, plane, oy, ox);
          if (i >= 0) dst[i] = static_cast<T>(dst[i] + grad[oy * g.ow + ox]);
        }
      }
    }
    return Status::ok_status();
  });
}

// The adjoint of max_pool2d_backward in gy: each window reads g at the position that
// max_pool2d_backward routes the window's gradient to (its first maximum of x).
Status max_pool2d_select(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& g = *in[1];
  WEFT_ASSIGN_OR_RETURN(PoolGeometry geo, pool_geometry(node, x.shape()));
  if (g.type() != x.type()) {
    return node_error(node, "g " + g.type().to_string() + " must have x " +
                                x.type().to_string() + "'s type");
  }
  WEFT_RETURN_IF_ERROR(check_result(node, Type{x.dtype(), pooled_shape(x.shape(), geo)}, out));
  return dispatch<kFloats | kInts>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t p = 0; p < geo.planes; ++p) {
      const T* plane = x.data<T>() + p * geo.h * geo.w;
      const T* src = g.data<T>() + p * geo.h * geo.w;
      T* dst = out.data<T>() + p * geo.oh * geo.ow;
      for (int64_t oy = 0; oy < geo.oh; ++oy) {
        for (int64_t ox = 0; ox < geo.ow; ++ox) {
          const int64_t i = window_argmax(geo, plane, oy, ox);
          dst[oy * geo.ow + ox] = i < 0 ? T{0} : src[i];
        }
      }
    }
    return Status::ok_status();
  });
}

Status avg_pool2d_backward(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& gy = *in[0];
  const Shape x_shape(node.ints_attr("input_shape"));
  WEFT_ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(node, x_shape));
  if (gy.shape() != pooled_shape(x_shape, g)) {
    return node_error(node, "output gradient " + gy.type().to_string() +
                                " does not match pooling " + x_shape.to_string());
  }
  WEFT_RETURN_IF_ERROR(check_result(node, Type{gy.dtype(), x_shape}, out));
  return dispatch<kFloats>(node, gy.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / static_cast<double>(g.kh * g.kw));
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* grad = gy.data<T>() + p * g.oh * g.ow;
      T* dst = out.data<T>() + p * g.h * g.w;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const T v = grad[oy * g.ow + ox] * scale;
          for_window(g, oy, ox, [&](int64_t y, int64_t x) { dst[y * g.w + x] += v; });
        }
      }
    }
    return Status::ok_status();
  });
}

}  // namespace

void register_contraction_kernels(KernelTable& t) {
  t.add(Op::Matmul, matmul);
  t.add(Op::Conv, conv);
  t.add(Op::ConvBackwardInput, conv_backward_input);
  t.add(Op::ConvBackwardWeight, conv_backward_weight);
  t.add(Op::MaxPool2d, pool<true>);
  t.add(Op::AvgPool2d, pool<false>);
  t.add(Op::MaxPool2dBackward, max_pool2d_backward);
  t.add(Op::AvgPool2dBackward, avg_pool2d_backward);
  t.add(Op::MaxPool2dSelect, max_pool2d_select);
}

}  // namespace weft::reference

// Pooling kernels: max_pool2d, avg_pool2d, their gradients and max_pool2d_select.
// Hand-written loops, parallel over the N·C planes; within a plane they visit windows
// and elements in the reference's order (runtime/reference/contraction.cc), so results
// are exactly the reference's: the same first maximum (NaN counts as the maximum), the
// same f64 window sums for avg_pool2d and the same accumulation order in the gradients.
// The common 2x2, stride-2, unpadded max pooling has its own branch-free row loops that
// the compiler vectorizes; the maximum is found with `!(v <= b)` compares, not isnan.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/pool_geometry.h"

namespace weft::cpu {
namespace {


// Calls f(y, x) for the valid input positions of output pixel (oy, ox), row-major.
template <typename F>
inline void for_window(const PoolGeometry& g, int64_t oy, int64_t ox, F&& f) {
  const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + g.kh, g.h);
  const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + g.kw, g.w);
  for (int64_t y = ya; y < yb; ++y) {
    for (int64_t x = xa; x < xb; ++x) f(y, x);
  }
}

// Whether v replaces the running first maximum b: v is larger or NaN, and b is not NaN.
// `!(v <= b)` is "v > b or v is NaN"; together with `b == b` it is the reference's
// `!isnan(b) && (v > b || isnan(v))` in two compares that vectorize.
template <typename T>
inline bool replaces(T v, T b) {
  return b == b && !(v <= b);
}

// Index in the plane of the window's first maximum (NaN wins); -1 for padding only.
template <typename T>
inline int64_t window_argmax(const PoolGeometry& g, const T* plane, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + g.kh, g.h);
  const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + g.kw, g.w);
  if (ya >= yb || xa >= xb) return -1;
  int64_t best = ya * g.w + xa;
  T b = plane[best];
  for (int64_t y = ya; y < yb; ++y) {
    const T* row = plane + y * g.w;
    for (int64_t x = y == ya ? xa + 1 : xa; x < xb; ++x) {
      if (replaces(row[x], b)) {
        best = y * g.w + x;
        b = row[x];
      }
    }
  }
  return best;
}

// The first maximum of the 2x2 window (a, b / c, d), row-major; NaN wins.
template <typename T>
inline T max_2x2(T a, T b, T c, T d) {
  T m = replaces(b, a) ? b : a;
  m = replaces(c, m) ? c : m;
  return replaces(d, m) ? d : m;
}

// Whether v is the value max_2x2 returned as m. The first maximum is the first element
// that compares equal to m (no earlier one does, or it would have been kept), or, when
// m is NaN, the first NaN. (These selects vectorize where index arithmetic would not.)
template <typename T>
inline bool is_max(T v, T m) {
  return v == m || v != v;
}

// Bit masks instead of selects in the 2x2 gradient and select loops: selects compiled
// to branches in the loops' scalar remainders, which is all that runs on planes 16 or
// fewer elements wide (5-10x slower there, on random data).
template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
inline Bits<T> bits(T v) {
  return std::bit_cast<Bits<T>>(v);
}

template <typename U>
inline U mask(bool b) {
  return U{0} - static_cast<U>(b);
}

enum class PoolOp { kMax, kAvg, kMaxBackward, kAvgBackward, kMaxSelect };

template <typename T>
class PoolKernel final : public BoundKernel {
 public:
  PoolKernel(PoolOp op, const PoolGeometry& g, const void* in0, const void* in1, void* out)
      : op_(op), g_(g), in0_(static_cast<const T*>(in0)), in1_(static_cast<const T*>(in1)),
        out_(static_cast<T*>(out)) {}

  Status run(ThreadPool& pool) override {
    const int64_t work = std::max<int64_t>(1, g_.h * g_.w + g_.oh * g_.ow * g_.kh * g_.kw);
    pool.parallel_for(g_.planes, std::max<int64_t>(1, 16384 / work),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t p = begin; p < end; ++p) plane(p);
                      });
    return Status::ok_status();
  }

  std::string describe() const override {
    static const char* const kNames[] = {"max_pool2d", "avg_pool2d", "max_pool2d_backward",
                                         "avg_pool2d_backward", "max_pool2d_select"};
    return std::string("loop ") + kNames[static_cast<int>(op_)] + " " +
           std::to_string(g_.kh) + "x" + std::to_string(g_.kw) + " over " +
           std::to_string(g_.planes) + " planes";
  }

 private:
  // max_pool2d, its gradient and max_pool2d_select with 2x2 windows, stride 2 and no
  // padding: every window lies inside the input and no two overlap, so each input
  // element receives at most one window's gradient.
  bool is_2x2() const {
    return g_.kh == 2 && g_.kw == 2 && g_.sh == 2 && g_.sw == 2 && g_.ph == 0 && g_.pw == 0;
  }

  void plane_2x2(int64_t p) const {
    const PoolGeometry& g = g_;
    using U = Bits<T>;
    const int64_t in_size = g.h * g.w, out_size = g.oh * g.ow, w = g.w, ow = g.ow;
    const T* x = in0_ + p * in_size;
    switch (op_) {
      case PoolOp::kMax: {
        T* y = out_ + p * out_size;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const T* r0 = x + 2 * oy * w;
          const T* r1 = r0 + w;
          T* yr = y + oy * ow;
          for (int64_t ox = 0; ox < ow; ++ox) {
            yr[ox] = max_2x2(r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]);
          }
        }
        break;
      }
      case PoolOp::kMaxSelect: {
        const T* src = in1_ + p * in_size;
        T* y = out_ + p * out_size;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const T* r0 = x + 2 * oy * w;
          const T* r1 = r0 + w;
          const T* s0 = src + 2 * oy * w;
          const T* s1 = s0 + w;
          T* yr = y + oy * ow;
          for (int64_t ox = 0; ox < ow; ++ox) {
            const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox];
            const T m = max_2x2(a, b, c, r1[2 * ox + 1]);
            const U k0 = mask<U>(is_max(a, m)), k1 = mask<U>(is_max(b, m)) & ~k0;
            const U k2 = mask<U>(is_max(c, m)) & ~k0 & ~k1, k3 = ~(k0 | k1 | k2);
            yr[ox] = std::bit_cast<T>((bits(s0[2 * ox]) & k0) | (bits(s0[2 * ox + 1]) & k1) |
                                      (bits(s1[2 * ox]) & k2) | (bits(s1[2 * ox + 1]) & k3));
          }
        }
        break;
      }
      case PoolOp::kMaxBackward: {
        // The reference adds each window's gradient to a zeroed buffer: 0 + g (which
        // turns -0 into +0), written here directly.
        const T* gy = in1_ + p * out_size;
        T* gx = out_ + p * in_size;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const T* r0 = x + 2 * oy * w;
          const T* r1 = r0 + w;
          T* g0 = gx + 2 * oy * w;
          T* g1 = g0 + w;
          const T* gr = gy + oy * ow;
          for (int64_t ox = 0; ox < ow; ++ox) {
            const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox];
            const T m = max_2x2(a, b, c, r1[2 * ox + 1]);
            // The gradient goes to the first element equal to m and is then spent. (The
            // zero bits are +0, the reference's untouched zeros.)
            U v = bits(T{0} + gr[ox]);
            const U k0 = mask<U>(is_max(a, m)), k1 = mask<U>(is_max(b, m));
            const U k2 = mask<U>(is_max(c, m));
            g0[2 * ox] = std::bit_cast<T>(v & k0);
            v &= ~k0;
            g0[2 * ox + 1] = std::bit_cast<T>(v & k1);
            v &= ~k1;
            g1[2 * ox] = std::bit_cast<T>(v & k2);
            v &= ~k2;
            g1[2 * ox + 1] = std::bit_cast<T>(v);
          }
          // An odd width leaves a last column no window reads.
          for (int64_t xx = 2 * ow; xx < w; ++xx) g0[xx] = g1[xx] = T{0};
        }
        // An odd height leaves a last row no window reads.
        std::fill(gx + 2 * g.oh * w, gx + in_size, T{0});
        break;
      }
      default: break;
    }
  }

  void plane(int64_t p) const {
    const PoolGeometry& g = g_;
    const int64_t in_size = g.h * g.w, out_size = g.oh * g.ow;
    if (is_2x2() && (op_ == PoolOp::kMax || op_ == PoolOp::kMaxSelect ||
                     op_ == PoolOp::kMaxBackward)) {
      plane_2x2(p);
      return;
    }
    switch (op_) {
      case PoolOp::kMax: {
        const T* x = in0_ + p * in_size;
        T* y = out_ + p * out_size;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t i = window_argmax(g, x, oy, ox);
            y[oy * g.ow + ox] = i < 0 ? -std::numeric_limits<T>::infinity() : x[i];
          }
        }
        break;
      }
      case PoolOp::kAvg: {
        const T* x = in0_ + p * in_size;
        T* y = out_ + p * out_size;
        const double window = static_cast<double>(g.kh * g.kw);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            double sum = 0;
            for_window(g, oy, ox, [&](int64_t yy, int64_t xx) { sum += x[yy * g.w + xx]; });
            y[oy * g.ow + ox] = static_cast<T>(sum / window);
          }
        }
        break;
      }
      case PoolOp::kMaxBackward: {
        const T* x = in0_ + p * in_size;
        const T* gy = in1_ + p * out_size;
        T* gx = out_ + p * in_size;
        std::fill(gx, gx + in_size, T{0});
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t i = window_argmax(g, x, oy, ox);
            if (i >= 0) gx[i] += gy[oy * g.ow + ox];
          }
        }
        break;
      }
      case PoolOp::kAvgBackward: {
        const T* gy = in0_ + p * out_size;
        T* gx = out_ + p * in_size;
        std::fill(gx, gx + in_size, T{0});
        const T scale = static_cast<T>(1.0 / static_cast<double>(g.kh * g.kw));
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const T v = gy[oy * g.ow + ox] * scale;
            for_window(g, oy, ox, [&](int64_t yy, int64_t xx) { gx[yy * g.w + xx] += v; });
          }
        }
        break;
      }
      case PoolOp::kMaxSelect: {
        const T* x = in0_ + p * in_size;
        const T* src = in1_ + p * in_size;
        T* y = out_ + p * out_size;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t i = window_argmax(g, x, oy, ox);
            y[oy * g.ow + ox] = i < 0 ? T{0} : src[i];
          }
        }
        break;
      }
    }
  }

  PoolOp op_;
  PoolGeometry g_;
  const T* in0_;
  const T* in1_;
  T* out_;
};

}  // namespace

KernelOr make_pool_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                          void* out) {
  const Node& node = call.node;
  PoolOp op;
  switch (node.op) {
    case Op::MaxPool2d: op = PoolOp::kMax; break;
    case Op::AvgPool2d: op = PoolOp::kAvg; break;
    case Op::MaxPool2dBackward: op = PoolOp::kMaxBackward; break;
    case Op::AvgPool2dBackward: op = PoolOp::kAvgBackward; break;
    case Op::MaxPool2dSelect: op = PoolOp::kMaxSelect; break;
    default: return std::unique_ptr<BoundKernel>();
  }
  const DType dtype = call.result_type.dtype;
  if (dtype != DType::f32 && dtype != DType::f64) return std::unique_ptr<BoundKernel>();
  for (const Type& t : call.operand_types) {
    if (t.dtype != dtype) return std::unique_ptr<BoundKernel>();
  }
  const Shape x = op == PoolOp::kAvgBackward ? Shape(node.ints_attr("input_shape"))
                                             : call.operand_types[0].shape;
  WEFT_ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(node, x));
  const Shape pooled = pooled_shape(x, g);
  const bool to_input = op == PoolOp::kMaxBackward || op == PoolOp::kAvgBackward;
  WEFT_CHECK(call.result_type.shape == (to_input ? x : pooled),
             "pooling: result type does not match the operands");
  const void* in1 = in.size() > 1 ? in[1] : nullptr;
  if (dtype == DType::f32) {
    return std::unique_ptr<BoundKernel>(new PoolKernel<float>(op, g, in[0], in1, out));
  }
  return std::unique_ptr<BoundKernel>(new PoolKernel<double>(op, g, in[0], in1, out));
}

}  // namespace weft::cpu

// Elementwise kernels: unary math, binary arithmetic and comparisons with NumPy
// broadcasting, select, gelu and cast. Semantics are documented in interpreter.h.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Two's-complement wrapping arithmetic for integers (no signed-overflow UB).
template <typename T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return static_cast<T>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                       static_cast<Wide>(static_cast<U>(b))));
}

// ---- unary ----

struct NegF {
  template <typename T> static T apply(T x) {
    if constexpr (kIsFloat<T>) return -x;
    else return wrap_sub<T>(T{0}, x);
  }
};
struct AbsF {
  template <typename T> static T apply(T x) {
    if constexpr (kIsFloat<T>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return x < 0 ? wrap_sub<T>(T{0}, x) : x;
  }
};
struct SignF {
  template <typename T> static T apply(T x) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    if constexpr (std::is_unsigned_v<T>) {
      return x > T{0} ? T{1} : T{0};
    } else {
      return x > T{0} ? T{1} : x < T{0} ? static_cast<T>(-1) : T{0};
    }
  }
};
struct ReluF {
  template <typename T> static T apply(T x) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    return x > T{0} ? x : T{0};
  }
};
#define WEFT_FLOAT_UNARY(Name, expr) \
  struct Name {                      \
    template <typename T> static T apply(T x) { return expr; } \
  };
WEFT_FLOAT_UNARY(ExpF, std::exp(x))
WEFT_FLOAT_UNARY(LogF, std::log(x))
WEFT_FLOAT_UNARY(Log1pF, std::log1p(x))
WEFT_FLOAT_UNARY(SqrtF, std::sqrt(x))
WEFT_FLOAT_UNARY(RsqrtF, T{1} / std::sqrt(x))
WEFT_FLOAT_UNARY(TanhF, std::tanh(x))
WEFT_FLOAT_UNARY(SigmoidF, T{1} / (T{1} + std::exp(-x)))
WEFT_FLOAT_UNARY(SinF, std::sin(x))
WEFT_FLOAT_UNARY(CosF, std::cos(x))
WEFT_FLOAT_UNARY(ErfF, std::erf(x))
WEFT_FLOAT_UNARY(SoftplusF, std::max(x, T{0}) + std::log1p(std::exp(-std::fabs(x))))
#undef WEFT_FLOAT_UNARY
struct FloorF {
  template <typename T> static T apply(T x) {
    if constexpr (kIsFloat<T>) return std::floor(x);
    else return x;
  }
};
struct NotF {
  template <typename T> static T apply(T x) { return !x; }
};

Status check_same_type(const Node& node, const Tensor& x, const Tensor& out) {
  if (x.type() != out.type()) {
    return node_error(node, "result type " + out.type().to_string() +
                                " does not match the operand type " + x.type().to_string());
  }
  return Status::ok_status();
}

template <typename F, unsigned Kinds>
Status unary(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_same_type(node, x, out));
  return dispatch<Kinds>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = F::template apply<T>(src[i]);
    return Status::ok_status();
  });
}

Status gelu(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_same_type(node, x, out));
  const std::string& mode = node.str_attr("approximate");
  if (mode != "none" && mode != "tanh") {
    return node_error(node, "approximate must be \"none\" or \"tanh\", not \"" + mode + "\"");
  }
  const bool use_tanh = mode == "tanh";
  return dispatch<kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    const T k_sqrt_2_over_pi = static_cast<T>(0.79788456080286535587989211986876);
    const T k_inv_sqrt2 = static_cast<T>(0.70710678118654752440084436210485);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const T v = src[i];
      if (use_tanh) {
        dst[i] = T(0.5) * v * (T(1) + std::tanh(k_sqrt_2_over_pi * (v + T(0.044715) * v * v * v)));
      } else {
        dst[i] = T(0.5) * v * (T(1) + std::erf(v * k_inv_sqrt2));
      }
    }
    return Status::ok_status();
  });
}

// ---- cast ----

// Writes an integer-valued source element (ints and bool) as dtype `to`.
void store_int(Tensor& out, int64_t i, int64_t v) {
  switch (out.dtype()) {
    case DType::f32: out.data<float>()[i] = static_cast<float>(v); return;
    case DType::f64: out.data<double>()[i] = static_cast<double>(v); return;
    case DType::f16: out.data<uint16_t>()[i] = float_to_f16(static_cast<float>(v)); return;
    case DType::bf16: out.data<uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); return;
    case DType::i32: out.data<int32_t>()[i] = static_cast<int32_t>(v); return;  // Wraps.
    case DType::i64: out.data<int64_t>()[i] = v; return;
    case DType::u8: out.data<uint8_t>()[i] = static_cast<uint8_t>(v); return;  // Wraps.
    case DType::boolean: out.data<uint8_t>()[i] = v != 0; return;
  }
}

Status cast(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  if (x.shape() != out.shape()) {
    return node_error(node, "result shape " + out.shape().to_string() +
                                " does not match the operand shape " + x.shape().to_string());
  }
  if (x.dtype() == out.dtype()) {
    std::memcpy(out.raw_data(), x.raw_data(), x.bytes());
    return Status::ok_status();
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (!is_floating(x.dtype())) {
      store_int(out, i, x.dtype() == DType::boolean ? (x.data<uint8_t>()[i] != 0)
                                                    : int_element(x, i));
    } else if (x.dtype() == DType::f32 && out.dtype() == DType::f16) {
      out.data<uint16_t>()[i] = float_to_f16(x.data<float>()[i]);  // One rounding.
    } else if (x.dtype() == DType::f32 && out.dtype() == DType::bf16) {
      out.data<uint16_t>()[i] = float_to_bf16(x.data<float>()[i]);
    } else {
      out.set_double(i, x.get_double(i));  // Saturating for ints, f64→f16 via f32.
    }
  }
  return Status::ok_status();
}

// ---- binary ----

struct AddF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a + b;
    else return wrap_add(a, b);
  }
};
struct SubF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a - b;
    else return wrap_sub(a, b);
  }
};
struct MulF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a * b;
    else return wrap_mul(a, b);
  }
};
struct DivF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else {
      // Truncates toward zero; b != 0 was checked. MIN / -1 wraps to MIN.
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap_sub<T>(T{0}, a);
      }
      return static_cast<T>(a / b);
    }
  }
};
struct PowF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return std::pow(a, b);
    } else {
      // b >= 0 was checked. Exact, wrapping, by repeated squaring.
      T result = 1, base = a;
      for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
      }
      return result;
    }
  }
};
struct MaximumF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
struct MinimumF {
  template <typename T> static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};
struct EqF { template <typename T> static bool apply(T a, T b) { return a == b; } };
struct NeF { template <typename T> static bool apply(T a, T b) { return a != b; } };
struct LtF { template <typename T> static bool apply(T a, T b) { return a < b; } };
struct LeF { template <typename T> static bool apply(T a, T b) { return a <= b; } };
struct GtF { template <typename T> static bool apply(T a, T b) { return a > b; } };
struct GeF { template <typename T> static bool apply(T a, T b) { return a >= b; } };
struct AndF { template <typename T> static T apply(T a, T b) { return a && b; } };
struct OrF { template <typename T> static T apply(T a, T b) { return a || b; } };

// Checks of the right operand that some integer ops need before computing.
template <typename F, typename T>
Status check_rhs(const Node& node, const Tensor& b) {
  if constexpr (!kIsFloat<T> && (std::is_same_v<F, DivF> || std::is_same_v<F, PowF>)) {
    const T* p = b.data<T>();
    for (int64_t i = 0; i < b.numel(); ++i) {
      if (std::is_same_v<F, DivF> && p[i] == 0) return node_error(node, "integer division by zero");
      if constexpr (std::is_signed_v<T>) {
        if (std::is_same_v<F, PowF> && p[i] < 0) {
          return node_error(node, "integer power with a negative exponent " + std::to_string(p[i]));
        }
      }
    }
  }
  return Status::ok_status();
}

Status check_broadcast(const Node& node, const Shape& a, const Shape& b, const Tensor& out) {
  std::optional<Shape> s = broadcast_shapes(a, b);
  if (!s || *s != out.shape()) {
    return node_error(node, "operand shapes " + a.to_string() + " and " + b.to_string() +
                                " do not broadcast to the result shape " +
                                out.shape().to_string());
  }
  return Status::ok_status();
}

template <typename F, unsigned Kinds, bool Compare>
Status binary(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.dtype() != b.dtype()) {
    return node_error(node, "operand dtypes differ: " + a.type().to_string() + " and " +
                                b.type().to_string());
  }
  WEFT_RETURN_IF_ERROR(check_broadcast(node, a.shape(), b.shape(), out));
  const DType want = Compare ? DType::boolean : a.dtype();
  if (out.dtype() != want) {
    return node_error(node, "result dtype " + std::string(dtype_name(out.dtype())) +
                                " should be " + std::string(dtype_name(want)));
  }
  return dispatch<Kinds>(node, a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using R = std::conditional_t<Compare, bool, T>;
    WEFT_RETURN_IF_ERROR((check_rhs<F, T>(node, b)));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    R* po = out.data<R>();
    for_each_row<2>(out.shape(),
                    {broadcast_strides(a.shape(), out.shape()),
                     broadcast_strides(b.shape(), out.shape())},
                    [&](int64_t o, const std::array<int64_t, 2>& off,
                        const std::array<int64_t, 2>& st, int64_t n) {
                      const T* x = pa + off[0];
                      const T* y = pb + off[1];
                      R* z = po + o;
                      if (st[0] == 1 && st[1] == 1) {
                        for (int64_t i = 0; i < n; ++i) z[i] = F::template apply<T>(x[i], y[i]);
                      } else if (st[0] == 1 && st[1] == 0) {
                        const T yv = *y;
                        for (int64_t i = 0; i < n; ++i) z[i] = F::template apply<T>(x[i], yv);
                      } else {
                        for (int64_t i = 0; i < n; ++i) {
                          z[i] = F::template apply<T>(x[i * st[0]], y[i * st[1]]);
                        }
                      }
                    });
    return Status::ok_status();
  });
}

// select(cond, a, b): a where cond else b; bit copies, so every dtype works.
template <typename E>
void select_typed(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) {
  const uint8_t* pc = c.data<uint8_t>();
  const E* pa = static_cast<const E*>(a.raw_data());
  const E* pb = static_cast<const E*>(b.raw_data());
  E* po = static_cast<E*>(out.raw_data());
  for_each_row<3>(out.shape(),
                  {broadcast_strides(c.shape(), out.shape()),
                   broadcast_strides(a.shape(), out.shape()),
                   broadcast_strides(b.shape(), out.shape())},
                  [&](int64_t o, const std::array<int64_t, 3>& off,
                      const std::array<int64_t, 3>& st, int64_t n) {
                    for (int64_t i = 0; i < n; ++i) {
                      po[o + i] = pc[off[0] + i * st[0]] ? pa[off[1] + i * st[1]]
                                                         : pb[off[2] + i * st[2]];
                    }
                  });
}

Status select(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& c = *in[0];
  const Tensor& a = *in[1];
  const Tensor& b = *in[2];
  if (c.dtype() != DType::boolean) {
    return node_error(node, "condition must be bool, not " + c.type().to_string());
  }
  if (a.dtype() != b.dtype() || out.dtype() != a.dtype()) {
    return node_error(node, "operand dtypes differ: " + a.type().to_string() + " and " +
                                b.type().to_string());
  }
  std::optional<Shape> ab = broadcast_shapes(a.shape(), b.shape());
  std::optional<Shape> s = ab ? broadcast_shapes(c.shape(), *ab) : std::nullopt;
  if (!s || *s != out.shape()) {
    return node_error(node, "operand shapes " + c.shape().to_string() + ", " +
                                a.shape().to_string() + " and " + b.shape().to_string() +
                                " do not broadcast to the result shape " +
                                out.shape().to_string());
  }
  switch (dtype_size(a.dtype())) {
    case 1: select_typed<uint8_t>(c, a, b, out); break;
    case 2: select_typed<uint16_t>(c, a, b, out); break;
    case 4: select_typed<uint32_t>(c, a, b, out); break;
    default: select_typed<uint64_t>(c, a, b, out); break;
  }
  return Status::ok_status();
}

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  constexpr unsigned kNum = kFloats | kInts;
  t.add(Op::Neg, unary<NegF, kNum>);
  t.add(Op::Abs, unary<AbsF, kNum>);
  t.add(Op::Exp, unary<ExpF, kFloats>);
  t.add(Op::Log, unary<LogF, kFloats>);
  t.add(Op::Log1p, unary<Log1pF, kFloats>);
  t.add(Op::Sqrt, unary<SqrtF, kFloats>);
  t.add(Op::Rsqrt, unary<RsqrtF, kFloats>);
  t.add(Op::Tanh, unary<TanhF, kFloats>);
  t.add(Op::Sigmoid, unary<SigmoidF, kFloats>);
  t.add(Op::Relu, unary<ReluF, kNum>);
  t.add(Op::Sin, unary<SinF, kFloats>);
  t.add(Op::Cos, unary<CosF, kFloats>);
  t.add(Op::Erf, unary<ErfF, kFloats>);
  t.add(Op::Softplus, unary<SoftplusF, kFloats>);
  t.add(Op::Sign, unary<SignF, kNum>);
  t.add(Op::Floor, unary<FloorF, kNum>);
  t.add(Op::Not, unary<NotF, kBool>);
  t.add(Op::Gelu, gelu);
  t.add(Op::Cast, cast);
  t.add(Op::Add, binary<AddF, kNum, false>);
  t.add(Op::Sub, binary<SubF, kNum, false>);
  t.add(Op::Mul, binary<MulF, kNum, false>);
  t.add(Op::Div, binary<DivF, kNum, false>);
  t.add(Op::Pow, binary<PowF, kNum, false>);
  t.add(Op::Maximum, binary<MaximumF, kNum, false>);
  t.add(Op::Minimum, binary<MinimumF, kNum, false>);
  t.add(Op::Eq, binary<EqF, kNum | kBool, true>);
  t.add(Op::Ne, binary<NeF, kNum | kBool, true>);
  t.add(Op::Lt, binary<LtF, kNum | kBool, true>);
  t.add(Op::Le, binary<LeF, kNum | kBool, true>);
  t.add(Op::Gt, binary<GtF, kNum | kBool, true>);
  t.add(Op::Ge, binary<GeF, kNum | kBool, true>);
  t.add(Op::And, binary<AndF, kBool, false>);
  t.add(Op::Or, binary<OrF, kBool, false>);
  t.add(Op::Select, select);
}

}  // namespace weft::reference

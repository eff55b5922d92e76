// Elementwise kernels: unary math, binary arithmetic and comparisons with NumPy
// broadcasting, select, gelu and cast. Semantics are documented in interpreter.h; each
// unary and binary op's scalar math is ir/scalar_math.h's (shared with the constant folder).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/gelu.h"
#include "ir/scalar_math.h"
#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

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
    for (int64_t i = 0; i < x.numel(); ++i) {
      dst[i] = use_tanh ? gelu_tanh(src[i]) : gelu_erf(src[i]);
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

// A cast to or from f16/bf16: through f32, each element rounded once from f32 (Tensor's
// converters; f64 to f16 rounds twice, via f32).
void cast_half(const Tensor& x, Tensor& out) {
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
  if (is_half(x.dtype()) || is_half(out.dtype())) {
    cast_half(x, out);
    return Status::ok_status();
  }
  constexpr unsigned kAll = kFloats | kInts | kBool;
  return dispatch<kAll>(node, x.dtype(), [&](auto from) {
    return dispatch<kAll>(node, out.dtype(), [&](auto to) -> Status {
      using T = decltype(from);
      using O = decltype(to);
      const T* src = x.data<T>();
      O* dst = out.data<O>();
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] = scalar::cast_element<O>(src[i]);
      return Status::ok_status();
    });
  });
}

// ---- binary ----

// Checks the right operand of an op that refuses some (integer div and pow) before computing.
template <typename F, typename T>
Status check_rhs(const Node& node, const Tensor& b) {
  const T* p = b.data<T>();
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (std::string why = F::template rhs_error<T>(p[i]); !why.empty()) return node_error(node, why);
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
  for (Op op : all_ops()) {
    scalar::visit_unary_math(op, [&](auto math) {
      using M = decltype(math);
      t.add(op, unary<M, M::kTypes>);
    });
    scalar::visit_binary_math(op, [&](auto math) {
      using M = decltype(math);
      t.add(op, binary<M, M::kTypes, M::kCompare>);
    });
  }
  t.add(Op::Gelu, gelu);
  t.add(Op::Cast, cast);
  t.add(Op::Select, select);
}

}  // namespace weft::reference

#include "passes/fold_constants.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "ir/scalar_math.h"

namespace weft {
namespace {

/// A uniform constant: a `full` of `dtype` whose attribute is `value` (stored into the
/// dtype as the reference interpreter's Tensor::set_double does).
struct Fill {
  DType dtype;
  double value;
};

std::optional<Fill> fill_of(const Graph& g, ValueId v) {
  int i = g.value(v).node;
  if (i < 0 || g.node(i).op != Op::Full) return std::nullopt;
  return Fill{g.node(i).dtype_attr("dtype"), g.node(i).float_attr("value")};
}

template <typename T>
constexpr bool kFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kBool = std::is_same_v<T, bool>;

/// The element a `full {value}` of T holds: cast's conversion from f64, as
/// Tensor::set_double stores it (integers truncate and saturate, NaN gives 0).
template <typename T>
T stored(double v) {
  return scalar::cast_element<T>(v);
}

/// A `full` attribute that stores exactly `r`; nullopt for NaN (printed without sign or
/// payload) and for integers a double cannot hold.
template <typename T>
std::optional<double> attr_for(T r) {
  if constexpr (kFloat<T>) {
    if (std::isnan(r)) return std::nullopt;
    return static_cast<double>(r);
  } else if constexpr (kBool<T>) {
    return r ? 1.0 : 0.0;
  } else {
    const double d = static_cast<double>(r);
    if (std::fabs(d) >= 0x1p53 || static_cast<T>(d) != r) return std::nullopt;
    return d;
  }
}

/// Calls f(T{}) with T the C++ type the reference computes `dtype` in; nullopt for
/// f16/bf16 (see the header).
template <typename F>
std::optional<double> with_type(DType dtype, F f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::boolean: return f(bool{});
    default: return std::nullopt;
  }
}

/// Whether functor M of ir/scalar_math.h takes elements of T.
template <typename M, typename T>
constexpr bool kTakes = (M::kTypes & (kFloat<T>  ? scalar::kFloats
                                      : kBool<T> ? scalar::kBool
                                                 : scalar::kInts)) != 0;

/// Whether `op`'s scalar math is folded: not transcendental ops nor pow, whose libm
/// results are not correctly rounded, so a backend may compute another value.
bool folds_math(Op op) {
  const MathClass math = op_info(op).math;
  return math != MathClass::Transcendental && math != MathClass::Power;
}

/// Unary elementwise op `op` on x, by its scalar math (ir/scalar_math.h).
template <typename T>
std::optional<double> unary(Op op, T x) {
  std::optional<double> r;
  scalar::visit_unary_math(op, [&](auto math) {
    using M = decltype(math);
    if constexpr (kTakes<M, T>) r = attr_for(M::template apply<T>(x));
  });
  return r;
}

/// Binary elementwise op `op` on a and b, by its scalar math; nullopt for a right
/// operand the interpreter refuses at run time (integer division by zero).
template <typename T>
std::optional<double> binary(Op op, T a, T b) {
  std::optional<double> r;
  scalar::visit_binary_math(op, [&](auto math) {
    using M = decltype(math);
    if constexpr (kTakes<M, T>) {
      if (M::template rhs_error<T>(b).empty()) r = attr_for(M::template apply<T>(a, b));
    }
  });
  return r;
}

/// cast's result for one element of T (scalar::cast_element).
template <typename T>
std::optional<double> cast_to(T x, DType to) {
  return with_type(to, [&](auto tag) { return attr_for(scalar::cast_element<decltype(tag)>(x)); });
}

/// sum or mean of `count` copies of x. Only f32 and integers: a float sum of fewer than
/// 2^29 equal f32 values is exact in f64 whatever the order, and integer sums wrap, so
/// the reference's accumulation order does not matter.
template <typename T>
std::optional<double> sum_of(Op op, T x, int64_t count) {
  if (count >= (int64_t{1} << 29)) return std::nullopt;
  if constexpr (std::is_same_v<T, float>) {
    // The reference starts at +0.0, so a sum of -0.0 is +0.0.
    const double acc = count == 0 ? 0.0 : 0.0 + static_cast<double>(x) * count;
    return attr_for(static_cast<float>(op == Op::Mean ? acc / static_cast<double>(count) : acc));
  } else if constexpr (!kFloat<T> && !kBool<T>) {
    if (op != Op::Sum) return std::nullopt;
    return attr_for(scalar::wrap_mul<T>(x, static_cast<T>(count)));  // count mod 2^bits
  }
  return std::nullopt;
}

/// The folded `full` value of `node`, whose operands are looked up with fill_of.
std::optional<double> fold(const Graph& g, const Node& node) {
  const Type& out = g.type(node.result());
  std::vector<Fill> in;
  for (ValueId o : node.operands) {
    std::optional<Fill> f = fill_of(g, o);
    if (!f) {
      // select needs only the condition and the operand it picks.
      if (node.op != Op::Select || in.empty()) return std::nullopt;
      f = Fill{g.type(o).dtype, std::nan("")};
    }
    in.push_back(*f);
  }
  if (in.empty()) return std::nullopt;
  const Fill& x = in[0];
  auto same_stored = [](DType d, double a, double b) {
    std::optional<double> r = with_type(d, [&](auto tag) -> std::optional<double> {
      using T = decltype(tag);
      return stored<T>(a) == stored<T>(b) && std::signbit(a) == std::signbit(b) ? 1.0 : 0.0;
    });
    return r ? *r == 1.0 : std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  };
  switch (node.op) {
    case Op::Reshape:
    case Op::Transpose:
    case Op::BroadcastTo:
    case Op::Slice:
      return x.value;
    case Op::Concat:
      for (const Fill& f : in) {
        if (std::bit_cast<uint64_t>(f.value) != std::bit_cast<uint64_t>(x.value)) return std::nullopt;
      }
      return x.value;
    case Op::Pad:
      if (!same_stored(x.dtype, node.float_attr("value"), x.value)) return std::nullopt;
      return x.value;
    case Op::Select: {
      const Fill& picked = in[x.value != 0 ? 1 : 2];
      if (std::isnan(picked.value)) return std::nullopt;  // not a constant (or a NaN fill)
      return picked.value;
    }
    case Op::Max:
    case Op::Min:
    case Op::Sum:
    case Op::Mean: {
      const int64_t count = g.type(node.operands[0]).numel() / out.numel();
      if (node.op == Op::Max || node.op == Op::Min) {
        return count > 0 ? std::optional<double>(x.value) : std::nullopt;
      }
      return with_type(x.dtype, [&](auto tag) {
        return sum_of(node.op, stored<decltype(tag)>(x.value), count);
      });
    }
    case Op::Cast:
      return with_type(x.dtype, [&](auto tag) {
        return cast_to(stored<decltype(tag)>(x.value), out.dtype);
      });
    default:
      break;
  }
  if (node.info().category != OpCategory::Elementwise || in.size() > 2 || !folds_math(node.op)) {
    return std::nullopt;
  }
  return with_type(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (in.size() == 1) return unary(node.op, stored<T>(x.value));
    if (in[1].dtype != x.dtype) return std::optional<double>();
    return binary(node.op, stored<T>(x.value), stored<T>(in[1].value));
  });
}

}  // namespace

StatusOr<bool> FoldConstantsPass::run(Graph& g) {
  bool changed = false;
  for (Node& node : g.mutable_nodes()) {
    if (node.op == Op::Full || node.results.size() != 1 || node.operands.empty()) continue;
    const std::optional<Type>& type = g.value(node.result()).type;
    if (!type || type->numel() == 0) continue;
    std::optional<double> value = fold(g, node);
    if (!value) continue;
    node.op = Op::Full;
    node.operands.clear();
    node.attrs = {{"shape", type->shape.dims}, {"value", *value}};
    if (type->dtype != DType::f32) node.attrs["dtype"] = type->dtype;
    changed = true;
  }
  return changed;
}

}  // namespace weft

#include "passes/fold_constants.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

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

/// The element a `full {value}` of T holds (Tensor::set_double: integers truncate and
/// saturate, NaN gives 0).
template <typename T>
T stored(double v) {
  if constexpr (kFloat<T> || kBool<T>) {
    return kBool<T> ? v != 0 : static_cast<T>(v);
  } else {
    if (v != v) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    if (v <= lo) return std::numeric_limits<T>::min();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
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

// Two's-complement wrapping, as the reference kernels compute integers.
template <typename T>
T wrap(uint64_t v) { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v)); }

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

template <typename T>
std::optional<double> unary(Op op, T x) {
  if constexpr (kBool<T>) {
    if (op == Op::Not) return attr_for<bool>(!x);
  } else if constexpr (kFloat<T>) {
    if (std::isnan(x)) return std::nullopt;  // sign and relu keep NaN; the rest give NaN
    switch (op) {
      case Op::Neg: return attr_for<T>(-x);
      case Op::Abs: return attr_for<T>(std::fabs(x));
      case Op::Sign: return attr_for<T>(x > 0 ? T{1} : x < 0 ? T{-1} : T{0});
      case Op::Relu: return attr_for<T>(x > 0 ? x : T{0});
      case Op::Floor: return attr_for<T>(std::floor(x));
      case Op::Sqrt: return attr_for<T>(std::sqrt(x));
      default: break;
    }
  } else {
    const uint64_t u = static_cast<uint64_t>(x);
    switch (op) {
      case Op::Neg: return attr_for<T>(wrap<T>(0 - u));
      case Op::Abs:
        if constexpr (std::is_signed_v<T>) return attr_for<T>(x < 0 ? wrap<T>(0 - u) : x);
        return attr_for<T>(x);
      case Op::Sign: return attr_for<T>(x > 0 ? T{1} : x < 0 ? static_cast<T>(-1) : T{0});
      case Op::Relu: return attr_for<T>(x > 0 ? x : T{0});
      default: break;
    }
  }
  return std::nullopt;
}

template <typename T>
std::optional<double> binary(Op op, T a, T b) {
  switch (op) {
    case Op::Eq: return attr_for<bool>(a == b);
    case Op::Ne: return attr_for<bool>(a != b);
    case Op::Lt: return attr_for<bool>(a < b);
    case Op::Le: return attr_for<bool>(a <= b);
    case Op::Gt: return attr_for<bool>(a > b);
    case Op::Ge: return attr_for<bool>(a >= b);
    default: break;
  }
  if constexpr (kBool<T>) {
    if (op == Op::And) return attr_for<bool>(a && b);
    if (op == Op::Or) return attr_for<bool>(a || b);
    return std::nullopt;
  } else {
    if constexpr (kFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::nullopt;  // NaN results: not folded
    }
    if (op == Op::Maximum) return attr_for<T>(a < b ? b : a);
    if (op == Op::Minimum) return attr_for<T>(b < a ? b : a);
    if constexpr (kFloat<T>) {
      switch (op) {
        case Op::Add: return attr_for<T>(a + b);
        case Op::Sub: return attr_for<T>(a - b);
        case Op::Mul: return attr_for<T>(a * b);
        case Op::Div: return attr_for<T>(a / b);
        default: return std::nullopt;
      }
    } else {
      const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
      switch (op) {
        case Op::Add: return attr_for<T>(wrap<T>(ua + ub));
        case Op::Sub: return attr_for<T>(wrap<T>(ua - ub));
        case Op::Mul: return attr_for<T>(wrap<T>(ua * ub));
        case Op::Div:
          if (b == 0) return std::nullopt;  // a runtime error in the interpreter
          if constexpr (std::is_signed_v<T>) {
            if (b == -1) return attr_for<T>(wrap<T>(0 - ua));
          }
          return attr_for<T>(static_cast<T>(a / b));
        default: return std::nullopt;
      }
    }
  }
}

/// cast's result for one element of T, following the reference kernel.
template <typename T>
std::optional<double> cast_to(T x, DType to) {
  if constexpr (!kFloat<T>) {
    const auto v = static_cast<int64_t>(x);
    return with_type(to, [&](auto tag) -> std::optional<double> {
      using O = decltype(tag);
      if constexpr (kBool<O>) return attr_for<bool>(v != 0);
      else return attr_for<O>(static_cast<O>(v));  // floats round, integers wrap
    });
  } else {
    return with_type(to, [&](auto tag) { return attr_for(stored<decltype(tag)>(x)); });
  }
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
    return attr_for<T>(wrap<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(count)));
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
  if (node.info().category != OpCategory::Elementwise || in.size() > 2) return std::nullopt;
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

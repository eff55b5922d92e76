#pragma once
// Each elementwise op's scalar semantics, its reference math, defined once. The reference
// interpreter's elementwise kernels apply these functors element by element
// (runtime/reference/elementwise.cc) and the constant folder evaluates a folded node with
// them (passes/fold_constants.cc), so the oracle and the folder cannot disagree:
//
//   float y = scalar::Softplus::apply(0.5f);
//   scalar::visit_binary_math(Op::Add, [&](auto math) {
//     int32_t z = decltype(math)::apply(int32_t{2147483647}, int32_t{1});  // wraps
//   });
//
// A functor's `apply<T>` computes one element in the dtype's own C++ type: f32 in float,
// f64 in double, integers wrapping in two's complement, bool. `kTypes` says which element
// types it takes; a binary functor's `kCompare` that it gives a bool; `rhs_error` (div
// and pow) why a right operand is refused on integers, a run-time error; `kQuietsNaN`
// that it returns a NaN operand quiet (`quiets_nans` below, which codegen reads). f16/bf16 have
// no C++ type here: the interpreter computes them in f32 and rounds (interpreter.h).
// gelu (its `approximate` attribute) and select are not here: their kernels are their
// definition. cast's element conversion is `cast_element`.
//
// The functors' `apply` and the visitors are WEFT_HD (ir/host_device.h): CUDA device code
// calls them too (the persistent loop kernel, runtime/cuda/recurrent_kernel_device.inc,
// computes its f32 ops with them, so it cannot disagree with the oracle's definition;
// the device's libm may round exp, tanh, … differently from the host's).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/host_device.h"
#include "ir/op.h"

namespace weft::scalar {

/// Which element types a functor takes (the reference kernel's dispatch reads it).
enum ElementTypes : unsigned { kFloats = 1, kInts = 2, kBool = 4, kNumbers = kFloats | kInts };

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

struct Neg {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T x) {
    if constexpr (kIsFloat<T>) return -x;
    else return wrap_sub<T>(T{0}, x);
  }
};
struct Abs {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T x) {
    if constexpr (kIsFloat<T>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return x < 0 ? wrap_sub<T>(T{0}, x) : x;
  }
};
struct Sign {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T x) {
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
struct Relu {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T x) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    return x > T{0} ? x : T{0};
  }
};
#define WEFT_FLOAT_UNARY(Name, expr)                            \
  struct Name {                                                 \
    static constexpr unsigned kTypes = kFloats;                 \
    template <typename T> WEFT_HD static T apply(T x) { return expr; }  \
  };
WEFT_FLOAT_UNARY(Exp, std::exp(x))
WEFT_FLOAT_UNARY(Log, std::log(x))
WEFT_FLOAT_UNARY(Log1p, std::log1p(x))
WEFT_FLOAT_UNARY(Sqrt, std::sqrt(x))
WEFT_FLOAT_UNARY(Rsqrt, T{1} / std::sqrt(x))
WEFT_FLOAT_UNARY(Tanh, std::tanh(x))
WEFT_FLOAT_UNARY(Sigmoid, T{1} / (T{1} + std::exp(-x)))
WEFT_FLOAT_UNARY(Sin, std::sin(x))
WEFT_FLOAT_UNARY(Cos, std::cos(x))
WEFT_FLOAT_UNARY(Erf, std::erf(x))
WEFT_FLOAT_UNARY(Softplus, std::max(x, T{0}) + std::log1p(std::exp(-std::fabs(x))))
#undef WEFT_FLOAT_UNARY
struct Floor {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T x) {
    if constexpr (kIsFloat<T>) return std::floor(x);
    else return x;
  }
};
struct Not {
  static constexpr unsigned kTypes = kBool;
  template <typename T> WEFT_HD static T apply(T x) { return !x; }
};

// ---- binary ----

/// A binary functor that refuses no right operand and gives its operands' type.
struct TotalBinary {
  static constexpr bool kCompare = false;
  /// Whether a float NaN operand comes back as a quiet NaN whether it was signalling or
  /// quiet, so that the result's bits do not depend on the operand's quiet bit: IEEE 754
  /// arithmetic (add, sub, mul, div) returns its NaN operand with the quiet bit set (x86)
  /// or the canonical NaN (a GPU). False for the rest: maximum and minimum compare and
  /// select, and give a NaN they make, not their operand made quiet (left out, as before
  /// this table: codegen:kernel_half_test pins that a cast they read keeps its quieting),
  /// pow(NaN, 0) is 1 for a quiet NaN and a NaN for a signalling one (glibc), the
  /// comparisons give bools.
  static constexpr bool kQuietsNaN = false;
  template <typename T> static std::string rhs_error(T) { return {}; }
};

struct Add : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  static constexpr bool kQuietsNaN = true;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a + b;
    else return wrap_add(a, b);
  }
};
struct Sub : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  static constexpr bool kQuietsNaN = true;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a - b;
    else return wrap_sub(a, b);
  }
};
struct Mul : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  static constexpr bool kQuietsNaN = true;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) return a * b;
    else return wrap_mul(a, b);
  }
};
struct Div : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  static constexpr bool kQuietsNaN = true;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else {
      // Truncates toward zero; b != 0 was checked (rhs_error). MIN / -1 wraps to MIN.
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap_sub<T>(T{0}, a);
      }
      return static_cast<T>(a / b);
    }
  }
  template <typename T> static std::string rhs_error(T b) {
    if constexpr (!kIsFloat<T>) {
      if (b == 0) return "integer division by zero";
    }
    return {};
  }
};
struct Pow : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return std::pow(a, b);
    } else {
      // b >= 0 was checked (rhs_error). Exact, wrapping, by repeated squaring.
      T result = 1, base = a;
      for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
      }
      return result;
    }
  }
  template <typename T> static std::string rhs_error(T b) {
    if constexpr (!kIsFloat<T> && std::is_signed_v<T>) {
      if (b < 0) return "integer power with a negative exponent " + std::to_string(b);
    }
    return {};
  }
};
struct Maximum : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
struct Minimum : TotalBinary {
  static constexpr unsigned kTypes = kNumbers;
  template <typename T> WEFT_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};
/// A comparison: any number or bool in, a bool out.
struct Comparison : TotalBinary {
  static constexpr unsigned kTypes = kNumbers | kBool;
  static constexpr bool kCompare = true;
};
struct Eq : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a == b; } };
struct Ne : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a != b; } };
struct Lt : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a < b; } };
struct Le : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a <= b; } };
struct Gt : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a > b; } };
struct Ge : Comparison { template <typename T> WEFT_HD static bool apply(T a, T b) { return a >= b; } };
struct And : TotalBinary {
  static constexpr unsigned kTypes = kBool;
  template <typename T> WEFT_HD static T apply(T a, T b) { return a && b; }
};
struct Or : TotalBinary {
  static constexpr unsigned kTypes = kBool;
  template <typename T> WEFT_HD static T apply(T a, T b) { return a || b; }
};

/// Calls `f(M{})` with M the scalar math of unary elementwise op `op`; false (and no
/// call) when `op` has none here.
template <typename F>
WEFT_HD bool visit_unary_math(Op op, F&& f) {
  switch (op) {
    case Op::Neg: f(Neg{}); return true;
    case Op::Abs: f(Abs{}); return true;
    case Op::Exp: f(Exp{}); return true;
    case Op::Log: f(Log{}); return true;
    case Op::Log1p: f(Log1p{}); return true;
    case Op::Sqrt: f(Sqrt{}); return true;
    case Op::Rsqrt: f(Rsqrt{}); return true;
    case Op::Tanh: f(Tanh{}); return true;
    case Op::Sigmoid: f(Sigmoid{}); return true;
    case Op::Relu: f(Relu{}); return true;
    case Op::Sin: f(Sin{}); return true;
    case Op::Cos: f(Cos{}); return true;
    case Op::Erf: f(Erf{}); return true;
    case Op::Softplus: f(Softplus{}); return true;
    case Op::Sign: f(Sign{}); return true;
    case Op::Floor: f(Floor{}); return true;
    case Op::Not: f(Not{}); return true;
    default: return false;
  }
}

/// Calls `f(M{})` with M the scalar math of binary elementwise op `op`; false (and no
/// call) when `op` has none here.
template <typename F>
WEFT_HD bool visit_binary_math(Op op, F&& f) {
  switch (op) {
    case Op::Add: f(Add{}); return true;
    case Op::Sub: f(Sub{}); return true;
    case Op::Mul: f(Mul{}); return true;
    case Op::Div: f(Div{}); return true;
    case Op::Pow: f(Pow{}); return true;
    case Op::Maximum: f(Maximum{}); return true;
    case Op::Minimum: f(Minimum{}); return true;
    case Op::Eq: f(Eq{}); return true;
    case Op::Ne: f(Ne{}); return true;
    case Op::Lt: f(Lt{}); return true;
    case Op::Le: f(Le{}); return true;
    case Op::Gt: f(Gt{}); return true;
    case Op::Ge: f(Ge{}); return true;
    case Op::And: f(And{}); return true;
    case Op::Or: f(Or{}); return true;
    default: return false;
  }
}

/// Calls `f(M{})` with M the binary math that float reduction `op` combines its elements
/// with: add for sum and for mean (which then divides by the count); false (and no call)
/// for max, min and argmax, which pick an element.
template <typename F>
WEFT_HD bool visit_reduction_math(Op op, F&& f) {
  switch (op) {
    case Op::Sum:
    case Op::Mean: f(Add{}); return true;
    default: return false;
  }
}

/// Whether op `op` returns a quiet NaN from a NaN float operand, signalling or not, so its
/// result does not depend on that operand's quiet bit: a binary op whose math says so
/// (kQuietsNaN: add, sub, mul, div), or a reduction that combines with one (sum, mean;
/// mean's division by the count quiets too). codegen reads it: a widening cast of a half
/// value to f32 that only such ops read need not set the quiet bit itself
/// (codegen/emit_elementwise.cc). ir:scalar_math_test feeds signalling NaNs through the
/// math of every op that says so.
inline bool quiets_nans(Op op) {
  bool quiets = false;
  const auto read = [&](auto math) { quiets = decltype(math)::kQuietsNaN; };
  if (!visit_binary_math(op, read)) visit_reduction_math(op, read);
  return quiets;
}

/// cast's conversion of one element from T to O (neither f16 nor bf16): an integer or
/// bool source goes through int64 (to a float: rounded; to an integer: wrapped; to bool:
/// != 0); a float source is rounded to a float, truncated and saturated to an integer
/// (NaN gives 0, saturating_cast), or != 0 for bool (NaN is true).
template <typename O, typename T>
O cast_element(T x) {
  if constexpr (!kIsFloat<T>) {
    const auto v = static_cast<int64_t>(x);
    if constexpr (std::is_same_v<O, bool>) return v != 0;
    else return static_cast<O>(v);
  } else if constexpr (std::is_same_v<O, bool>) {
    return x != 0;
  } else if constexpr (kIsFloat<O>) {
    return static_cast<O>(x);
  } else {
    return saturating_cast<O>(static_cast<double>(x));
  }
}

}  // namespace weft::scalar

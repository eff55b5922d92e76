#pragma once
// Element types of IR values. Names are part of the `.wir` and JSON formats.

#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>

namespace weft {

enum class DType { f32, f64, f16, bf16, i32, i64, u8, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                                       DType::i32, DType::i64, DType::u8,  DType::boolean};

/// The printed name: `f32 f64 f16 bf16 i32 i64 u8 bool`.
std::string_view dtype_name(DType dtype);
/// Parses a printed name; nullopt if it is not a dtype.
std::optional<DType> parse_dtype(std::string_view name);
/// Bytes per element in memory (bool is one byte).
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);  ///< f32, f64, f16, bf16
bool is_integer(DType dtype);   ///< i32, i64, u8 (not bool)
/// f16 and bf16: the 16-bit floats, mixed precision's low dtypes.
constexpr bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

/// Converts a double to an integer type: truncates toward zero, saturates at the type's
/// range, NaN gives 0. This is weft's float-to-integer `cast` everywhere (Tensor's
/// set_double, ir/scalar_math.h's cast_element).
template <typename I>
I saturating_cast(double v) {
  if (v != v) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  // 2^63 is exactly representable; max() of int64 is not, so compare with >=.
  constexpr double hi_exclusive = static_cast<double>(std::numeric_limits<I>::max()) + 1.0;
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi_exclusive) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace weft

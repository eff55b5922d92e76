#pragma once
// Overflow-checked int64 arithmetic for sizes computed from user input: shape attributes,
// declared types, `.npy` headers. Signed overflow is undefined behaviour in C++, so every
// size that a hostile file can make huge goes through these, and the caller turns an
// overflow into a user error naming the op, the attribute and the value (or the file).
//
//   Checked span = Checked(dilation) * (Checked(kernel) - 1) + 1;
//   if (!span.ok()) return rule_error("dilation ... times kernel ... overflows int64");
//   int64_t s = span.value();
//
// Sizes follow NumPy's rule: the product of a shape's non-zero dims must fit, even when
// another dim is 0 (`f32[0,2^40,2^40]` is refused like `f32[2^40,2^40]`). With that rule
// row-major strides, element counts and byte sizes of every accepted type are
// representable.

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/dtype.h"

namespace weft {

/// An int64 that remembers whether any operation producing it overflowed. Once
/// overflowed, it stays so through further arithmetic.
class Checked {
 public:
  Checked(int64_t v) : value_(v) {}  // NOLINT: implicit by design, so literals mix in

  bool ok() const { return ok_; }
  /// The exact result; only meaningful when `ok()`.
  int64_t value() const { return value_; }
  std::optional<int64_t> get() const { return ok_ ? std::optional<int64_t>(value_) : std::nullopt; }

  // The builtin writes a.value_, so it must run before `a` is passed on: function
  // arguments are evaluated in an unspecified order (GCC happened to go right to left,
  // clang goes left to right and passed the old value: every product was its first
  // factor; found by tests/fuzz:idx_reader_fuzzer).
  friend Checked operator+(Checked a, Checked b) {
    const bool overflowed = __builtin_add_overflow(a.value_, b.value_, &a.value_);
    return combine(a, b, overflowed);
  }
  friend Checked operator-(Checked a, Checked b) {
    const bool overflowed = __builtin_sub_overflow(a.value_, b.value_, &a.value_);
    return combine(a, b, overflowed);
  }
  friend Checked operator*(Checked a, Checked b) {
    const bool overflowed = __builtin_mul_overflow(a.value_, b.value_, &a.value_);
    return combine(a, b, overflowed);
  }
  /// Truncating division; dividing by 0 or INT64_MIN by -1 does not fit.
  friend Checked operator/(Checked a, Checked b) {
    const bool bad = b.value_ == 0 || (b.value_ == -1 && a.value_ == INT64_MIN);
    if (!bad) a.value_ /= b.value_;
    return combine(a, b, bad);
  }

 private:
  static Checked combine(Checked result, const Checked& b, bool overflowed) {
    result.ok_ = result.ok_ && b.ok_ && !overflowed;
    return result;
  }

  int64_t value_;
  bool ok_ = true;
};

/// The product of the non-zero entries of `dims`, times `scale`: the extent NumPy
/// requires to fit. nullopt when it overflows int64 (or an entry is negative).
inline std::optional<int64_t> checked_extent(const std::vector<int64_t>& dims,
                                             int64_t scale = 1) {
  Checked n = scale;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0) n = n * d;
  }
  return n.get();
}

/// The element count of a shape with `dims` (0 when a dim is 0); nullopt when the
/// shape's extent overflows int64.
inline std::optional<int64_t> checked_numel(const std::vector<int64_t>& dims) {
  std::optional<int64_t> extent = checked_extent(dims);
  if (!extent) return std::nullopt;
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  return extent;
}

/// Whether a value of `dtype` and shape `dims` has a size in bytes that fits in int64
/// (under NumPy's rule above). Types that fail this cannot be measured, let alone
/// allocated: `Shape::numel` and `Type::bytes` require it.
inline bool size_fits(DType dtype, const std::vector<int64_t>& dims) {
  return checked_extent(dims, static_cast<int64_t>(dtype_size(dtype))).has_value();
}

}  // namespace weft

#pragma once
// Host tensors: a `Type` (dtype + static shape) and owned, 64-byte-aligned, row-major
// storage. The reference interpreter, the NumPy interchange and the tests share them.
//
//   weft::Tensor t({DType::f32, {2, 3}});          // zero-filled f32[2,3]
//   float* p = t.data<float>();                     // typed access, checked against dtype
//   auto u = weft::Tensor::from_vector<float>({3}, {1, 2, 3});
//   std::string why;
//   bool same = weft::all_close(t, u, /*tol=*/1e-6, &why);
//
// Element storage by dtype: f32 `float`, f64 `double`, i32 `int32_t`, i64 `int64_t`,
// u8 `uint8_t`, bool one byte holding 0 or 1 (`bool` or `uint8_t` access), f16 and bf16
// their IEEE/bfloat16 bit patterns as `uint16_t` (convert with the helpers below).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"  // saturating_cast
#include "ir/shape.h"
#include "ir/status.h"

namespace weft {

/// Converts a float to IEEE binary16 bits, rounding to nearest even; overflow gives
/// ±inf, NaN stays a (quiet) NaN.
uint16_t float_to_f16(float value);
/// Converts IEEE binary16 bits to float (exact).
float f16_to_float(uint16_t bits);
/// Converts a float to bfloat16 bits, rounding to nearest even; NaN stays a quiet NaN.
uint16_t float_to_bf16(float value);
/// Converts bfloat16 bits to float (exact).
float bf16_to_float(uint16_t bits);

/// True when elements of `dtype` may be accessed as `T` (see the table above).
template <typename T>
constexpr bool dtype_matches(DType dtype) {
  if constexpr (std::is_same_v<T, float>) return dtype == DType::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype == DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return dtype == DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return dtype == DType::i64;
  else if constexpr (std::is_same_v<T, uint8_t>) return dtype == DType::u8 || dtype == DType::boolean;
  else if constexpr (std::is_same_v<T, bool>) return dtype == DType::boolean;
  else if constexpr (std::is_same_v<T, uint16_t>) return is_half(dtype);
  else return false;
}

/// A dense host tensor owning its storage. Copying copies the data.
class Tensor {
 public:
  /// An f32 scalar holding 0.
  Tensor() : Tensor(Type{DType::f32, Shape{}}) {}
  /// A zero-filled tensor of `type`.
  explicit Tensor(Type type);
  /// The same, or an error when memory runs out ("out of memory: f32[...] needs N bytes")
  /// rather than std::bad_alloc: for sizes that come from files and users.
  static StatusOr<Tensor> try_create(Type type);
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  /// A tensor of `shape` holding `values` (row-major); the dtype follows `T`
  /// (`uint16_t` is not allowed: use `from_floats` for f16/bf16).
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  /// A tensor of any dtype from doubles, each converted as `set_double` does.
  static Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values);
  /// A scalar of `dtype` holding `value`.
  static Tensor scalar(DType dtype, double value);

  const Type& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int rank() const { return type_.shape.rank(); }
  int64_t numel() const { return type_.numel(); }
  size_t bytes() const { return type_.bytes(); }

  /// Typed element access; `T` must match the dtype (an internal error otherwise).
  template <typename T>
  T* data() {
    WEFT_CHECK(dtype_matches<T>(type_.dtype), "Tensor::data: element type does not match " +
                                                  type_.to_string());
    return reinterpret_cast<T*>(storage_.get());
  }
  template <typename T>
  const T* data() const {
    return const_cast<Tensor*>(this)->data<T>();
  }
  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }

  /// Element `i` (row-major) converted to double; f16/bf16 are decoded, bool is 0/1.
  double get_double(int64_t i) const;
  /// Stores `v` at element `i`, converted to the dtype: rounded to nearest even for
  /// f32/f16/bf16, truncated toward zero and saturated for integers (NaN gives 0),
  /// `v != 0` for bool.
  void set_double(int64_t i, double v);
  /// All elements as doubles.
  std::vector<double> to_doubles() const;

  /// Same type and identical bytes.
  bool operator==(const Tensor& other) const;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  Type type_;
  std::unique_ptr<std::byte[], Free> storage_;
};

/// `t` with its elements converted to `dtype` (the same shape): floats rounded to nearest
/// even (f32 to f16/bf16 in one rounding, f64 to f16/bf16 through f32), f16/bf16 widened
/// exactly, integers truncated toward zero and saturated (NaN gives 0), bool `v != 0` —
/// each element as `set_double(i, t.get_double(i))` stores it; the same dtype is a copy.
/// The one element conversion of the host: the reference interpreter's widening of
/// f16/bf16 operands and the training step's derived weight copies
/// (training/derived_state.h) both call it.
Tensor to_dtype(const Tensor& t, DType dtype);

/// True when `a` and `b` have the same type and every element satisfies
/// |a - b| <= tol + tol * |b| (NaN matches only NaN, infinities must be equal). On a
/// mismatch, `why` (if given) names the first differing element and the count.
bool all_close(const Tensor& a, const Tensor& b, double tol, std::string* why = nullptr);

/// Short human-readable dump: type and up to `max_elements` values.
std::string tensor_to_string(const Tensor& t, int max_elements = 16);

// ---- implementation details ----

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  static_assert(!std::is_same_v<T, uint16_t>, "use from_doubles for f16/bf16");
  DType dtype;
  if constexpr (std::is_same_v<T, float>) dtype = DType::f32;
  else if constexpr (std::is_same_v<T, double>) dtype = DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) dtype = DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) dtype = DType::i64;
  else if constexpr (std::is_same_v<T, uint8_t>) dtype = DType::u8;
  else if constexpr (std::is_same_v<T, bool>) dtype = DType::boolean;
  else static_assert(sizeof(T) == 0, "unsupported element type");
  Tensor t(Type{dtype, std::move(shape)});
  WEFT_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
             "Tensor::from_vector: " + std::to_string(values.size()) + " values for " +
                 t.type().to_string());
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace weft

#pragma once
// Static shapes and types. Every IR value has a fully known shape after inference.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace weft {

/// A static shape: rank = dims.size(); a scalar has no dims.
struct Shape {
  std::vector<int64_t> dims;

  Shape() = default;
  Shape(std::vector<int64_t> d) : dims(std::move(d)) {}  // NOLINT: implicit by design
  Shape(std::initializer_list<int64_t> d) : dims(d) {}

  int rank() const { return static_cast<int>(dims.size()); }
  /// The element count. The shape's size must fit in int64 (`size_fits` in
  /// ir/checked_math.h); an overflow is an internal error, never wrapped.
  int64_t numel() const;
  int64_t operator[](int i) const { return dims[i]; }
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;
  /// `[4,6]`, `[]` for a scalar.
  std::string to_string() const;
  bool operator==(const Shape&) const = default;
};

/// NumPy broadcasting of two shapes; nullopt when they are incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

/// For an operand with dims `dims` broadcast (NumPy rules: size-1 and missing leading
/// dims repeat) to `out`, the operand's flat index of each of `out`'s elements in
/// row-major order: the batch entries a batched matmul reads (runtime/cpu, runtime/cuda).
std::vector<int64_t> broadcast_entries(const std::vector<int64_t>& dims, const Shape& out);

/// Normalizes a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int> normalize_axis(int64_t axis, int rank);

/// The type of an IR value: dtype and static shape.
struct Type {
  DType dtype = DType::f32;
  Shape shape;

  /// `f32[4,6]`, `f32[]` for a scalar.
  std::string to_string() const;
  int64_t numel() const { return shape.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool operator==(const Type&) const = default;
};

}  // namespace weft

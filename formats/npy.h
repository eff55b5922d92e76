#pragma once
// NumPy `.npy` interchange for host tensors, so data and test fixtures can be made and
// checked with NumPy (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 when the header needs it).
// Only C-order arrays of these little-endian dtypes are supported:
//   <f4 f32   <f8 f64   <f2 f16   <i4 i32   <i8 i64   |u1 u8   |b1 bool
// bf16 has no NumPy dtype, so `write_npy` refuses it. Every problem with a file (bad
// magic, truncated header or data, malformed header dictionary, unsupported dtype,
// Fortran order, trailing bytes) is an `Error` whose location names the file.
//
//   WEFT_ASSIGN_OR_RETURN(Tensor x, weft::read_npy("x.npy"));
//   WEFT_RETURN_IF_ERROR(weft::write_npy("y.npy", y));

#include <string>
#include <string_view>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// Reads an `.npy` file.
StatusOr<Tensor> read_npy(const std::string& path);
/// Writes `t` as an `.npy` file atomically: to a temporary file in the same directory,
/// then renamed over `path`.
Status write_npy(const std::string& path, const Tensor& t);

/// Parses the bytes of an `.npy` file; `name_for_errors` is the file named in errors.
StatusOr<Tensor> parse_npy(std::string_view bytes, const std::string& name_for_errors);
/// The bytes of an `.npy` file holding `t`; fails for bf16 (`name_for_errors` as above).
StatusOr<std::string> serialize_npy(const Tensor& t, const std::string& name_for_errors = "");

/// The NumPy dtype string (`<f4`, `|b1`, ...) of `dtype`; empty for bf16.
std::string_view npy_descr(DType dtype);

}  // namespace weft

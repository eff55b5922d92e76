#include "ir/dtype.h"

namespace weft {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f64:
    case DType::i64: return 8;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::u8:
    case DType::boolean: return 1;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || is_half(dtype);
}

bool is_integer(DType dtype) {
  return dtype == DType::i32 || dtype == DType::i64 || dtype == DType::u8;
}

}  // namespace weft

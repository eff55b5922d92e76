#include "runtime/tensor.h"

#include <cmath>
#include <cstdlib>
#include <new>

#include "ir/text_util.h"
#include "runtime/half_bits.h"

namespace weft {
namespace {

constexpr size_t kAlignment = 64;

std::byte* allocate(size_t bytes) {
  // Round up so aligned_alloc's size is a multiple of the alignment; never allocate 0.
  size_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (size == 0) size = kAlignment;
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return static_cast<std::byte*>(p);
}

}  // namespace

// The conversions are runtime/half_bits.h's (shared with CUDA device code).
uint16_t float_to_f16(float value) { return half_bits::float_to_f16(value); }
float f16_to_float(uint16_t bits) { return half_bits::f16_to_float(bits); }
uint16_t float_to_bf16(float value) { return half_bits::float_to_bf16(value); }
float bf16_to_float(uint16_t bits) { return half_bits::bf16_to_float(bits); }

void Tensor::Free::operator()(std::byte* p) const { std::free(p); }

Tensor::Tensor(Type type) : type_(std::move(type)) {
  for (int64_t d : type_.shape.dims) WEFT_CHECK(d >= 0, "negative dimension in " + type_.to_string());
  storage_.reset(allocate(type_.bytes()));
}

StatusOr<Tensor> Tensor::try_create(Type type) {
  try {
    return Tensor(type);
  } catch (const std::bad_alloc&) {
    return Error{"out of memory: " + type.to_string() + " needs " + std::to_string(type.bytes()) + " bytes"};
  }
}

Tensor::Tensor(const Tensor& other) : type_(other.type_), storage_(allocate(other.bytes())) {
  if (other.bytes() > 0) std::memcpy(storage_.get(), other.storage_.get(), other.bytes());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor Tensor::from_doubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(Type{dtype, std::move(shape)});
  WEFT_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
             "Tensor::from_doubles: " + counted(static_cast<int64_t>(values.size()), "value") + " for " +
                 t.type().to_string());
  for (size_t i = 0; i < values.size(); ++i) t.set_double(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) { return from_doubles(dtype, Shape{}, {value}); }

double Tensor::get_double(int64_t i) const {
  const std::byte* p = storage_.get();
  switch (type_.dtype) {
    case DType::f32: return reinterpret_cast<const float*>(p)[i];
    case DType::f64: return reinterpret_cast<const double*>(p)[i];
    case DType::f16: return f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::i32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::i64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::u8: return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::boolean: return reinterpret_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set_double(int64_t i, double v) {
  std::byte* p = storage_.get();
  switch (type_.dtype) {
    case DType::f32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::f64: reinterpret_cast<double*>(p)[i] = v; return;
    // Through f32: a double rounding, exact for every value that is already an f32.
    case DType::f16: reinterpret_cast<uint16_t*>(p)[i] = float_to_f16(static_cast<float>(v)); return;
    case DType::bf16: reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); return;
    case DType::i32: reinterpret_cast<int32_t*>(p)[i] = saturating_cast<int32_t>(v); return;
    case DType::i64: reinterpret_cast<int64_t*>(p)[i] = saturating_cast<int64_t>(v); return;
    case DType::u8: reinterpret_cast<uint8_t*>(p)[i] = saturating_cast<uint8_t>(v); return;
    case DType::boolean: reinterpret_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0; return;
  }
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = get_double(i);
  return out;
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out(Type{dtype, t.shape()});
  const int64_t n = t.numel();
  if (t.dtype() == DType::f32 && is_half(dtype)) {
    // One rounding from f32 (what set_double does through a double, without the double).
    const float* from = t.data<float>();
    uint16_t* to = out.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) to[i] = dtype == DType::f16 ? float_to_f16(from[i]) : float_to_bf16(from[i]);
    return out;
  }
  for (int64_t i = 0; i < n; ++i) out.set_double(i, t.get_double(i));
  return out;
}

bool Tensor::operator==(const Tensor& other) const {
  return type_ == other.type_ && std::memcmp(storage_.get(), other.storage_.get(), bytes()) == 0;
}

bool all_close(const Tensor& a, const Tensor& b, double tol, std::string* why) {
  if (a.type() != b.type()) {
    if (why) *why = "types differ: " + a.type().to_string() + " vs " + b.type().to_string();
    return false;
  }
  int64_t bad = 0, first = -1;
  double first_a = 0, first_b = 0;
  // i64 values beyond 2^53 lose precision as doubles; compare those exactly.
  const bool exact_i64 = a.dtype() == DType::i64;
  for (int64_t i = 0; i < a.numel(); ++i) {
    bool ok;
    double x = a.get_double(i), y = b.get_double(i);
    if (exact_i64) {
      ok = a.data<int64_t>()[i] == b.data<int64_t>()[i];
    } else if (std::isnan(x) || std::isnan(y)) {
      ok = std::isnan(x) && std::isnan(y);
    } else if (std::isinf(x) || std::isinf(y)) {
      ok = x == y;
    } else {
      ok = std::fabs(x - y) <= tol + tol * std::fabs(y);
    }
    if (!ok) {
      if (bad == 0) {
        first = i;
        first_a = x;
        first_b = y;
      }
      ++bad;
    }
  }
  if (bad == 0) return true;
  if (why) {
    // Name the first mismatch by its multi-index.
    std::string index = "[";
    std::vector<int64_t> strides = a.shape().strides();
    int64_t rest = first;
    for (size_t d = 0; d < strides.size(); ++d) {
      index += (d ? "," : "") + std::to_string(rest / strides[d]);
      rest %= strides[d];
    }
    index += "]";
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: element %s is %.9g, expected %.9g (tol %g); ",
                  a.type().to_string().c_str(), index.c_str(), first_a, first_b, tol);
    *why = std::string(buf) + std::to_string(bad) + " of " + counted(a.numel(), "element") +
           (bad == 1 ? " differs" : " differ");
  }
  return false;
}

std::string tensor_to_string(const Tensor& t, int max_elements) {
  std::string out = t.type().to_string() + " {";
  for (int64_t i = 0; i < t.numel() && i < max_elements; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.7g", i ? ", " : "", t.get_double(i));
    out += buf;
  }
  if (t.numel() > max_elements) out += ", ...";
  return out + "}";
}

}  // namespace weft

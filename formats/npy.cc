#include "formats/npy.h"


#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>

#include "ir/checked_math.h"
#include "formats/file_io.h"

namespace weft {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location{file, 0, 0, ""}};
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A parser for the Python-literal dictionary NumPy writes, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only strings, True/False and tuples of non-negative integers are accepted as values.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  /// Parses the dictionary; on failure returns a description of what was wrong.
  std::optional<std::string> parse(Header* out) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    if (!eat('{')) return "expected '{' at the start";
    while (true) {
      skip_space();
      if (eat('}')) break;
      std::string key;
      if (!parse_string(&key)) return "expected a quoted key";
      skip_space();
      if (!eat(':')) return "expected ':' after '" + key + "'";
      skip_space();
      if (key == "descr") {
        if (!parse_string(&out->descr)) return "'descr' is not a string";
        have_descr = true;
      } else if (key == "fortran_order") {
        if (s_.substr(pos_, 4) == "True") {
          out->fortran_order = true;
          pos_ += 4;
        } else if (s_.substr(pos_, 5) == "False") {
          out->fortran_order = false;
          pos_ += 5;
        } else {
          return "'fortran_order' is not True or False";
        }
        have_order = true;
      } else if (key == "shape") {
        if (auto err = parse_shape(&out->shape)) return err;
        have_shape = true;
      } else {
        return "unexpected key '" + key + "'";
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return "expected ',' or '}' after '" + key + "'";
    }
    skip_space();
    if (pos_ != s_.size()) return "unexpected text after '}'";
    if (!have_descr) return "missing key 'descr'";
    if (!have_order) return "missing key 'fortran_order'";
    if (!have_shape) return "missing key 'shape'";
    return std::nullopt;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool parse_string(std::string* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string_view::npos) return false;
    *out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  std::optional<std::string> parse_shape(std::vector<int64_t>* dims) {
    if (!eat('(')) return "'shape' is not a tuple";
    while (true) {
      skip_space();
      if (eat(')')) return std::nullopt;
      if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        return "'shape' holds something other than non-negative integers";
      }
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (int64_t{1} << 50)) return "'shape' has a dimension too large";
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs.
      dims->push_back(v);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat(')')) return std::nullopt;
      return "'shape' is not a well-formed tuple";
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::optional<DType> dtype_from_descr(std::string_view descr) {
  for (DType d : kAllDTypes) {
    if (!npy_descr(d).empty() && npy_descr(d) == descr) return d;
  }
  // NumPy spells one-byte types with '|', but '<' and '=' mean the same there.
  if (descr == "<u1" || descr == "=u1") return DType::u8;
  if (descr == "<b1" || descr == "=b1") return DType::boolean;
  return std::nullopt;
}

uint32_t read_le(std::string_view bytes, size_t pos, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[pos + i]);
  return v;
}

}  // namespace

std::string_view npy_descr(DType dtype) {
  switch (dtype) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::f16: return "<f2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u8: return "|u1";
    case DType::boolean: return "|b1";
    case DType::bf16: return "";
  }
  return "";
}

StatusOr<Tensor> parse_npy(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return file_error(name, "not a .npy file: bad magic string (expected \\x93NUMPY)");
  }
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3) {
    return file_error(name, "unsupported .npy format version " + std::to_string(major) + "." +
                                std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t prefix = major == 1 ? 10 : 12;
  if (bytes.size() < prefix) return file_error(name, "truncated .npy header");
  const size_t header_len = read_le(bytes, 8, major == 1 ? 2 : 4);
  if (header_len > bytes.size() - prefix) {
    return file_error(name, "header length " + std::to_string(header_len) +
                                " runs past the end of the file (" +
                                std::to_string(bytes.size()) + " bytes)");
  }
  std::string_view header_text = bytes.substr(prefix, header_len);
  Header header;
  if (auto err = HeaderParser(header_text).parse(&header)) {
    return file_error(name, "malformed .npy header: " + *err);
  }
  if (header.descr.size() >= 1 && header.descr[0] == '>') {
    return file_error(name, "big-endian dtype '" + header.descr +
                                "' is not supported; save a little-endian array, e.g. "
                                "arr.astype(arr.dtype.newbyteorder('<'))");
  }
  std::optional<DType> dtype = dtype_from_descr(header.descr);
  if (!dtype) {
    return file_error(name, "unsupported dtype '" + header.descr +
                                "' (supported: <f4 <f8 <f2 <i4 <i8 |u1 |b1)");
  }
  if (header.fortran_order) {
    return file_error(name, "Fortran-order arrays are not supported; save a C-order array, "
                            "e.g. np.ascontiguousarray(arr)");
  }
  Type type{*dtype, Shape(header.shape)};
  // Measure the array before anything multiplies its dims (Shape::numel requires it).
  // As NumPy does, a 0 dim does not excuse the others: (10**16, 10**16, 0) is refused.
  if (!size_fits(type.dtype, type.shape.dims)) {
    return file_error(name, "shape " + type.shape.to_string() + " of " + header.descr +
                                " is too large: its size in bytes does not fit in 64 bits");
  }
  const size_t data_start = prefix + header_len;
  const size_t available = bytes.size() - data_start;
  if (type.bytes() > available) {
    return file_error(name, "data is truncated: shape " + type.shape.to_string() + " of " +
                                header.descr + " needs " + std::to_string(type.bytes()) +
                                " bytes, the file has " + std::to_string(available));
  }
  if (type.bytes() < available) {
    return file_error(name, std::to_string(available - type.bytes()) +
                                " bytes of trailing data after the array");
  }
  StatusOr<Tensor> made = Tensor::try_create(type);
  if (!made.ok()) return file_error(name, made.error().message);
  Tensor& t = *made;
  if (type.bytes() > 0) std::memcpy(t.raw_data(), bytes.data() + data_start, type.bytes());
  if (*dtype == DType::boolean) {
    const uint8_t* b = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (b[i] > 1) {
        return file_error(name, "bool data holds byte value " + std::to_string(b[i]) +
                                    " at element " + std::to_string(i) + " (expected 0 or 1)");
      }
    }
  }
  return made;
}

StatusOr<std::string> serialize_npy(const Tensor& t, const std::string& name) {
  if (t.dtype() == DType::bf16) {
    return file_error(name, "cannot write a bf16 tensor as .npy: NumPy has no bfloat16 dtype; "
                            "cast it to f32 first");
  }
  std::string dict = "{'descr': '" + std::string(npy_descr(t.dtype())) +
                     "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank(); ++i) {
    dict += std::to_string(t.shape().dims[i]) + (t.rank() == 1 ? "," : i + 1 < t.rank() ? ", " : "");
  }
  dict += "), }";
  // Pad with spaces and a final newline so that the data starts 64-byte aligned.
  size_t prefix = 10;
  int major = 1;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 0xffff) {
    major = 2;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  const size_t header_len = total - prefix;
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  out.append(static_cast<const char*>(t.raw_data()), t.bytes());
  return out;
}

StatusOr<Tensor> read_npy(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_npy(bytes, path);
}

Status write_npy(const std::string& path, const Tensor& t) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, serialize_npy(t, path));
  return write_file_atomically(path, bytes);
}

}  // namespace weft

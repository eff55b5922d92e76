#include "training/flag_values.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace weft {
namespace {

// std::from_chars takes exactly the syntax the header promises for whole numbers: an
// optional '-' for signed types, then digits; the whole text must be consumed.
template <typename T>
FlagNumber<T> parse_integer(std::string_view text) {
  FlagNumber<T> n;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, n.value);
  if (ec == std::errc::invalid_argument || ptr != end) {
    n.malformed = true;
  } else if (ec == std::errc::result_out_of_range) {
    n.out_of_range = true;
  }
  return n;
}

}  // namespace

FlagNumber<int64_t> parse_whole_number(std::string_view text) {
  return parse_integer<int64_t>(text);
}

FlagNumber<uint64_t> parse_unsigned_number(std::string_view text) {
  return parse_integer<uint64_t>(text);
}

FlagNumber<double> parse_real_number(std::string_view text) {
  FlagNumber<double> n;
  const std::string s(text);  // strtod needs the terminating NUL
  char* end = nullptr;
  n.value = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(s[0]))) {
    n.malformed = true;
  } else if (!std::isfinite(n.value)) {
    n.out_of_range = true;
  }
  return n;
}

std::optional<int64_t> parse_byte_size(std::string_view text) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: break;
    }
  }
  if (shift > 0) text.remove_suffix(1);
  const FlagNumber<int64_t> n = parse_whole_number(text);
  if (!n.ok() || n.value <= 0 || n.value > (int64_t{1} << (62 - shift))) return std::nullopt;
  return n.value << shift;
}

FlagNumber<int64_t> parse_bucket_mebibytes(std::string_view text) {
  const FlagNumber<double> mib = parse_real_number(text);
  FlagNumber<int64_t> n{.malformed = mib.malformed, .out_of_range = mib.out_of_range};
  if (!mib.ok()) return n;
  if (mib.value < 0 || mib.value > kMaxBucketMebibytes) {
    n.out_of_range = true;
    return n;
  }
  n.value = static_cast<int64_t>(std::ceil(mib.value * (1 << 20)));
  return n;
}

std::string resolve_path(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd == nullptr || *cwd == '\0') return path;
  return std::string(cwd) + "/" + path;
}

std::optional<std::string> unwritable_file(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "the directory " + dir + " does not exist";
  if (::access(dir.c_str(), W_OK) != 0) return "the directory " + dir + " is not writable";
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "that is a directory; name a file";
    if (::access(path.c_str(), W_OK) != 0) return "the file exists and is not writable";
  }
  return std::nullopt;
}

std::optional<DType> parse_precision(std::string_view text) {
  if (text != "f32" && text != "bf16" && text != "f16") return std::nullopt;
  return parse_dtype(text);
}

}  // namespace weft

#include "training/data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>

#include "ir/text_util.h"

namespace weft {
namespace {

// Reads the whole (decompressed) file; gzread passes uncompressed files through.
StatusOr<std::string> read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Error{"cannot open IDX file: " + std::string(std::strerror(errno)), Location::of_file(path)};
  }
  std::string bytes;
  char buf[1 << 16];
  int n;
  try {
    while ((n = gzread(f, buf, sizeof(buf))) > 0) bytes.append(buf, n);
  } catch (const std::bad_alloc&) {
    gzclose(f);
    return Error{"out of memory: decompressing the file needs more than " + std::to_string(bytes.size()) +
                     " bytes",
                 Location::of_file(path)};
  }
  int err = 0;
  // gzerror's message lives in `f`: copy it before gzclose frees it. zlib prefixes it
  // with the path, which the error's location already names.
  std::string message = gzerror(f, &err);
  gzclose(f);
  if (message.compare(0, path.size() + 2, path + ": ") == 0) message.erase(0, path.size() + 2);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return Error{"cannot decompress IDX file: " + message, Location::of_file(path)};
  }
  return bytes;
}

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

struct Header {
  DType dtype = DType::u8;
  Shape shape;
  int64_t numel = 1;
  size_t bytes = 0;  // of the header itself
};

// The header at the start of `bytes` (which may hold only the header): its errors are the
// file's (a bad magic number, an unsupported type, a truncated header, implausible dims).
StatusOr<Header> parse_header(const std::string& bytes, const std::string& path) {
  auto fail = [&](const std::string& what) { return Error{what, Location::of_file(path)}; };
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0) {
    return fail("not an IDX file: it must start with two zero bytes, a type and a rank");
  }
  Header h;
  switch (p[2]) {
    case 0x08: h.dtype = DType::u8; break;
    case 0x0C: h.dtype = DType::i32; break;
    case 0x0D: h.dtype = DType::f32; break;
    case 0x0E: h.dtype = DType::f64; break;
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", p[2]);
      return fail("unsupported IDX element type " + std::string(hex) +
                  " (weft reads u8 0x08, i32 0x0C, f32 0x0D and f64 0x0E)");
    }
  }
  int rank = p[3];
  h.bytes = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < h.bytes) {
    return fail("truncated IDX header: " + counted(rank, "dim") + " announced but the file ends first");
  }
  for (int i = 0; i < rank; ++i) {
    int64_t d = big_endian_u32(p + 4 + 4 * i);
    if (d != 0 && h.numel > (int64_t{1} << 40) / d) return fail("IDX dims are implausibly large");
    h.numel *= d;
    h.shape.dims.push_back(d);
  }
  return h;
}

// IDX data is big-endian; this machine is little-endian.
void to_little_endian(Tensor& t) {
  const size_t element = dtype_size(t.dtype());
  if (element == 1) return;
  auto* data = static_cast<unsigned char*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) std::reverse(data + i * element, data + (i + 1) * element);
}

// Reads exactly `count` bytes into `out`; false at the end of the file or an error.
bool read_exactly(gzFile f, void* out, size_t count) {
  auto* at = static_cast<unsigned char*>(out);
  while (count > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(count, size_t{1} << 30));
    const int n = gzread(f, at, chunk);
    if (n <= 0) return false;
    at += n;
    count -= static_cast<size_t>(n);
  }
  return true;
}

// A well-formed file decompressed straight into its tensor (no copy of the whole file:
// fresh pages are most of what loading a data set costs); nullopt for anything else
// (a bad header, truncated or trailing data, a decompression error, no memory), which
// read_idx then reads as a whole to report exactly as before.
std::optional<Tensor> read_in_place(const std::string& path) {
  // A header is trusted for allocating only as far as the file can hold the data:
  // deflate expands at most 1032:1 (so a small file announcing terabytes allocates
  // nothing here, and the whole-file path reports it truncated).
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const size_t most = static_cast<size_t>(std::max<off_t>(st.st_size, 0)) * 1032;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  std::optional<Tensor> out;
  std::string head(4, '\0');
  if (read_exactly(f, head.data(), 4)) {
    head.resize(4 + 4 * static_cast<size_t>(static_cast<unsigned char>(head[3])));
    if (read_exactly(f, head.data() + 4, head.size() - 4)) {
      StatusOr<Header> h = parse_header(head, path);
      const bool fits = h.ok() && static_cast<size_t>(h->numel) * dtype_size(h->dtype) <= most;
      StatusOr<Tensor> t = fits ? Tensor::try_create(Type{h->dtype, h->shape})
                                : StatusOr<Tensor>(Error{"not read in place"});
      char extra;
      int err = 0;
      if (t.ok() && read_exactly(f, t->raw_data(), t->bytes()) && gzread(f, &extra, 1) == 0) {
        gzerror(f, &err);
        if (err == Z_OK || err == Z_STREAM_END) out = std::move(*t);
      }
    }
  }
  gzclose(f);
  if (out) to_little_endian(*out);
  return out;
}

}  // namespace

StatusOr<Tensor> read_idx(const std::string& path) {
  if (std::optional<Tensor> t = read_in_place(path)) return std::move(*t);
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_all(path));
  auto fail = [&](const std::string& what) { return Error{what, Location::of_file(path)}; };
  WEFT_ASSIGN_OR_RETURN(Header h, parse_header(bytes, path));
  size_t element = dtype_size(h.dtype);
  size_t expected = h.bytes + static_cast<size_t>(h.numel) * element;
  if (bytes.size() < expected) {
    return fail("truncated IDX data: shape " + h.shape.to_string() + " needs " +
                std::to_string(expected - h.bytes) + " bytes but " +
                std::to_string(bytes.size() - h.bytes) + " follow the header");
  }
  if (bytes.size() > expected) {
    return fail(std::to_string(bytes.size() - expected) + " unexpected bytes after the IDX data");
  }
  StatusOr<Tensor> made = Tensor::try_create(Type{h.dtype, h.shape});
  if (!made.ok()) return fail(made.error().message);
  std::memcpy(made->raw_data(), bytes.data() + h.bytes, made->bytes());
  to_little_endian(*made);
  return made;
}

}  // namespace weft

#include "training/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

namespace weft {
namespace {

// The decompressed size a gzip file announces (its last 4 bytes, ISIZE: the size mod
// 2^32), at most what deflate can expand the file to (1032:1), or the file's own size
// when it is not gzip; 0 when it cannot be read. Only a hint for reserving the buffer
// once: growing it by doubling allocated and filled about twice the final size, and
// fresh pages are most of what loading a data set costs.
size_t decompressed_size_hint(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  unsigned char magic[2] = {0, 0}, isize[4] = {0, 0, 0, 0};
  const bool gzip = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  size_t hint = size > 0 ? static_cast<size_t>(size) : 0;
  if (gzip && size >= 4 && std::fseek(f, size - 4, SEEK_SET) == 0 && std::fread(isize, 1, 4, f) == 4) {
    const uint32_t announced = uint32_t{isize[0]} | (uint32_t{isize[1]} << 8) |
                               (uint32_t{isize[2]} << 16) | (uint32_t{isize[3]} << 24);
    hint = std::min<size_t>(announced, hint * 1032);
  }
  std::fclose(f);
  return hint;
}

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
    bytes.reserve(decompressed_size_hint(path));
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

}  // namespace

StatusOr<Tensor> read_idx(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_all(path));
  auto fail = [&](const std::string& what) { return Error{what, Location::of_file(path)}; };
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || p[0] != 0 || p[1] != 0) {
    return fail("not an IDX file: it must start with two zero bytes, a type and a rank");
  }
  DType dtype;
  switch (p[2]) {
    case 0x08: dtype = DType::u8; break;
    case 0x0C: dtype = DType::i32; break;
    case 0x0D: dtype = DType::f32; break;
    case 0x0E: dtype = DType::f64; break;
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", p[2]);
      return fail("unsupported IDX element type " + std::string(hex) +
                  " (weft reads u8 0x08, i32 0x0C, f32 0x0D and f64 0x0E)");
    }
  }
  int rank = p[3];
  size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) return fail("truncated IDX header: " + std::to_string(rank) +
                                         " dims announced but the file ends first");
  Shape shape;
  int64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = big_endian_u32(p + 4 + 4 * i);
    if (d != 0 && numel > (int64_t{1} << 40) / d) return fail("IDX dims are implausibly large");
    numel *= d;
    shape.dims.push_back(d);
  }
  size_t element = dtype_size(dtype);
  size_t expected = header + static_cast<size_t>(numel) * element;
  if (bytes.size() < expected) {
    return fail("truncated IDX data: shape " + shape.to_string() + " needs " +
                std::to_string(expected - header) + " bytes but " +
                std::to_string(bytes.size() - header) + " follow the header");
  }
  if (bytes.size() > expected) {
    return fail(std::to_string(bytes.size() - expected) + " unexpected bytes after the IDX data");
  }
  StatusOr<Tensor> made = Tensor::try_create(Type{dtype, shape});
  if (!made.ok()) return fail(made.error().message);
  Tensor& t = *made;
  auto* out = static_cast<unsigned char*>(t.raw_data());
  const unsigned char* in = p + header;
  // IDX data is big-endian; this machine is little-endian.
  for (int64_t i = 0; i < numel; ++i) {
    for (size_t b = 0; b < element; ++b) out[i * element + b] = in[i * element + element - 1 - b];
  }
  return made;
}

}  // namespace weft

#include "formats/safetensors.h"

#include "ir/text_util.h"
#include "formats/file_io.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/checked_math.h"

namespace weft {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; weft copies it byte for byte");

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The safetensors reference implementation refuses headers larger than this.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A header is an object of objects holding arrays: three levels. Anything much deeper is
// not a safetensors header, and refusing it early keeps nlohmann's recursive copies off a
// hostile file's nesting.
constexpr int kMaxJsonDepth = 8;
constexpr std::string_view kMetadataKey = "__metadata__";

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (safetensors_dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

std::string shape_string(const std::vector<int64_t>& dims) { return Shape(dims).to_string(); }


// Parses the header, refusing duplicate keys (nlohmann would keep the last silently, so
// two entries for one tensor would read as one).
StatusOr<Json> parse_header_json(std::string_view text, const std::string& name) {
  if (find_excess_nesting(text, kMaxJsonDepth)) {
    return file_error(name, "malformed safetensors header: JSON nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  }
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end(), callback);
  } catch (const Json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1,
    // column 5: ..."; drop the bracketed id.
    std::string what = e.what();
    size_t bracket = what.find("] ");
    return file_error(name, "malformed safetensors header: invalid JSON: " +
                                (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!duplicate.empty()) {
    return file_error(name, "malformed safetensors header: key '" + duplicate +
                                "' appears twice in one object");
  }
  return doc;
}

std::optional<uint64_t> as_uint(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

// Validates one tensor entry of the header against a data section of `data_size` bytes.
StatusOr<Entry> parse_entry(const std::string& tensor, const Json& j, uint64_t data_size,
                            const std::string& name) {
  auto bad = [&](const std::string& what) {
    return file_error(name, "tensor '" + tensor + "': " + what);
  };
  if (!j.is_object()) return bad("header entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) return bad(std::string("header entry has no '") + key + "'");
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return bad("unexpected key '" + key + "' in the header entry (expected dtype, shape, "
                 "data_offsets)");
    }
  }
  Entry e;
  e.name = tensor;
  if (!j["dtype"].is_string()) return bad("'dtype' is not a string");
  const std::string& dtype = j["dtype"].get_ref<const std::string&>();
  std::optional<DType> d = dtype_from_name(dtype);
  if (!d) return bad("unsupported dtype '" + dtype + "' (weft reads F32 F64 F16 BF16 I32 I64 U8 BOOL)");
  e.dtype = *d;
  const Json& shape = j["shape"];
  if (!shape.is_array()) return bad("'shape' is not an array");
  for (const Json& dim : shape) {
    std::optional<uint64_t> v = as_uint(dim);
    if (!v || *v > static_cast<uint64_t>(INT64_MAX)) {
      return bad("'shape' holds " + dim.dump() + ", not a non-negative integer");
    }
    e.shape.push_back(static_cast<int64_t>(*v));
  }
  if (!size_fits(e.dtype, e.shape)) {
    return bad("shape " + shape_string(e.shape) + " of " + dtype +
               " is too large: its size in bytes does not fit in 64 bits");
  }
  const Json& offsets = j["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = as_uint(offsets[0]);
    end = as_uint(offsets[1]);
  }
  if (!begin || !end) return bad("'data_offsets' is " + offsets.dump() + ", not [begin, end]");
  if (*begin > *end) {
    return bad("data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
               "] end before they begin");
  }
  if (*end > data_size) {
    return bad("data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
               "] are out of bounds: the data section has " + std::to_string(data_size) +
               " bytes (is the file truncated?)");
  }
  const uint64_t need = Type{e.dtype, Shape(e.shape)}.bytes();
  if (*end - *begin != need) {
    return bad("data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
               "] span " + std::to_string(*end - *begin) + " bytes, but " + dtype +
               shape_string(e.shape) + " needs " + std::to_string(need));
  }
  e.begin = *begin;
  e.end = *end;
  return e;
}


}  // namespace

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
    case DType::boolean: return "BOOL";
  }
  return "";
}

std::string safetensors_checksum(std::string_view bytes) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a64(bytes)));
  return hex;
}

namespace {

// The checksum of every metadata entry but the two checksums.
std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  for (const auto& [key, value] : metadata) {
    if (key == kSafetensorsChecksumKey || key == kSafetensorsMetadataChecksumKey) continue;
    bytes += key + '\0' + value + '\0';
  }
  return safetensors_checksum(bytes);
}

}  // namespace

StatusOr<std::string> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata, const std::string& name) {
  for (std::string_view reserved : {kSafetensorsChecksumKey, kSafetensorsMetadataChecksumKey}) {
    if (metadata.count(std::string(reserved)) != 0) {
      return file_error(name, "metadata key '" + std::string(reserved) +
                                  "' is reserved: write_safetensors computes it");
    }
  }
  std::set<std::string_view> seen;
  std::string data;
  size_t total = 0;
  for (const auto& [tensor, t] : tensors) {
    if (tensor == kMetadataKey) {
      return file_error(name, "a tensor cannot be named '__metadata__': the header reserves it");
    }
    if (!seen.insert(tensor).second) {
      return file_error(name, "tensor name '" + tensor + "' appears twice");
    }
    total += t.bytes();
  }
  data.reserve(total);
  OrderedJson header = OrderedJson::object();
  OrderedJson meta = OrderedJson::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  meta[std::string(kSafetensorsMetadataChecksumKey)] = metadata_checksum(metadata);
  header[std::string(kMetadataKey)] = meta;  // Placeholder; the checksum is added below.
  for (const auto& [tensor, t] : tensors) {
    const size_t begin = data.size();
    data.append(static_cast<const char*>(t.raw_data()), t.bytes());
    header[tensor] = OrderedJson{{"dtype", safetensors_dtype_name(t.dtype())},
                                 {"shape", t.shape().dims},
                                 {"data_offsets", {begin, data.size()}}};
  }
  header[std::string(kMetadataKey)][std::string(kSafetensorsChecksumKey)] = safetensors_checksum(data);
  std::string text;
  try {
    text = header.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::detail::error_handler_t::strict);
  } catch (const OrderedJson::exception& e) {
    return file_error(name, "tensor names and metadata must be valid UTF-8: " +
                                std::string(e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((uint64_t{text.size()} >> (8 * i)) & 0xff);
  out.reserve(8 + text.size() + data.size());
  out += text;
  out += data;
  return out;
}

namespace {

// Reads `size` bytes at `offset` of the data section into `out`.
using ReadData = std::function<Status(uint64_t offset, void* out, uint64_t size)>;

// The header length in the file's first 8 bytes (little-endian).
uint64_t header_length(std::string_view head) {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(head[i]);
  return header_len;
}

// The header's text, from the file's first bytes (`head`: the 8-byte length and, where
// the length fits the file, the header) and the file's size: its length checked against
// the format's limit and the file.
StatusOr<std::string_view> header_text(std::string_view head, uint64_t file_size, const std::string& name) {
  if (file_size < 8) {
    return file_error(name, "not a safetensors file: it has " + std::to_string(file_size) +
                                " bytes, fewer than the 8-byte header length");
  }
  const uint64_t header_len = header_length(head);
  if (header_len > kMaxHeaderBytes) {
    return file_error(name, "header length " + std::to_string(header_len) +
                                " is larger than the 100000000 bytes safetensors allows "
                                "(not a safetensors file, or a corrupted one)");
  }
  if (header_len > file_size - 8) {
    return file_error(name, "header length " + std::to_string(header_len) +
                                " runs past the end of the file (" + std::to_string(file_size) +
                                " bytes): the file is truncated or not a safetensors file");
  }
  std::string_view text = head.substr(8, header_len);
  if (text.empty() || text[0] != '{') {
    return file_error(name, "malformed safetensors header: it must start with '{'");
  }
  return text;
}

// `__metadata__`'s entries into `metadata`: an object of strings.
Status read_metadata(const Json& value, std::map<std::string, std::string>& metadata, const std::string& name) {
  if (!value.is_object()) {
    return file_error(name, "'__metadata__' is not an object of strings");
  }
  for (const auto& [mkey, mvalue] : value.items()) {
    if (!mvalue.is_string()) {
      return file_error(name, "'__metadata__' value of '" + mkey + "' is " + mvalue.dump() +
                                  ", not a string");
    }
    metadata[mkey] = mvalue.get<std::string>();
  }
  return Status();
}

// The metadata's own checksum, where the header states one.
Status check_metadata_checksum(const std::map<std::string, std::string>& metadata, const std::string& name) {
  auto said = metadata.find(std::string(kSafetensorsMetadataChecksumKey));
  if (said == metadata.end()) return Status();
  const std::string actual = metadata_checksum(metadata);
  if (said->second != actual) {
    return file_error(name, "metadata checksum mismatch: the header says " + said->second +
                                ", the other metadata entries hash to " + actual +
                                " (FNV-1a 64): the metadata is corrupted");
  }
  return Status();
}

// Sorts `entries` by their offsets and checks that they tile the data section of
// `data_size` bytes exactly: each begins where the previous ended, and the last ends at
// the end of the file.
Status check_tiling(std::vector<Entry>& entries, uint64_t data_size, const std::string& name) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered) {
      return file_error(name, "tensors '" + previous->name + "' [" + std::to_string(previous->begin) +
                                  ", " + std::to_string(previous->end) + ") and '" + e.name + "' [" +
                                  std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                  ") overlap in the data section");
    }
    if (e.begin > covered) {
      return file_error(name, "bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                                  ") of the data section belong to no tensor (before '" + e.name +
                                  "')");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size) {
    return file_error(name, "bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                                ") of the data section belong to no tensor (trailing data)");
  }
  return Status();
}

// Reads each entry's tensor into `file` through `read_data`, in the entries' (data
// section) order, and returns the data section's FNV-1a 64 hash: ir/text_util.h's
// fnv1a64, continued tensor by tensor.
StatusOr<uint64_t> read_tensors(const std::vector<Entry>& entries, const ReadData& read_data,
                                SafetensorsFile& file, const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const Entry& e : entries) {
    // Sizes come from the file: memory running out is reported, naming the tensor.
    StatusOr<Tensor> made = Tensor::try_create(Type{e.dtype, Shape(e.shape)});
    if (!made.ok()) return file_error(name, "tensor '" + e.name + "': " + made.error().message);
    Tensor& t = *made;
    if (t.bytes() > 0) {
      WEFT_RETURN_IF_ERROR(read_data(e.begin, t.raw_data(), t.bytes()));
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < t.bytes(); ++i) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
      }
    }
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return hash;
}

// The data section's checksum, where the metadata states one.
Status check_data_checksum(const SafetensorsFile& file, uint64_t hash, const std::string& name) {
  auto checksum = file.metadata.find(std::string(kSafetensorsChecksumKey));
  if (checksum == file.metadata.end()) return Status();
  char actual[17];
  std::snprintf(actual, sizeof(actual), "%016llx", static_cast<unsigned long long>(hash));
  if (checksum->second != actual) {
    return file_error(name, "checksum mismatch: the header says " + checksum->second +
                                ", the data section hashes to " + actual +
                                " (FNV-1a 64): the data is corrupted");
  }
  return Status();
}

// Every BOOL tensor's bytes are 0 or 1.
Status check_bools(const SafetensorsFile& file, const std::string& name) {
  for (const auto& [tensor, t] : file.tensors) {
    if (t.type().dtype != DType::boolean) continue;
    const uint8_t* b = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (b[i] > 1) {
        return file_error(name, "tensor '" + tensor + "': BOOL data holds byte value " +
                                    std::to_string(b[i]) + " at element " + std::to_string(i) +
                                    " (expected 0 or 1)");
      }
    }
  }
  return Status();
}

// The format's checks and the tensors, from the file's first bytes (`head`, see
// header_text) and the file's size. The data section is read tensor by tensor through
// `read_data`, straight into each tensor, so a file read from disk is never held whole
// in memory beside its tensors.
StatusOr<SafetensorsFile> decode(std::string_view head, uint64_t file_size,
                                 const ReadData& read_data, const std::string& name) {
  WEFT_ASSIGN_OR_RETURN(std::string_view text, header_text(head, file_size, name));
  WEFT_ASSIGN_OR_RETURN(Json header, parse_header_json(text, name));
  if (!header.is_object()) {
    return file_error(name, "malformed safetensors header: not a JSON object");
  }
  const uint64_t data_size = file_size - 8 - header_length(head);
  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      WEFT_RETURN_IF_ERROR(read_metadata(value, file.metadata, name));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(Entry e, parse_entry(key, value, data_size, name));
    entries.push_back(std::move(e));
  }
  WEFT_RETURN_IF_ERROR(check_metadata_checksum(file.metadata, name));
  WEFT_RETURN_IF_ERROR(check_tiling(entries, data_size, name));
  WEFT_ASSIGN_OR_RETURN(uint64_t hash, read_tensors(entries, read_data, file, name));
  WEFT_RETURN_IF_ERROR(check_data_checksum(file, hash, name));
  WEFT_RETURN_IF_ERROR(check_bools(file, name));
  return file;
}

}  // namespace

StatusOr<SafetensorsFile> parse_safetensors(std::string_view bytes, const std::string& name) {
  return decode(bytes, bytes.size(),
                [&](uint64_t offset, void* out, uint64_t size) {
                  // decode checked the header's length against the size of `bytes`.
                  std::memcpy(out, bytes.data() + 8 + header_length(bytes) + offset, size);
                  return Status::ok_status();
                },
                name);
}

// The length and the header from the file, then each tensor's bytes straight into the
// tensor (pread): the file is never held whole in memory.
StatusOr<SafetensorsFile> read_safetensors(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::open(path));
  if (!file.is_regular()) return file_error(path, "cannot read: not a regular file");
  const int fd = file.fd();
  const uint64_t file_size = file.size();
  // Bytes [offset, offset + size) of the file; a file that shrank since fstat is truncated.
  auto read_at = [&](uint64_t offset, void* out, uint64_t size) -> Status {
    char* p = static_cast<char*>(out);
    uint64_t got = 0;
    while (got < size) {
      const ssize_t n = ::pread(fd, p + got, size - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return file_error(path, "read failed: " + std::string(std::strerror(errno)));
      if (n == 0) {
        return file_error(path, "the file is truncated: it ended at byte " +
                                    std::to_string(offset + got) + " while being read (its size said " +
                                    std::to_string(file_size) + " bytes)");
      }
      got += static_cast<uint64_t>(n);
    }
    return Status::ok_status();
  };
  std::string head(std::min<uint64_t>(file_size, 8), '\0');
  WEFT_RETURN_IF_ERROR(read_at(0, head.data(), head.size()));
  if (file_size >= 8) {
    const uint64_t header_len = header_length(head);
    // A length out of range is decode's to report; the header is read only when it fits.
    if (header_len <= kMaxHeaderBytes && header_len <= file_size - 8) {
      try {
        head.resize(8 + header_len);
      } catch (const std::bad_alloc&) {
        return file_error(path, "out of memory: reading the header needs " + std::to_string(8 + header_len) +
                                    " bytes");
      }
      WEFT_RETURN_IF_ERROR(read_at(8, head.data() + 8, header_len));
    }
  }
  const uint64_t data_begin = head.size();
  return decode(head, file_size,
                [&](uint64_t offset, void* out, uint64_t size) {
                  return read_at(data_begin + offset, out, size);
                },
                path);
}

Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, serialize_safetensors(tensors, metadata, path));
  return write_file_atomically(path, bytes);
}

}  // namespace weft

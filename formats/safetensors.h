#pragma once
// safetensors files (https://huggingface.co/docs/safetensors), the checkpoint format
// weft shares with PyTorch, JAX and Hugging Face tools:
//
//   [8 bytes]  N, the header length, unsigned little-endian
//   [N bytes]  a UTF-8 JSON object, padded with spaces so that the data starts 8-byte
//              aligned:
//                {"__metadata__": {"checksum": "…"},
//                 "encoder.0.weight": {"dtype": "F32", "shape": [8, 4],
//                                      "data_offsets": [0, 128]}, …}
//   [rest]     the data section: every tensor's raw little-endian row-major bytes,
//              contiguous, at [begin, end) relative to the start of the section
//
// weft reads and writes the dtypes F32 F64 F16 BF16 I32 I64 U8 BOOL. `write_safetensors`
// lays the tensors out in the order given and adds `__metadata__["checksum"]`: the
// 64-bit FNV-1a hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of the whole
// data section, as 16 lowercase hex digits, and `__metadata__["metadata_checksum"]`: the
// same hash of the other metadata entries (`key \0 value \0` in key order).
// `read_safetensors` verifies each checksum the file has (files from other writers, and
// weft's before the metadata checksum, lack one or both) and refuses any file that is
// not exactly well-formed: every error names the file and what was wrong.
//
//   WEFT_RETURN_IF_ERROR(write_safetensors("ckpt.safetensors", {{"w", w}}, {{"step", "10"}}));
//   WEFT_ASSIGN_OR_RETURN(SafetensorsFile f, read_safetensors("ckpt.safetensors"));
//   const Tensor* w2 = f.find("w");

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "formats/file_io.h"  // write_file_atomically, which write_safetensors uses
#include "runtime/tensor.h"

namespace weft {

/// The contents of a safetensors file.
struct SafetensorsFile {
  /// The tensors, in the order of their data offsets.
  std::vector<std::pair<std::string, Tensor>> tensors;
  /// `__metadata__`, including `checksum` when the file has one.
  std::map<std::string, std::string> metadata;

  /// The tensor named `name`, or nullptr.
  const Tensor* find(std::string_view name) const;
};

/// The metadata key holding the data section's checksum.
inline constexpr std::string_view kSafetensorsChecksumKey = "checksum";
/// The metadata key holding the checksum of the other metadata entries.
inline constexpr std::string_view kSafetensorsMetadataChecksumKey = "metadata_checksum";

/// Writes `tensors` (names unique, not `__metadata__`) and `metadata` as a safetensors
/// file, adding the checksums (so `metadata` must not hold either key itself). The write
/// is atomic: a temporary file in the same directory is written and fsync'ed, renamed
/// over `path`, and the directory is fsync'ed; on any failure the temporary file is
/// removed and whatever was at `path` is left as it was.
Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a safetensors file.
StatusOr<SafetensorsFile> read_safetensors(const std::string& path);

/// The bytes of a safetensors file (what `write_safetensors` writes); `name_for_errors`
/// is the file named in errors.
StatusOr<std::string> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata, const std::string& name_for_errors = "");

/// Parses and validates the bytes of a safetensors file.
StatusOr<SafetensorsFile> parse_safetensors(std::string_view bytes,
                                            const std::string& name_for_errors);

/// The checksum weft stores: 64-bit FNV-1a of `bytes` as 16 lowercase hex digits.
std::string safetensors_checksum(std::string_view bytes);

/// The safetensors dtype name of `dtype` (`F32`, `BOOL`, ...).
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace weft

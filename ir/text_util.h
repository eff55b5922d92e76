#pragma once
// Small text helpers shared by readers, error messages and reports across the tree (the
// IR's JSON form, safetensors headers, PyTorch-worded optimizer and schedule errors, the
// memory picture and the training report).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/location.h"

namespace weft {

/// Python's repr of a float ("0.1", "0.0001", "1e-05", "25.0", "1e+16"): the shortest
/// round-trip digits, in fixed notation for decimal exponents in [-4, 16), so messages
/// that quote PyTorch read exactly like PyTorch's.
std::string python_float_repr(double v);

/// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3):
/// weft's one non-cryptographic hash (checkpoint checksums, parameter streams, the
/// structural hash). Part of file formats: never change it.
uint64_t fnv1a64(std::string_view bytes);

/// The offset of the first `[` or `{` in the JSON text `text` that nests deeper than
/// `max_depth` levels (brackets inside strings do not count), or nullopt. Lets a reader
/// refuse pathological nesting before a recursive JSON parser overflows the stack.
std::optional<size_t> find_excess_nesting(std::string_view text, int max_depth);

/// The offset of the opening quote of the first key in the JSON text `text` that an
/// object already has (keys compared as written, escapes not decoded), or nullopt. JSON
/// parsers keep one of the two silently; a reader that must not guess refuses the file.
std::optional<size_t> find_duplicate_json_key(std::string_view text);

/// The offset of the first byte of `text` that does not begin a valid UTF-8 sequence
/// (malformed, overlong, a surrogate, beyond U+10FFFF, cut short), or nullopt.
std::optional<size_t> find_invalid_utf8(std::string_view text);

/// The 1-based line and column (in bytes) of byte `offset` in `text`, for readers'
/// errors.
Location location_of_byte(std::string_view text, size_t offset, std::string_view filename);

/// `bytes` for people, in binary units: "704 B" below 1 KiB, else KiB, MiB or GiB with
/// `decimals` decimals ("2.2 KiB", "1.0 MiB"). With `trim_zeros`, zeros that end the
/// decimals are dropped, and the point with them ("256 KiB", "1.5 MiB", "1.25 MiB").
std::string format_bytes(int64_t bytes, int decimals = 1, bool trim_zeros = false);

/// `n` and `noun` for messages: "1 array", "3 arrays", "0 elements" (the plural adds "s").
std::string counted(int64_t n, std::string_view noun);

/// `text` made safe inside HTML or XML text and double-quoted attribute values: `&`, `<`,
/// `>` and `"` become entities; everything else is kept.
std::string html_escape(std::string_view text);

}  // namespace weft

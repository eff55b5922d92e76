#pragma once
// Numbers and paths in command-line flag values, read one way for every tool: weftc, the
// training driver (training/driver) and the examples. Each tool words its own errors; these say
// only whether the text is the number asked for and, if it is well written, whether it
// fits.
//
//   FlagNumber<int64_t> n = parse_whole_number("12");      // n.value == 12
//   parse_whole_number("1.5").malformed                    // true
//   parse_byte_size("64K")                                 // 65536
//
// The whole text must be the number: no spaces, no '+', no trailing characters, so
// `--epochs=1.5`, `--lr=1e` and `--seed=-1` are errors rather than truncations.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/dtype.h"

namespace weft {

/// A number read from a flag's value, or why it is not one.
template <typename T>
struct FlagNumber {
  T value{};
  bool malformed = false;     ///< Not written as the number asked for.
  bool out_of_range = false;  ///< Well written, but it does not fit T (or is not finite).
  bool ok() const { return !malformed && !out_of_range; }
};

/// A whole number: an optional '-' then decimal digits ("12", "-3", "0"; not "", "+2",
/// " 7", "1.5", "1e3"). out_of_range: beyond 64 bits.
FlagNumber<int64_t> parse_whole_number(std::string_view text);

/// An unsigned whole number: decimal digits only ("0", "18446744073709551615"; not "-1").
/// out_of_range: beyond 64 bits.
FlagNumber<uint64_t> parse_unsigned_number(std::string_view text);

/// A real number as strtod writes them ("0.1", "1e-3", "-2", "inf"), not starting with
/// white space. out_of_range: it is not finite (inf, nan, 1e999).
FlagNumber<double> parse_real_number(std::string_view text);

/// A positive byte count, a whole number with an optional suffix K, M or G (KiB, MiB,
/// GiB): "512", "64K", "2G". nullopt for anything else, zero, or more than 2^62 bytes.
std::optional<int64_t> parse_byte_size(std::string_view text);

/// The largest bucket size the bucket flags take, in MiB (64 GiB: more than any device's
/// memory, where a bucket's staging block lives).
inline constexpr double kMaxBucketMebibytes = 65536;

/// A data-parallel bucket size in MiB, as PyTorch DDP's bucket_cap_mb: a real number >= 0
/// ("25", "0.25", "0"), returned in bytes (rounded up to a whole byte). out_of_range:
/// negative, above kMaxBucketMebibytes, or not finite. --bucket-mb and --first-bucket-mb
/// of the training driver and the examples.
FlagNumber<int64_t> parse_bucket_mebibytes(std::string_view text);

/// A user-supplied path, relative paths taken against $BUILD_WORKING_DIRECTORY when set
/// (the directory `bazel run` was started in).
std::string resolve_path(const std::string& path);

/// Why no file can be written at `path` (an output flag's value, checked before a long
/// run rather than at its end), or nullopt: "the directory D does not exist", "... is
/// not writable", "that is a directory; name a file", "the file exists and is not
/// writable".
std::optional<std::string> unwritable_file(const std::string& path);

/// A training step's precision (TrainOptions::precision): "f32", or the mixed precisions
/// "bf16" and "f16"; nullopt for anything else.
std::optional<DType> parse_precision(std::string_view text);

}  // namespace weft

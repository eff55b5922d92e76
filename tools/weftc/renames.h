#pragma once
// The renames of `weftc migrate` (tools/weftc/migrate.cc): `--rename OLD=NEW` pairs and the
// `--renames=FILE.json` file, one JSON object of old checkpoint keys to new ones,
//
//   {"encoder.0.weight": "0.weight", "encoder.0.bias": "0.bias"}
//
// kept apart from the command so that its fuzz target (tests/fuzz/renames_json_fuzzer.cc)
// reads files exactly as the command does.

#include <map>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace weft::cli {

/// Adds `from` -> `to` to `renames`; an error names both new names when `from` is renamed
/// already.
Status add_rename(std::map<std::string, std::string>& renames, const std::string& from, const std::string& to);

/// Adds the renames of `text`, a renames file shown to the user as `shown_path`, to
/// `renames`. Errors name `shown_path`: a key given twice in one object (at its line and
/// column), invalid JSON, a file that is not one object, a new name that is not a
/// non-empty string, a key renamed twice (here and by an earlier `--rename`).
Status parse_renames(std::string_view text, const std::string& shown_path,
                     std::map<std::string, std::string>& renames);

}  // namespace weft::cli

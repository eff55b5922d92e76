#include "tools/weftc/migrate.h"

#include <algorithm>
#include <iostream>

#include "formats/checkpoint.h"
#include "formats/file_io.h"
#include "tools/weftc/args.h"
#include "tools/weftc/renames.h"

namespace weft::cli {
namespace {

// Splits `spec` at the first `sep` into two parts, the first not empty (the second too
// unless `empty_second`); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> split_pair(const std::string& spec, char sep, bool empty_second) {
  const size_t at = spec.find(sep);
  if (at == std::string::npos || at == 0 || (!empty_second && at + 1 == spec.size())) return std::nullopt;
  return std::make_pair(spec.substr(0, at), spec.substr(at + 1));
}

// The file of --renames=FILE.json (renames.h reads it).
Status read_renames(const std::string& shown_path, std::map<std::string, std::string>& renames) {
  StatusOr<std::string> text = read_file(resolve_path(shown_path));
  if (!text.ok()) return Error{text.error().message, Location::of_file(shown_path)};
  return parse_renames(*text, shown_path, renames);
}

}  // namespace

Status migrate_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(Args args,
                        parse_args("migrate", argv,
                                   {{"out", "o"},
                                    {"rename", "", /*takes_value=*/true, /*repeatable=*/true},
                                    {"renames"},
                                    {"prefix", "", /*takes_value=*/true, /*repeatable=*/true},
                                    {"structural-hash"}}));
  WEFT_ASSIGN_OR_RETURN(std::string in, one_file_argument("migrate", args));
  if (!args.has("out")) return Error{"weftc migrate: -o OUT.safetensors is required (it may be IN itself)"};
  KeyMigration migration;
  for (const std::string& spec : args.flags["rename"]) {
    auto pair = split_pair(spec, '=', /*empty_second=*/false);
    if (!pair) return Error{"weftc migrate: --rename expects OLD=NEW, got '" + spec + "'"};
    WEFT_RETURN_IF_ERROR(add_rename(migration.renames, pair->first, pair->second));
  }
  if (args.has("renames")) WEFT_RETURN_IF_ERROR(read_renames(args.get("renames"), migration.renames));
  for (const std::string& spec : args.flags["prefix"]) {
    auto pair = split_pair(spec, ':', /*empty_second=*/true);
    if (!pair) return Error{"weftc migrate: --prefix expects OLD:NEW (OLD not empty), got '" + spec + "'"};
    migration.prefixes.push_back(*pair);
  }
  // The structural hash alone is a migration too: README.md's conv2d -> conv carry-over.
  if (migration.renames.empty() && migration.prefixes.empty() && !args.has("structural-hash")) {
    return Error{"weftc migrate: nothing to do; give --rename OLD=NEW, --renames FILE.json, --prefix OLD:NEW "
                 "or --structural-hash=HEX"};
  }
  if (args.has("structural-hash")) {
    const std::string hex = args.get("structural-hash");
    const bool ok = hex.size() == 16 && std::all_of(hex.begin(), hex.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (!ok) {
      return Error{"weftc migrate: --structural-hash expects 16 lowercase hex digits (as a refused load "
                   "prints the model's), got '" + hex + "'"};
    }
    migration.structural_hash = std::stoull(hex, nullptr, 16);
  }
  const std::string out = args.get("out");
  WEFT_ASSIGN_OR_RETURN(MigrateReport report, migrate_checkpoint(resolve_path(in), resolve_path(out), migration));
  for (const auto& [from, to] : report.renamed) std::cout << "  " << from << " -> " << to << "\n";
  std::cout << "wrote " << out << ": " << report.renamed.size() << " key(s) renamed"
            << (migration.structural_hash ? ", weft.structural_hash set" : "") << "\n";
  return Status();
}

}  // namespace weft::cli

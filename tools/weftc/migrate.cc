#include "tools/weftc/migrate.h"

#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "ir/text_util.h"
#include "runtime/checkpoint.h"
#include "runtime/file_io.h"
#include "tools/weftc/args.h"

namespace weft::cli {
namespace {

// Splits `spec` at the first `sep` into two parts, the first not empty (the second too
// unless `empty_second`); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> split_pair(const std::string& spec, char sep, bool empty_second) {
  const size_t at = spec.find(sep);
  if (at == std::string::npos || at == 0 || (!empty_second && at + 1 == spec.size())) return std::nullopt;
  return std::make_pair(spec.substr(0, at), spec.substr(at + 1));
}

Status add_rename(std::map<std::string, std::string>& renames, const std::string& from, const std::string& to) {
  auto [it, fresh] = renames.emplace(from, to);
  if (fresh) return Status();
  return Error{"weftc migrate: '" + from + "' is renamed twice, to '" + it->second + "' and to '" + to + "'"};
}

// A JSON file of renames: one object, old name to new name.
Status read_renames(const std::string& shown_path, std::map<std::string, std::string>& renames) {
  StatusOr<std::string> text = read_file(resolve_path(shown_path));
  if (!text.ok()) return Error{text.error().message, Location::of_file(shown_path)};
  auto refuse = [&](const std::string& why) {
    return Error{"not a JSON object of old names to new names (" + why + ")", Location::of_file(shown_path)};
  };
  if (std::optional<size_t> at = find_duplicate_json_key(*text)) {
    return Error{"a key appears twice in one object", location_of_byte(*text, *at, shown_path)};
  }
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return refuse("invalid JSON");
  if (!doc.is_object()) return refuse("the file holds a " + std::string(doc.type_name()));
  for (const auto& [from, to] : doc.items()) {
    if (!to.is_string() || to.get<std::string>().empty()) return refuse("the new name of '" + from + "' is not a non-empty string");
    WEFT_RETURN_IF_ERROR(add_rename(renames, from, to.get<std::string>()));
  }
  return Status();
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
  if (migration.renames.empty() && migration.prefixes.empty()) {
    return Error{"weftc migrate: nothing to rename; give --rename OLD=NEW, --renames FILE.json or --prefix OLD:NEW"};
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

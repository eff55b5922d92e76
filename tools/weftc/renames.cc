#include "tools/weftc/renames.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/text_util.h"

namespace weft::cli {

Status add_rename(std::map<std::string, std::string>& renames, const std::string& from, const std::string& to) {
  auto [it, fresh] = renames.emplace(from, to);
  if (fresh) return Status();
  return Error{"weftc migrate: '" + from + "' is renamed twice, to '" + it->second + "' and to '" + to + "'"};
}

Status parse_renames(std::string_view text, const std::string& shown_path,
                     std::map<std::string, std::string>& renames) {
  auto refuse = [&](const std::string& why) {
    return Error{"not a JSON object of old names to new names (" + why + ")", Location::of_file(shown_path)};
  };
  if (std::optional<size_t> at = find_duplicate_json_key(text)) {
    return Error{"a key appears twice in one object", location_of_byte(text, *at, shown_path)};
  }
  // find_duplicate_json_key compares keys as written; "a" and "\u0061" are one key too,
  // of which nlohmann would keep the last.
  std::set<std::string> keys;
  std::optional<std::string> twice;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && !twice &&
        !keys.insert(parsed.get<std::string>()).second) {
      twice = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json doc = nlohmann::json::parse(text, callback, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return refuse("invalid JSON");
  if (twice) {
    return Error{"the key '" + *twice + "' appears twice in one object, written with different escapes",
                 Location::of_file(shown_path)};
  }
  if (!doc.is_object()) return refuse("the file holds a " + std::string(doc.type_name()));
  for (const auto& [from, to] : doc.items()) {
    if (!to.is_string() || to.get<std::string>().empty()) return refuse("the new name of '" + from + "' is not a non-empty string");
    WEFT_RETURN_IF_ERROR(add_rename(renames, from, to.get<std::string>()));
  }
  return Status();
}

}  // namespace weft::cli

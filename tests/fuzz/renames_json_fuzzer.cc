// libFuzzer target: the renames file of `weftc migrate --renames=FILE.json`
// (tools/weftc/renames.h's parse_renames, which the command calls on the file's text).
// Beyond not crashing: an error has a message and names the file; renames that read are
// non-empty names, and written back as a JSON object they read back to the same renames.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_check.h"
#include "tools/weftc/renames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> renames;
  weft::Status s = weft::cli::parse_renames(text, "renames.json", renames);
  if (!s.ok()) {
    FUZZ_CHECK_ERROR(s);
    FUZZ_CHECK(s.error().loc.file == "renames.json", "renames error without the file name: " + s.to_string());
    return 0;
  }
  nlohmann::json written = nlohmann::json::object();
  for (const auto& [from, to] : renames) {
    FUZZ_CHECK(!to.empty(), "an empty new name for '" + from + "' was accepted");
    written[from] = to;
  }
  const std::string again_text = written.dump();
  std::map<std::string, std::string> again;
  weft::Status reread = weft::cli::parse_renames(again_text, "written.json", again);
  FUZZ_CHECK(reread.ok(), "renames written back do not read: " + reread.to_string() + "\n" + again_text);
  FUZZ_CHECK(again == renames, "renames written back read differently: " + again_text);
  return 0;
}

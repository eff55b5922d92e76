// libFuzzer target: the JSON importer (ir/json.h). Beyond not crashing: an error has a
// message naming the file; an imported graph exports to JSON that imports back to the
// same graph.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/json.h"
#include "ir/verifier.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  weft::StatusOr<weft::Graph> g = weft::graph_from_json(text, "fuzz.json");
  if (!g.ok()) {
    FUZZ_CHECK_ERROR(g);
    FUZZ_CHECK(g.error().loc.file == "fuzz.json", "import error without the file name: " + g.error().to_string());
    return 0;
  }
  std::string exported = weft::graph_to_json(*g);
  weft::StatusOr<weft::Graph> again = weft::graph_from_json(exported, "exported.json");
  FUZZ_CHECK(again.ok(), "exported graph does not import: " + again.status().to_string() + "\n" + exported);
  std::string why;
  FUZZ_CHECK(weft::structurally_equal(*g, *again, &why), "round trip changed the graph: " + why);
  weft::Status verified = weft::verify(*g, {});
  if (!verified.ok()) FUZZ_CHECK_ERROR(verified);
  return 0;
}

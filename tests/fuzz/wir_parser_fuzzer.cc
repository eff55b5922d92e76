// libFuzzer target: the `.wir` text parser (ir/text.h), the verifier and infer-types.
// Beyond not crashing: an error has a message and a position inside the input; a graph
// that parses prints to text that parses back to the same graph.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/infer_types.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  weft::StatusOr<weft::Graph> g = weft::parse_graph(text, "fuzz.wir");
  if (!g.ok()) {
    FUZZ_CHECK_ERROR(g);
    FUZZ_CHECK(g.error().loc.file == "fuzz.wir", "parse error without the file name: " + g.error().to_string());
    return 0;
  }
  std::string printed = weft::print_graph(*g);
  weft::StatusOr<weft::Graph> again = weft::parse_graph(printed, "printed.wir");
  FUZZ_CHECK(again.ok(), "printed graph does not parse: " + again.status().to_string() + "\n" + printed);
  std::string why;
  FUZZ_CHECK(weft::structurally_equal(*g, *again, &why), "round trip changed the graph: " + why);

  weft::Status verified = weft::verify(*g, {});
  if (!verified.ok()) FUZZ_CHECK_ERROR(verified);
  weft::InferTypesPass infer;
  weft::StatusOr<bool> typed = infer.run(*g);
  if (!typed.ok()) FUZZ_CHECK_ERROR(typed);
  return 0;
}

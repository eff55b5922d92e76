#include "tools/weftc/graph_files.h"

#include "formats/file_io.h"
#include "ir/json.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "tools/weftc/args.h"

namespace weft::cli {

StatusOr<std::string> read_file(const std::string& shown_path) {
  StatusOr<std::string> bytes = weft::read_file(resolve_path(shown_path));
  if (!bytes.ok()) return Error{bytes.error().message, Location::of_file(shown_path)};
  return bytes;
}

StatusOr<Graph> load_graph(const std::string& shown_path) {
  WEFT_ASSIGN_OR_RETURN(std::string text, read_file(shown_path));
  if (shown_path.ends_with(".json")) return graph_from_json(text, shown_path);
  return parse_graph(text, shown_path);
}

StatusOr<Graph> load_typed_graph(const std::string& shown_path) {
  WEFT_ASSIGN_OR_RETURN(Graph g, load_graph(shown_path));
  WEFT_RETURN_IF_ERROR(default_pipeline().run_until(g, "infer-types"));
  WEFT_RETURN_IF_ERROR(verify(g));
  return g;
}

StatusOr<SafetensorsFile> read_params(const std::string& shown_path) {
  StatusOr<SafetensorsFile> params = read_safetensors(resolve_path(shown_path));
  if (!params.ok()) return Error{params.error().message, Location::of_file(shown_path)};
  return params;
}

}  // namespace weft::cli

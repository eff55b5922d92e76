#pragma once
// The JSON form of a graph, for tools outside C++ (visualizers, Python scripts) and for
// exchanging graphs losslessly: unlike the `.wir` text it also keeps graph inputs'
// locations. The schema is documented, with an example, in ir/JSON.md.
//
//   std::string j = weft::graph_to_json(g);
//   weft::StatusOr<weft::Graph> back = weft::graph_from_json(j, "g.json");
//   // structurally_equal(g, *back)

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

/// The graph as a JSON document (`"version": 1`), indented by `indent` spaces per level
/// with short arrays and objects kept on one line, or all on one line when `indent` is
/// negative.
std::string graph_to_json(const Graph& g, int indent = 2);

/// Reads a graph written by `graph_to_json` (or by hand, following ir/JSON.md). Every
/// field is validated; errors name the offending field by its JSON path
/// (`nodes[2].attrs.axis: ...`) and carry Error.loc.file = filename (and the line:col of
/// a JSON syntax error).
StatusOr<Graph> graph_from_json(std::string_view json_text, std::string_view filename);

}  // namespace weft

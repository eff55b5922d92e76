#pragma once
// Graphviz DOT rendering of a graph: `weftc dump FILE.wir --format=dot | dot -Tsvg`.
// Inputs are ellipses (params and state shaded), nodes are boxes showing the op, its
// attributes and result type, edges carry the value's name and shape; outputs are
// double circles.

#include <string>

#include "ir/graph.h"

namespace weft {

std::string graph_to_dot(const Graph& g);

/// Escapes text for a double-quoted DOT string: quotes and backslashes are escaped and
/// newlines become `\n` line breaks.
std::string dot_escape(const std::string& s);

}  // namespace weft

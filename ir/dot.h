#pragma once
// Graphviz DOT rendering of a graph: `weftc dump FILE.wir --format=dot | dot -Tsvg`.
// Inputs are ellipses (params and state shaded), nodes are boxes showing the op, its
// attributes and result type, edges carry the value's name and shape; outputs are
// double circles.

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

std::string graph_to_dot(const Graph& g);

/// Escapes text for a double-quoted DOT string: quotes and backslashes are escaped and
/// newlines become `\n` line breaks.
std::string dot_escape(const std::string& s);

/// Lays DOT text out as SVG with graphviz's `dot` (run with its arguments as they are,
/// never through a shell), returning the text from `<svg` on. Errors say what is
/// missing (the `graphviz` package when `dot` is not on PATH) or what dot said; callers
/// put their own context in front. The one runner of `dot`: frontend/draw.h's
/// render_svg and tools/viz's page both call it.
StatusOr<std::string> dot_to_svg(const std::string& dot);

}  // namespace weft

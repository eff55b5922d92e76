#pragma once
// Drawing a built model: Graphviz DOT with each labelled subgraph as a (nested)
// cluster, tags annotated on the values they name, and shapes on the edges; SVG
// through graphviz's `dot` when it is installed.
//
//   std::string dot = model_to_dot(model);
//   Status s = render_svg(dot, "model.svg");  // needs the `graphviz` Debian package
//
// (The IR itself is drawn by ir/dot.h, which knows nothing of labels.)

#include <string>

#include "frontend/model.h"
#include "ir/status.h"

namespace weft {

std::string model_to_dot(const Model& model);

/// Renders DOT text to an SVG file with graphviz's `dot`. A clear error names the
/// `graphviz` package when `dot` is not on PATH.
Status render_svg(const std::string& dot, const std::string& svg_path);

}  // namespace weft

#pragma once
// The graph viewer: one self-contained HTML page (inline CSS, JavaScript and SVG; it
// loads nothing from the network) showing a graph laid out by Graphviz, with the
// details of a node on hover or click, labelled subgraphs as collapsible clusters,
// fused kernels outlined, and — when a memory plan is given — every value's arena
// buffer and a second tab with the memory plan as a picture (memory_picture.h).
//
//   Graph g = ...;                                   // a parsed .wir, or a built model
//   viz::VizOptions options;
//   options.backend = "reference";                   // no memory plan
//   StatusOr<std::string> html = viz::graph_to_html(g, options);
//   // write *html to model.html and open it in a browser
//
// For the CPU backend's view (fused, scheduled, planned) use cpu_viz.h, or
// `weftc viz FILE.wir -o model.html`.
//
// The page's DOM, which tests and scripts may rely on: every graph node is one
// `<g class="node ..." data-node="I">` (I its index in g.nodes()), every graph input a
// `<g class="input" data-input="I">`, every output a `<g class="output" data-output="I">`,
// every cluster a `<g class="cluster" data-cluster="K">`; a fused node also has class
// `fused`, a tagged one `tagged`, and each has `kind-<activation|gradient|parameter|
// optimizer-state>` (memory_picture.h's classify_values). The details are in a
// `<script type="application/json" id="weft-data">` block.
//
// Clusters: a node's builder path (Location::path, e.g. `encoder > split[1] >
// Linear(256->10)`) minus its last step (the module call that emitted it) names the
// nested clusters it is drawn in (`encoder`, then `split[1]` inside it). Nodes with the
// same path prefix share a cluster, so labelled subgraphs (unique by construction) are
// exactly one cluster each, while two unlabelled `split[1]`s at one level are drawn as
// one. A loop (`scan`) is drawn as its node with its body as a dashed cluster beside it
// (`@body, N iterations`; nested loops inside), its nodes' ids `n<I>_n<J>`: they show
// their op and types, without details of their own.
//
// Layout runs graphviz's `dot -Tsvg` as a subprocess (the `graphviz` Debian package,
// installed by tools/setup); without it graph_to_html fails with an error saying so.

#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "passes/memory_plan.h"

namespace weft::viz {

struct VizOptions {
  /// The page's title; default "@<graph name>".
  std::string title;
  /// Shown in the header: what produced the graph ("cpu", "reference").
  std::string backend;
  /// Shown in the header: the last pass run ("schedule-memory", "parse", ...).
  std::string after_pass;
  /// The arena plan of exactly this graph (same node order), or null: then nodes show no
  /// buffers and the page has no memory tab.
  const MemoryPlan* plan = nullptr;
  /// Tag names by value name (`{"17", "hidden"}`): the builder's tags (Model::tags(),
  /// mapped through g.value(v).name), annotated on the value's producer or input.
  std::map<std::string, std::string> tags;
  /// Profile (`weftc profile --html`): microseconds per step spent computing each value,
  /// by value name. Nodes with a time are filled on a white-to-red scale by their share
  /// of the total, and their label shows the time and the share.
  std::map<std::string, double> time_us;
};

/// The Graphviz DOT text the page lays out: ids `in<I>`, `n<I>`, `out<I>`, `c<K>`
/// (clusters) and `e<J>` (edges), fused nodes double-outlined, filled by buffer kind.
std::string graph_to_viz_dot(const Graph& g, const VizOptions& options = {});

/// ir/dot.h's dot_to_svg (graphviz's `dot -Tsvg`), returning the SVG element (the XML
/// prologue dropped); its errors begin "cannot lay out the graph: ".
StatusOr<std::string> render_dot_to_svg(const std::string& dot);

/// The whole page. Errors as render_dot_to_svg.
StatusOr<std::string> graph_to_html(const Graph& g, const VizOptions& options = {});

}  // namespace weft::viz

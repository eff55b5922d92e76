#pragma once
// Internal to tools/viz: what the DOT writer (viz_dot.cc) and the page (viz.cc) share —
// the cluster tree of builder paths, buffer-kind styling and tag lookup.

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tools/viz/memory_picture.h"
#include "tools/viz/viz.h"

namespace weft::viz::internal {

struct Cluster {
  std::string name;         ///< One step of the builder path.
  int parent = -1;
  std::vector<int> children;
  std::vector<int> nodes;   ///< Nodes drawn directly in this cluster.
};

struct ClusterTree {
  std::vector<Cluster> clusters;
  std::vector<int> top;          ///< Clusters without a parent.
  std::vector<int> top_nodes;    ///< Nodes outside every cluster.
  std::vector<int> of_node;      ///< Innermost cluster per node, -1 for none.
};

/// Clusters by builder path minus its last step (viz.h says how).
ClusterTree cluster_tree(const Graph& g);

/// Node fill colours by BufferKind (light tints of memory_picture's colours).
inline constexpr const char* kNodeFill[kNumBufferKinds] = {"#e3f2fb", "#fcefd6", "#dcf1e9",
                                                           "#f6e4ef"};

/// The dtype key of the viewer: edges are drawn, and nodes and inputs outlined, in their
/// value's colour; the legend lists f32, bf16, f16, integers and bool (f64 when present).
struct DTypeKey {
  const char* label;   ///< "f32", "integers".
  const char* name;    ///< The class suffix: `dtype-f32`, `dtype-int`.
  const char* colour;
};
inline constexpr DTypeKey kDTypeKeys[] = {
    {"f32", "f32", "#666666"},     {"bf16", "bf16", "#1565c0"}, {"f16", "f16", "#8e24aa"},
    {"integers", "int", "#2e7d32"}, {"bool", "bool", "#b8860b"}, {"f64", "f64", "#000000"},
};
/// The key of a value's dtype; the f32 key when its type is unknown.
const DTypeKey& dtype_key(const Graph& g, ValueId v);

/// The value's type as text, `?` when unknown.
std::string type_string(const Graph& g, ValueId v);

/// VizOptions::tags resolved to values (names the graph does not have are ignored).
std::map<ValueId, std::string> tags_by_value(const Graph& g, const VizOptions& options);

}  // namespace weft::viz::internal

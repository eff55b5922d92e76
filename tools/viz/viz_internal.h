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

/// The value's type as text, `?` when unknown.
std::string type_string(const Graph& g, ValueId v);

/// VizOptions::tags resolved to values (names the graph does not have are ignored).
std::map<ValueId, std::string> tags_by_value(const Graph& g, const VizOptions& options);

}  // namespace weft::viz::internal

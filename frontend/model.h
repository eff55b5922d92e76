#pragma once
// A Model: a built network as typed IR plus its parameter table and label tree.

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/module.h"
#include "ir/graph.h"

namespace weft {

/// A named, typed graph input for build().
struct InputSpec {
  std::string name;
  Type type;
};

class Model {
 public:
  Model(Graph graph, std::vector<ParamInfo> params, std::vector<std::string> node_labels,
        std::vector<std::string> labels);

  const Graph& graph() const { return graph_; }
  /// Parameters and state, in graph-input order.
  const std::vector<ParamInfo>& parameters() const { return params_; }
  const ParamInfo* find_parameter(const std::string& name) const;
  /// Number of trainable scalars (kind param).
  int64_t parameter_count() const;

  // ---- The graph tree: labelled subgraphs addressed by dot paths (`encoder.scan`).
  /// Every label path in the model, in definition order.
  const std::vector<std::string>& label_paths() const { return labels_; }
  /// Ok if `path` names a labelled subgraph ("" is the whole model); else an error
  /// listing the known paths.
  Status validate_path(const std::string& path) const;
  /// Parameters (kind param and state) inside the subgraph at `path`.
  StatusOr<std::vector<const ParamInfo*>> parameters_at(const std::string& path) const;
  /// Node indices emitted inside the subgraph at `path`.
  StatusOr<std::vector<int>> subgraph(const std::string& path) const;
  /// Frozen parameters are excluded from what training updates.
  Status freeze(const std::string& path);
  Status thaw(const std::string& path);
  bool is_frozen(const std::string& param_name) const;
  /// The label path that emitted each node, by node index ("" outside any label).
  const std::vector<std::string>& node_label_paths() const { return node_labels_; }

  /// Tagged values (`hidden`, `encoder.hidden` inside a label), for drawing.
  const std::vector<std::pair<std::string, ValueId>>& tags() const { return tags_; }
  void set_tags(std::vector<std::pair<std::string, ValueId>> tags) { tags_ = std::move(tags); }

  /// A hash of the architecture: ops, attributes, types, wiring, parameter names and
  /// shapes — not parameter values and not source locations. fnv1a64 of structure("").
  uint64_t structural_hash() const;
  /// The hash of one labelled subgraph's structure: fnv1a64 of structure(path).
  StatusOr<uint64_t> structural_hash(const std::string& path) const;
  /// What the structural hashes hash: the graph in `.wir` text without locations. For ""
  /// the whole model, values and parameters by name. For a label path, the subgraph's
  /// nodes alone, as a graph `@subgraph` whose inputs are the values those nodes take from
  /// outside (in order of first use; parameters and state keep their kind, the rest are
  /// data) and which has no outputs, its values renumbered (PrintOptions::renumber): no
  /// name from the rest of the model enters it, so the same subgraph prints alike in any
  /// model and at any place in it. One line per node (a body adds its own lines).
  StatusOr<std::string> structure(const std::string& path) const;

 private:
  Graph graph_;
  std::vector<ParamInfo> params_;
  std::vector<std::string> node_labels_;
  std::vector<std::string> labels_;
  std::vector<bool> frozen_;
  std::vector<std::pair<std::string, ValueId>> tags_;
};

}  // namespace weft

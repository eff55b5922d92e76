#include "frontend/model.h"

#include "ir/text.h"
#include "ir/text_util.h"

namespace weft {

Model::Model(Graph graph, std::vector<ParamInfo> params, std::vector<std::string> node_labels,
             std::vector<std::string> labels)
    : graph_(std::move(graph)),
      params_(std::move(params)),
      node_labels_(std::move(node_labels)),
      labels_(std::move(labels)),
      frozen_(params_.size(), false) {}

const ParamInfo* Model::find_parameter(const std::string& name) const {
  for (const ParamInfo& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const ParamInfo& p : params_) {
    if (p.kind == InputKind::param) n += graph_.type(p.value).numel();
  }
  return n;
}

namespace {
bool inside(const std::string& label_path, const std::string& path) {
  return path.empty() || label_path == path || label_path.rfind(path + ".", 0) == 0;
}
}  // namespace

Status Model::validate_path(const std::string& path) const {
  if (path.empty()) return Status();
  for (const std::string& l : labels_) {
    if (l == path) return Status();
  }
  std::string known;
  for (const std::string& l : labels_) known += (known.empty() ? "" : ", ") + l;
  return Error{"no subgraph labelled '" + path + "'; label paths in this model: " +
               (known.empty() ? "(none)" : known)};
}

StatusOr<std::vector<const ParamInfo*>> Model::parameters_at(const std::string& path) const {
  WEFT_RETURN_IF_ERROR(validate_path(path));
  std::vector<const ParamInfo*> out;
  for (const ParamInfo& p : params_) {
    if (inside(p.label_path, path)) out.push_back(&p);
  }
  return out;
}

StatusOr<std::vector<int>> Model::subgraph(const std::string& path) const {
  WEFT_RETURN_IF_ERROR(validate_path(path));
  std::vector<int> out;
  for (size_t i = 0; i < node_labels_.size(); ++i) {
    if (inside(node_labels_[i], path)) out.push_back(static_cast<int>(i));
  }
  return out;
}

Status Model::freeze(const std::string& path) {
  WEFT_RETURN_IF_ERROR(validate_path(path));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].kind == InputKind::param && inside(params_[i].label_path, path)) frozen_[i] = true;
  }
  return Status();
}

Status Model::thaw(const std::string& path) {
  WEFT_RETURN_IF_ERROR(validate_path(path));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (inside(params_[i].label_path, path)) frozen_[i] = false;
  }
  return Status();
}

bool Model::is_frozen(const std::string& param_name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == param_name) return frozen_[i];
  }
  return false;
}

namespace {

// The nodes `nodes` of `g` (in order) as a graph of their own: each value they take from
// outside becomes an input, of its kind if it is one of g's inputs, else data.
Graph extract(const Graph& g, const std::vector<int>& nodes) {
  Graph sub("subgraph");
  std::vector<ValueId> to_sub(static_cast<size_t>(g.num_values()), kNoValue);
  for (int i : nodes) {
    const Node& n = g.node(i);
    std::vector<ValueId> operands;
    for (ValueId v : n.operands) {
      if (to_sub[v] == kNoValue) {
        const int input = g.input_index(v);
        to_sub[v] = sub.add_input("", g.type(v), input >= 0 ? g.inputs()[input].kind : InputKind::data);
      }
      operands.push_back(to_sub[v]);
    }
    std::optional<Type> first_type;
    if (!n.results.empty()) first_type = g.value(n.results[0]).type;
    const ValueId first = sub.add_node(n.op, std::move(operands), n.attrs, n.loc, first_type);
    const int index = static_cast<int>(sub.nodes().size()) - 1;
    sub.node(index).body = n.body;
    if (!n.results.empty()) to_sub[n.results[0]] = first;
    for (size_t k = 1; k < n.results.size(); ++k) {
      to_sub[n.results[k]] = sub.add_result(index, "", g.value(n.results[k]).type);
    }
  }
  return sub;
}

}  // namespace

StatusOr<std::string> Model::structure(const std::string& path) const {
  // Ops, attributes, types and wiring; for the whole model also the inputs' names
  // (parameter names are input names). Never locations: moving a builder call is no
  // change of architecture.
  if (path.empty()) return print_graph(graph_, {.locations = false});
  WEFT_ASSIGN_OR_RETURN(std::vector<int> nodes, subgraph(path));
  return print_graph(extract(graph_, nodes), {.locations = false, .renumber = true});
}

uint64_t Model::structural_hash() const { return fnv1a64(*structure("")); }

StatusOr<uint64_t> Model::structural_hash(const std::string& path) const {
  WEFT_ASSIGN_OR_RETURN(std::string text, structure(path));
  return fnv1a64(text);
}

}  // namespace weft

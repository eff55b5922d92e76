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

uint64_t Model::structural_hash() const {
  // FNV-1a over the printed graph without locations: ops, attributes, types, wiring,
  // and the inputs' names, kinds and shapes (parameter names are input names).
  PrintOptions options;
  options.locations = false;
  return fnv1a64(print_graph(graph_, options));
}

}  // namespace weft

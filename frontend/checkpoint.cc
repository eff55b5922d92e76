#include "frontend/checkpoint.h"

namespace weft {

CheckpointSchema checkpoint_schema(const Model& model) {
  CheckpointSchema schema;
  schema.structural_hash = model.structural_hash();
  for (const ParamInfo& p : model.parameters()) {
    schema.params.push_back({p.name, model.graph().type(p.value)});
  }
  return schema;
}

Status save_checkpoint(const std::string& path, const Model& model,
                       const std::map<std::string, Tensor>& values, int64_t step) {
  return save_checkpoint(path, checkpoint_schema(model), values, step);
}

StatusOr<LoadReport> load_checkpoint(const std::string& path, const Model& model,
                                     std::map<std::string, Tensor>& values,
                                     const LoadOptions& options) {
  WEFT_RETURN_IF_ERROR(model.validate_path(options.subgraph));
  CheckpointScope scope;
  scope.whole = options.subgraph.empty();
  scope.strict = options.strict;
  if (!scope.whole) {
    WEFT_ASSIGN_OR_RETURN(std::vector<const ParamInfo*> scoped,
                          model.parameters_at(options.subgraph));
    for (const ParamInfo* p : scoped) scope.params.push_back(p->name);
  }
  return load_checkpoint(path, checkpoint_schema(model), values, scope);
}

}  // namespace weft

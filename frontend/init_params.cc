#include "frontend/init_params.h"

#include "training/init.h"

namespace weft {

StatusOr<std::vector<Tensor>> initialize_parameters(const Model& model, uint64_t seed) {
  std::vector<Tensor> values;
  const Graph& g = model.graph();
  for (const ParamInfo& p : model.parameters()) {
    const Type& type = g.type(p.value);
    StatusOr<Tensor> t = materialize(p.init, type, seed, parameter_stream(p.name));
    if (!t.ok()) {
      Error e = t.error();
      e.message = "cannot initialize parameter '" + p.name + "': " + e.message;
      for (const Input& in : g.inputs()) {
        if (in.value == p.value) e.loc = in.loc;  // where the module creating it was placed
      }
      return e;
    }
    values.push_back(std::move(*t));
  }
  return values;
}

StatusOr<std::map<std::string, Tensor>> initialize_parameter_map(const Model& model,
                                                                 uint64_t seed) {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> values, initialize_parameters(model, seed));
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.emplace(model.parameters()[i].name, std::move(values[i]));
  }
  return out;
}

}  // namespace weft

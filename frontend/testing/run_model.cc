#include "frontend/testing/run_model.h"

#include <sys/stat.h>

#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft::testing {

StatusOr<ModelRun> run_model(const Model& model, const std::vector<Tensor>& data,
                             const std::map<std::string, Tensor>& params) {
  const Graph& g = model.graph();
  std::vector<Tensor> inputs;
  size_t next_data = 0;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    if (in.kind == InputKind::data) {
      if (next_data >= data.size()) return Error{"run_model: too few data inputs"};
      inputs.push_back(data[next_data++]);
    } else {
      auto it = params.find(name);
      if (it == params.end()) return Error{"run_model: no value for parameter '" + name + "'"};
      inputs.push_back(it->second);
    }
  }
  if (next_data != data.size()) return Error{"run_model: too many data inputs"};
  WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(g, std::move(inputs)));
  ModelRun run;
  run.outputs = std::move(r.outputs);
  for (auto& [name, t] : r.updated) run.updated.emplace(name, std::move(t));
  return run;
}

StatusOr<std::map<std::string, Tensor>> load_params(const Model& model, const std::string& dir,
                                                    int64_t seed) {
  std::map<std::string, Tensor> params;
  for (const ParamInfo& p : model.parameters()) {
    std::string path = dir + "/" + p.name + ".npy";
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      WEFT_ASSIGN_OR_RETURN(Tensor t, read_npy(path));
      params.emplace(p.name, std::move(t));
    } else if (p.name == "rng") {
      params.emplace(p.name, Tensor::from_vector<int64_t>({2}, {seed, 0}));
    }
  }
  return params;
}

}  // namespace weft::testing

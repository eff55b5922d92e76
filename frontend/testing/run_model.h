#pragma once
// Test helper: runs a built Model once with the reference interpreter, taking its data
// inputs in order and its parameters/state by name (e.g. weights loaded from a PyTorch
// fixture). A parameter without a value is an error, so a test never silently runs
// with missing weights.

#include <map>
#include <string>
#include <vector>

#include "frontend/model.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::testing {

struct ModelRun {
  std::vector<Tensor> outputs;
  std::map<std::string, Tensor> updated;  ///< New values of assigned params/state.
};

StatusOr<ModelRun> run_model(const Model& model, const std::vector<Tensor>& data,
                             const std::map<std::string, Tensor>& params);

/// Reads `DIR/NAME.npy` for every parameter and state input of `model` whose file exists
/// (the rng state is seeded with `seed` when it has no file).
StatusOr<std::map<std::string, Tensor>> load_params(const Model& model, const std::string& dir,
                                                    int64_t seed = 0);

}  // namespace weft::testing

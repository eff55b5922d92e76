#pragma once
// First values for a built model's parameters and state, from their initializers:
//
//   auto model = FlowBuilder::from(Linear(784, 256)).build({{"x", f32({128, 784})}});
//   WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> values, initialize_parameters(*model, /*seed=*/42));
//   // values[i] belongs to model->parameters()[i]
//
// Each parameter draws from its own Philox stream, a stable hash of its name
// (`parameter_stream`, training/init.h), so a parameter's value depends only on the seed, its name, its
// type and its initializer: adding, removing or reordering other parameters never
// changes it, and a checkpoint key always gets the same first value.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/model.h"
#include "ir/status.h"
#include "training/init.h"  // parameter_stream
#include "runtime/tensor.h"

namespace weft {

/// Materializes every parameter and state input of `model`, in `parameters()` order.
/// An initializer that cannot produce its parameter's type (orthogonal on a vector, a
/// random one on an integer dtype) is an error naming the parameter.
StatusOr<std::vector<Tensor>> initialize_parameters(const Model& model, uint64_t seed);

/// The same, keyed by parameter name (what frontend/testing/run_model.h takes).
StatusOr<std::map<std::string, Tensor>> initialize_parameter_map(const Model& model, uint64_t seed);

}  // namespace weft

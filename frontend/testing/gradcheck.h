#pragma once
// Test helper: a built Model's parameter gradients, from autodiff (gradient_graph, run by
// the reference interpreter), against central finite differences, element by element.

#include "frontend/model.h"
#include "runtime/tensor.h"

namespace weft::testing {

/// d sum(seed · output 0) / d every parameter of `model` on data input `x`, with random
/// parameters and seed (fixed draws), analytic against central differences (h = 1e-6):
/// each element within tol·(1 + |numeric|). Build the model in f64.
void expect_gradients_match_finite_differences(const Model& model, const Tensor& x, double tol);

}  // namespace weft::testing

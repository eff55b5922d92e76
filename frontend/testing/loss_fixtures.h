#pragma once
// Test helpers for the loss parity tests (losses_test, losses_ternary_test): fixtures
// from frontend/testdata/sequence/, gradients w.r.t. graph inputs by autodiff, and those
// gradients against central finite differences.
#include <string>
#include <vector>

#include "frontend/flow.h"
#include "frontend/model.h"
#include "runtime/tensor.h"

namespace weft::testing {

/// frontend/testdata/sequence/CASE/FILE.npy (a test failure, and an empty tensor, when
/// it cannot be read).
Tensor load_loss_fixture(const std::string& case_name, const std::string& file);

/// `t` converted to f64 (integer tensors unchanged).
Tensor to_f64(const Tensor& t);

/// `name` with every character but letters and digits made '_', for a test's name.
std::string test_name(std::string name);

/// The error of building `flow` on `inputs`, or "(built)".
std::string build_error(const FlowBuilder& flow, const std::vector<InputSpec>& inputs);

/// d sum(output 0 · seed) / d each input named in `wrt`, by autodiff on the reference
/// interpreter; `inputs` are the model's data inputs in order.
StatusOr<std::vector<Tensor>> input_gradients(const Model& model, const std::vector<std::string>& wrt,
                                              std::vector<Tensor> inputs, const Tensor& seed);

/// Expects `grads` (as from input_gradients, one per entry of `wrt`, the positions of
/// those inputs in `inputs`) to match central differences (h = 1e-6) of
/// sum(output 0 · seed), each element within 1e-6·(1 + |numeric|). Build the model in f64.
void expect_input_gradients_match_finite_differences(const Model& model,
                                                     const std::vector<Tensor>& inputs,
                                                     const std::vector<size_t>& wrt,
                                                     const std::vector<Tensor>& grads,
                                                     const Tensor& seed);

}  // namespace weft::testing

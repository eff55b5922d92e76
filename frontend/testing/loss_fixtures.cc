#include "frontend/testing/loss_fixtures.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>

#include "autodiff/grad.h"
#include "frontend/testing/run_model.h"
#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft::testing {

Tensor load_loss_fixture(const std::string& case_name, const std::string& file) {
  auto t = read_npy("frontend/testdata/sequence/" + case_name + "/" + file + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

Tensor to_f64(const Tensor& t) {
  if (!is_floating(t.type().dtype)) return t;
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_double(i);
  return Tensor::from_doubles(DType::f64, t.type().shape, v);
}

std::string test_name(std::string name) {
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

std::string build_error(const FlowBuilder& flow, const std::vector<InputSpec>& inputs) {
  auto model = flow.build(inputs);
  return model.ok() ? "(built)" : model.error().to_string();
}

StatusOr<std::vector<Tensor>> input_gradients(const Model& model, const std::vector<std::string>& wrt,
                                              std::vector<Tensor> inputs, const Tensor& seed) {
  StatusOr<Graph> grad = gradient_graph(model.graph(), 0, wrt, "seed");
  if (!grad.ok()) return grad.error();
  inputs.push_back(seed);
  StatusOr<reference::RunResult> run = reference::run(*grad, inputs);
  if (!run.ok()) return run.error();
  return run->outputs;
}

void expect_input_gradients_match_finite_differences(const Model& model,
                                                     const std::vector<Tensor>& inputs,
                                                     const std::vector<size_t>& wrt,
                                                     const std::vector<Tensor>& grads,
                                                     const Tensor& seed) {
  auto objective = [&](const std::vector<Tensor>& in) {
    auto run = run_model(model, in, {});
    if (!run.ok()) {
      ADD_FAILURE() << run.error().to_string();
      return std::nan("");
    }
    double s = 0;
    for (int64_t i = 0; i < seed.numel(); ++i) s += seed.get_double(i) * run->outputs[0].get_double(i);
    return s;
  };
  const double h = 1e-6;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const size_t k = wrt[w];
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[k].set_double(i, inputs[k].get_double(i) + h);
      minus[k].set_double(i, inputs[k].get_double(i) - h);
      const double numeric = (objective(plus) - objective(minus)) / (2 * h);
      EXPECT_NEAR(grads[w].get_double(i), numeric, 1e-6 * (1 + std::abs(numeric)))
          << "input " << k << " [" << i << "]";
    }
  }
}

}  // namespace weft::testing

#include "frontend/testing/gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "autodiff/grad.h"
#include "frontend/testing/run_model.h"
#include "runtime/reference/interpreter.h"

namespace weft::testing {

void expect_gradients_match_finite_differences(const Model& model, const Tensor& x, double tol) {
  const Graph& g = model.graph();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, Tensor> params;
  std::vector<std::string> wrt;
  for (const ParamInfo& p : model.parameters()) {
    const Type& t = g.type(p.value);
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (double& e : v) e = u(rng);
    params[p.name] = Tensor::from_doubles(t.dtype, t.shape, v);
    wrt.push_back(p.name);
  }
  const Type yt = g.type(g.outputs()[0]);
  std::vector<double> sv(static_cast<size_t>(yt.numel()));
  for (double& e : sv) e = u(rng);
  const Tensor seed = Tensor::from_doubles(yt.dtype, yt.shape, sv);

  StatusOr<Graph> grad = gradient_graph(g, 0, wrt, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    inputs.push_back(params.count(name) ? params.at(name) : x);
  }
  inputs.push_back(seed);
  StatusOr<reference::RunResult> analytic = reference::run(*grad, inputs);
  ASSERT_TRUE(analytic.ok()) << analytic.error().to_string();

  auto objective = [&](const std::map<std::string, Tensor>& p) {
    StatusOr<ModelRun> r = run_model(model, {x}, p);
    if (!r.ok()) {
      ADD_FAILURE() << r.error().to_string();
      return std::nan("");
    }
    double s = 0;
    for (int64_t i = 0; i < yt.numel(); ++i) s += sv[static_cast<size_t>(i)] * r->outputs[0].get_double(i);
    return s;
  };
  const double h = 1e-6;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& dw = analytic->outputs[k];
    for (int64_t i = 0; i < dw.numel(); ++i) {
      std::map<std::string, Tensor> plus = params, minus = params;
      plus[wrt[k]].set_double(i, params[wrt[k]].get_double(i) + h);
      minus[wrt[k]].set_double(i, params[wrt[k]].get_double(i) - h);
      const double numeric = (objective(plus) - objective(minus)) / (2 * h);
      EXPECT_NEAR(dw.get_double(i), numeric, tol * (1 + std::abs(numeric))) << wrt[k] << "[" << i << "]";
    }
  }
}

}  // namespace weft::testing

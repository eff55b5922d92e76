#pragma once
// What cases_test and step_bench feed the cases of cases.h: the graph parsed back, and
// seeded inputs.

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/tensor.h"
#include "tests/cuda/cases.h"
#include "training/derived_state.h"

namespace weft::cuda_cases {

/// The case's graph, parsed from its `.wir` text with every type inferred.
inline Graph parse_case(const Case& c) {
  StatusOr<Graph> g = parse_graph(c.wir, c.name + ".wir");
  WEFT_CHECK(g.ok(), g.ok() ? "" : g.error().to_string());
  InferTypesPass infer;
  StatusOr<bool> typed = infer.run(*g);
  WEFT_CHECK(typed.ok(), typed.ok() ? "" : typed.error().to_string());
  return std::move(*g);
}

/// Seeded inputs by kind and dtype: data floats in [-2, 2] (the training step's
/// `weft.lr` is 0.01), integers in [0, 2] (class labels), parameters uniform in
/// ±1/√fan_in as PyTorch initializes them (fan_in = numel / dims[0]; ±0.5 for vectors),
/// so activations stay O(1) and softmax does not saturate, state (optimizer slots,
/// running statistics, counters) zero but f16 loss scaling's `loss_scale`, which starts at
/// 2^16 as the Trainer starts it (autodiff/loss_scale.h's kLossScaleState, GradScaler's
/// init_scale), and a weight copy the cast of its parameter; `weft.step` is set per step
/// (set_step).
inline std::vector<Tensor> make_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) {
    const Type& type = g.type(in.value);
    Tensor t(type);
    const std::string& name = g.value(in.value).name;
    const int64_t fan_in = type.shape.rank() >= 2 && type.shape[0] > 0
                               ? type.numel() / type.shape[0]
                               : 0;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.5;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = 0;
      if (in.kind == InputKind::param) {
        v = std::uniform_real_distribution<double>(-bound, bound)(rng);
      } else if (in.kind == InputKind::data) {
        if (name.rfind("weft.lr", 0) == 0) v = 0.01;  // every parameter group's lr
        else if (type.dtype == DType::boolean) v = rng() % 2;
        else if (!is_floating(type.dtype)) v = static_cast<double>(rng() % 3);
        else v = std::uniform_real_distribution<double>(-2, 2)(rng);
      } else if (in.kind == InputKind::state && name == "loss_scale") {
        v = 65536;
      }
      t.set_double(i, v);
    }
    inputs.push_back(std::move(t));
  }
  // Derived state (a bf16/f16 step's weight copies, training/derived_state.h) from its
  // master, as the Trainer feeds it.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::optional<std::string> master = weight_copy_source(g.value(g.inputs()[i].value).name);
    const std::optional<ValueId> m = master ? g.find_value(*master) : std::nullopt;
    if (m) inputs[i] = derived_value(inputs[static_cast<size_t>(g.input_index(*m))], inputs[i].type());
  }
  return inputs;
}

/// The training step's 1-based step count (Adam's bias correction divides by 1 - β^step).
inline void set_step(const Graph& g, std::vector<Tensor>& inputs, int step) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (g.value(g.inputs()[i].value).name == "weft.step") inputs[i].set_double(0, step + 1);
  }
}

}  // namespace weft::cuda_cases

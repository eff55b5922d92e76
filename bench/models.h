#pragma once
// The benchmark suite's ten models (bench/PROTOCOL.md), built with the FlowBuilder.
//
//   StatusOr<BenchModel> m = make_bench_model("mlp", Preset::cpu);
//   auto trainer = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr));
//
// Sizes: `paper` is flodl's published suite; `cpu` divides every width and channel count
// by 4, every batch by 4 and the vocabulary by 8, uses 32×32 images and a sequence of 64
// for the transformer (which keeps 4 heads), and keeps depths, loop counts and the
// recurrent models' 50 steps. Parameter names follow the builder's rules (chain
// positions, sub-module names); the comment on each model in models.cc lists them, and
// bench/pytorch maps PyTorch's names onto them.

#include <string>
#include <vector>

#include "frontend/flow.h"
#include "frontend/training.h"

namespace weft::bench {

enum class Preset { cpu, paper };

/// "cpu" / "paper" -> the preset, or an error naming both.
StatusOr<Preset> parse_preset(const std::string& name);
const char* to_string(Preset preset);

/// A model of the suite, ready for Trainer::compile.
struct BenchModel {
  std::string name;
  FlowPtr net;
  /// The stream input first (`input.0`); the step's batch is these, then the target.
  std::vector<InputSpec> inputs;
  LossSpec loss;
  /// The step's target: i64 [batch] class indices for cross-entropy (the transformer's
  /// token targets, flattened), the output's type for MSE.
  Type target;
  double lr = 1e-3;  ///< Adam's learning rate.
  /// For integer (token) inputs and targets: values are drawn from [0, token_range).
  int64_t token_range = 0;
  /// The target is the input itself (the autoencoder).
  bool target_is_input = false;
};

/// The ten models, in the order.
std::vector<std::string> bench_model_names();

/// Builds model `name` at `preset`; an unknown name is an error listing the ten.
StatusOr<BenchModel> make_bench_model(const std::string& name, Preset preset);

}  // namespace weft::bench

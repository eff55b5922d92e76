// The registry of the suite's models and the dense ones: transformer, mlp,
// residual_tower, feedback_fixed, gated_routing, iterative_refine. Sizes in comments are
// the cpu preset's, paper sizes in parentheses.
#include "bench/models_internal.h"
#include "frontend/modules.h"

namespace weft::bench {
namespace internal {

StatusOr<FlowPtr> finish(const FlowBuilder& builder) { return builder.build(); }

namespace {

/// Linear(in -> out) → GELU → LayerNorm(out) as a flow of its own: parameters
/// `0.weight`, `0.bias` (Linear) and `2.weight`, `2.bias` (LayerNorm) under the position
/// where it is placed.
StatusOr<FlowPtr> linear_gelu_ln(int64_t in, int64_t out) {
  return FlowBuilder::from(Linear(in, out)).through(GELU()).through(LayerNorm(out)).build();
}

/// A model on an f32 [batch, features] input with MSE against a target of the output.
BenchModel dense(std::string name, FlowPtr net, int64_t batch, int64_t in, int64_t out) {
  BenchModel m;
  m.name = std::move(name);
  m.net = std::move(net);
  m.inputs = {{"input.0", f32({batch, in})}};
  m.loss = LossSpec::mse();
  m.target = f32({batch, out});
  return m;
}

/// Linear → GELU → LN, then a loop (position 3) applying the residual x + block(x), block
/// = Linear → GELU → LN, `repeats` times with one set of parameters, then Linear.
/// Parameters: `0.*` (first Linear), `2.*` (its LayerNorm), the block's `3.1.0.*` and
/// `3.1.2.*` (the loop's body is Identity, also(block)), and the last Linear's `4.*`.
StatusOr<FlowPtr> shared_refinement(int64_t width, int repeats) {
  WEFT_ASSIGN_OR_RETURN(FlowPtr block, linear_gelu_ln(width, width));
  WEFT_ASSIGN_OR_RETURN(FlowPtr residual, finish(FlowBuilder::from(Identity()).also(block)));
  FlowBuilder f = FlowBuilder::from(Linear(width, width));
  f.through(GELU()).through(LayerNorm(width)).loop_body(residual).for_n(repeats);
  f.through(Linear(width, width));
  return finish(f);
}

}  // namespace

// Embedding(1024, 128) (8192, 512) `0.weight`; learned positions [1, 64, 128]
// ([1, 128, 512]) `1.weight`; 4 post-LN encoder layers labelled `layer0` .. `layer3`, each
//   1: MultiheadAttention(128, 4 heads) (512, 8)  `layerI.1.in_proj_weight`,
//      `layerI.1.in_proj_bias`, `layerI.1.out_proj.weight`, `layerI.1.out_proj.bias`
//   2: LayerNorm (norm1)                           `layerI.2.weight`, `layerI.2.bias`
//   3: FFN Linear(128, 512) → GELU → Linear(512, 128) (512 ↔ 2048), as a residual:
//                                                  `layerI.3.0.*`, `layerI.3.2.*`
//   4: LayerNorm (norm2)                           `layerI.4.weight`, `layerI.4.bias`
// (position 0 of a layer is an Identity: a flow must start with a module); then
// Linear(128, 1024) `6.weight`, `6.bias`, and Flatten(0, 1): logits [8·64, 1024]
// ([32·128, 8192]) for cross-entropy against i64 [512] targets. Batch 8 (32), lr 1e-4.
StatusOr<BenchModel> transformer(Sizes s) {
  const int64_t vocab = s.cpu() ? 1024 : 8192, d = s.width(512), heads = s.cpu() ? 4 : 8;
  const int64_t ffn = s.width(2048), batch = s.batch(32), seq = s.cpu() ? 64 : 128;
  FlowBuilder f = FlowBuilder::from(Embedding(vocab, d));
  f.through(LearnedParameter({1, seq, d}));
  for (int layer = 0; layer < 4; ++layer) {
    WEFT_ASSIGN_OR_RETURN(
        FlowPtr ff,
        FlowBuilder::from(Linear(d, ffn)).through(GELU()).through(Linear(ffn, d)).build());
    WEFT_ASSIGN_OR_RETURN(FlowPtr encoder, FlowBuilder::from(Identity())
                                               .also(MultiheadAttention(d, heads))
                                               .through(LayerNorm(d))
                                               .also(ff)
                                               .through(LayerNorm(d))
                                               .label("layer" + std::to_string(layer))
                                               .build());
    f.through(encoder);
  }
  f.through(Linear(d, vocab)).through(Flatten(0, 1));
  BenchModel m;
  m.name = "transformer";
  WEFT_ASSIGN_OR_RETURN(m.net, finish(f));
  m.inputs = {{"input.0", i64({batch, seq})}};
  m.loss = LossSpec::cross_entropy();
  m.target = i64({batch * seq});
  m.lr = 1e-4;
  m.token_range = vocab;
  return m;
}

// 256 → 512 (1024 → 2048) GELU LN, 3 × (512 → 512 GELU LN), 512 → 256; batch 64 (256).
// One flat chain, PyTorch's nn.Sequential names: Linear `0`, `3`, `6`, `9`, `12`;
// LayerNorm `2`, `5`, `8`, `11` (each `.weight`, `.bias`).
StatusOr<BenchModel> mlp(Sizes s) {
  const int64_t in = s.width(1024), hidden = s.width(2048);
  FlowBuilder f = FlowBuilder::from(Linear(in, hidden));
  f.through(GELU()).through(LayerNorm(hidden));
  for (int i = 0; i < 3; ++i) {
    f.through(Linear(hidden, hidden)).through(GELU()).through(LayerNorm(hidden));
  }
  f.through(Linear(hidden, in));
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, finish(f));
  return dense("mlp", net, s.batch(256), in, in);
}

// Linear(256, 256) (1024) `0.*`; 12 × also(Linear → GELU → LN), each its own instance at
// positions 1..12: `I.0.*` (Linear), `I.2.*` (LayerNorm); Linear(256, 256) `13.*`.
// Batch 64 (256).
StatusOr<BenchModel> residual_tower(Sizes s) {
  const int64_t w = s.width(1024);
  FlowBuilder f = FlowBuilder::from(Linear(w, w));
  for (int i = 0; i < 12; ++i) {
    WEFT_ASSIGN_OR_RETURN(FlowPtr block, linear_gelu_ln(w, w));
    f.also(block);
  }
  f.through(Linear(w, w));
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, finish(f));
  return dense("residual_tower", net, s.batch(256), w, w);
}

// Width 128 (512), shared block looped 10 times, batch 32 (128): `0.*`, `2.*`, `3.1.0.*`,
// `3.1.2.*`, `4.*` (see shared_refinement).
StatusOr<BenchModel> feedback_fixed(Sizes s) {
  const int64_t w = s.width(512);
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, shared_refinement(w, /*repeats=*/10));
  return dense("feedback_fixed", net, s.batch(128), w, w);
}

// Linear(128, 128) (512) `0.*` → GELU → gate (position 2): router Linear(128, 8)
// `2.router.*`, 8 experts Linear → GELU → LN `2.experts.E.0.*`, `2.experts.E.2.*` →
// Linear(128, 128) `3.*`. Batch 64 (256).
StatusOr<BenchModel> gated_routing(Sizes s) {
  const int64_t w = s.width(512), experts = 8;
  std::vector<ModulePtr> expert_nets;
  for (int e = 0; e < experts; ++e) {
    WEFT_ASSIGN_OR_RETURN(FlowPtr expert, linear_gelu_ln(w, w));
    expert_nets.push_back(expert);
  }
  FlowBuilder f = FlowBuilder::from(Linear(w, w));
  f.through(GELU()).gate(Linear(w, experts), std::move(expert_nets)).through(Linear(w, w));
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, finish(f));
  return dense("gated_routing", net, s.batch(256), w, w);
}

// Width 256 (1024), shared block looped 8 times, batch 64 (256): `0.*`, `2.*`, `3.1.0.*`,
// `3.1.2.*`, `4.*` (see shared_refinement).
StatusOr<BenchModel> iterative_refine(Sizes s) {
  const int64_t w = s.width(1024);
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, shared_refinement(w, /*repeats=*/8));
  return dense("iterative_refine", net, s.batch(256), w, w);
}

}  // namespace internal

StatusOr<Preset> parse_preset(const std::string& name) {
  if (name == "cpu") return Preset::cpu;
  if (name == "paper") return Preset::paper;
  return Error{"unknown preset '" + name + "'; presets: cpu, paper"};
}

const char* to_string(Preset preset) { return preset == Preset::cpu ? "cpu" : "paper"; }

std::vector<std::string> bench_model_names() {
  return {"transformer",      "mlp",     "residual_tower", "feedback_fixed", "gated_routing",
          "iterative_refine", "gru_seq", "conv_autoenc",   "lstm_seq",       "convnet"};
}

StatusOr<BenchModel> make_bench_model(const std::string& name, Preset preset) {
  using Builder = StatusOr<BenchModel> (*)(internal::Sizes);
  static const std::vector<std::pair<std::string, Builder>> kBuilders = {
      {"transformer", internal::transformer},
      {"mlp", internal::mlp},
      {"residual_tower", internal::residual_tower},
      {"feedback_fixed", internal::feedback_fixed},
      {"gated_routing", internal::gated_routing},
      {"iterative_refine", internal::iterative_refine},
      {"gru_seq", internal::gru_seq},
      {"conv_autoenc", internal::conv_autoenc},
      {"lstm_seq", internal::lstm_seq},
      {"convnet", internal::convnet},
  };
  for (const auto& [known, build] : kBuilders) {
    if (known == name) return build(internal::Sizes{preset});
  }
  std::string names;
  for (const std::string& n : bench_model_names()) names += (names.empty() ? "" : ", ") + n;
  return Error{"unknown model '" + name + "'; models: " + names};
}

}  // namespace weft::bench

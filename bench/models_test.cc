// The suite's models: each builds at the cpu preset, compiles into a Trainer and takes a
// step; parameter counts are pinned against PyTorch 1.13's (the same architectures in
// torch.nn, counted with sum(p.numel() for p in m.parameters())); parameter names follow
// the layout PROTOCOL.md documents; the step statistics count GEMMs as documented.
#include "bench/models.h"
#include "bench/timed_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "bench/step_stats.h"
#include "frontend/modules.h"
#include "frontend/testing/run_model.h"
#include "ir/text.h"

namespace weft::bench {
namespace {

/// The model with its batch (dim 0 of every input and of the target) set to `batch`,
/// to keep the heavy models' test step short.
BenchModel with_batch(BenchModel m, int64_t batch) {
  const int64_t old = m.inputs[0].type.shape[0];
  for (InputSpec& in : m.inputs) in.type.shape.dims[0] = batch;
  m.target.shape.dims[0] = m.target.shape[0] / old * batch;
  return m;
}

TEST(BenchModels, NamesInTheIssuesOrder) {
  EXPECT_EQ(bench_model_names(),
            (std::vector<std::string>{"transformer", "mlp", "residual_tower", "feedback_fixed",
                                      "gated_routing", "iterative_refine", "gru_seq",
                                      "conv_autoenc", "lstm_seq", "convnet"}));
}

TEST(BenchModels, UnknownModelAndPresetAreErrors) {
  auto m = make_bench_model("resnet", Preset::cpu);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "unknown model 'resnet'; models: transformer, mlp, residual_tower, feedback_fixed, "
            "gated_routing, iterative_refine, gru_seq, conv_autoenc, lstm_seq, convnet");
  auto p = parse_preset("gpu");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "unknown preset 'gpu'; presets: cpu, paper");
}

// torch 1.13 counts of the same models (nn.TransformerEncoderLayer, nn.GRUCell, nn.LSTM,
// nn.Conv2d / nn.ConvTranspose2d / nn.BatchNorm2d, ...).
const std::map<std::string, std::pair<int64_t, int64_t>> kPyTorchParams = {
    // model: {cpu, paper}
    {"transformer", {1064448, 21071872}},   {"mlp", {1054976, 16802816}},
    {"residual_tower", {927232, 14718976}}, {"feedback_fixed", {50048, 790016}},
    {"gated_routing", {168200, 2638856}},   {"iterative_refine", {198400, 3152896}},
    {"gru_seq", {82752, 1314048}},          {"conv_autoenc", {346659, 5515395}},
    {"lstm_seq", {239680, 3809536}},        {"convnet", {248985, 3965028}},
};

TEST(BenchModels, ParameterCountsMatchPyTorch) {
  for (Preset preset : {Preset::cpu, Preset::paper}) {
    for (const std::string& name : bench_model_names()) {
      SCOPED_TRACE(name + " at " + to_string(preset));
      auto m = make_bench_model(name, preset);
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      auto built = m->net->build(m->inputs);
      ASSERT_TRUE(built.ok()) << built.error().to_string();
      const auto& want = kPyTorchParams.at(name);
      EXPECT_EQ(built->parameter_count(), preset == Preset::cpu ? want.first : want.second);
      EXPECT_EQ(built->graph().type(built->graph().outputs()[0]).shape,
                m->loss.integer_targets() ? Shape({m->target.shape[0], m->token_range})
                                          : m->target.shape);
    }
  }
}

std::vector<std::string> param_names(const std::string& model) {
  auto m = make_bench_model(model, Preset::cpu);
  EXPECT_TRUE(m.ok());
  auto built = m->net->build(m->inputs);
  EXPECT_TRUE(built.ok()) << built.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : built->parameters()) names.push_back(p.name);
  return names;
}

TEST(BenchModels, ParameterNamesAreTheDocumentedOnes) {
  // A loop's body has one set of parameters, under the loop's position.
  EXPECT_EQ(param_names("feedback_fixed"),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "3.1.0.weight",
                                      "3.1.0.bias", "3.1.2.weight", "3.1.2.bias", "4.weight",
                                      "4.bias"}));
  EXPECT_EQ(param_names("iterative_refine").back(), "4.bias");
  EXPECT_EQ(param_names("lstm_seq"),
            (std::vector<std::string>{"0.l0.weight_ih", "0.l0.weight_hh", "0.l0.bias_ih",
                                      "0.l0.bias_hh", "0.l1.weight_ih", "0.l1.weight_hh",
                                      "0.l1.bias_ih", "0.l1.bias_hh", "1.weight", "1.bias"}));
  auto gated = param_names("gated_routing");
  ASSERT_EQ(gated.size(), 2u + 2u + 8u * 4u + 2u);
  EXPECT_EQ(gated[2], "2.router.weight");
  EXPECT_EQ(gated[4], "2.experts.0.0.weight");
  EXPECT_EQ(gated[35], "2.experts.7.2.bias");
  auto transformer = param_names("transformer");
  EXPECT_EQ(transformer[2], "layer0.1.in_proj_weight");
  EXPECT_EQ(transformer[transformer.size() - 3], "layer3.4.bias");
  EXPECT_EQ(transformer.back(), "6.bias");
  auto conv = param_names("conv_autoenc");
  EXPECT_EQ(conv[6], "1.num_batches_tracked");
  EXPECT_EQ(conv.back(), "21.bias");
  EXPECT_EQ(param_names("convnet").back(), "21.bias");
}

// Every model compiles into a Trainer and takes one step with a finite loss; the heavy
// ones with a smaller batch (the reference interpreter is slow, and the test is about
// the graph, not the figures).
TEST(BenchModels, EveryModelTrainsOneStep) {
  const std::map<std::string, int64_t> small_batch = {
      {"transformer", 1}, {"mlp", 8},      {"residual_tower", 8}, {"conv_autoenc", 2},
      {"convnet", 2},     {"lstm_seq", 4}, {"gru_seq", 4}};
  std::mt19937_64 rng(1);
  for (const std::string& name : bench_model_names()) {
    SCOPED_TRACE(name);
    auto m = make_bench_model(name, Preset::cpu);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    BenchModel model = small_batch.count(name) ? with_batch(*m, small_batch.at(name)) : *m;
    auto trainer =
        Trainer::compile(model.net, model.inputs, model.loss, OptimizerSpec::adam(model.lr));
    ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
    std::vector<Tensor> batch;
    for (const InputSpec& in : model.inputs)
      batch.push_back(random_tensor(in.type, model.token_range, rng));
    batch.push_back(model.target_is_input ? batch[0]
                                          : random_tensor(model.target, model.token_range, rng));
    auto loss = trainer->step(batch);
    ASSERT_TRUE(loss.ok()) << loss.error().to_string();
    EXPECT_TRUE(std::isfinite(*loss)) << *loss;
    StepStats st = step_stats(*trainer);
    EXPECT_GT(st.matmul_flops, 0);
    EXPECT_GE(st.planned_bytes, st.state_bytes);
  }
}

TEST(StepStats, CountsTheMlpsGemms) {
  // One Linear(256 -> 512) on [64, 256]: forward x·Wᵀ, dW and (not needed, the input is
  // data) no dx. Each is 64·256·512 multiply-adds.
  auto net = FlowBuilder::from(Linear(256, 512)).build();
  ASSERT_TRUE(net.ok());
  auto trainer =
      Trainer::compile(*net, {{"x", f32({64, 256})}}, LossSpec::mse(), OptimizerSpec::adam());
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  StepStats st = step_stats(*trainer);
  EXPECT_EQ(st.matmul_flops, 2.0 * 2 * 64 * 256 * 512);
  // Adam: weight and bias, their gradients, two slots each.
  EXPECT_EQ(st.param_bytes, (512 * 256 + 512) * 4);
}

TEST(StepStats, CountsAConvolutionAsItsIm2colGemm) {
  auto net = FlowBuilder::from(Conv2d(3, 8, {.kernel = 3, .padding = 1, .bias = false})).build();
  ASSERT_TRUE(net.ok());
  auto trainer =
      Trainer::compile(*net, {{"x", f32({2, 3, 5, 5})}}, LossSpec::mse(), OptimizerSpec::adam());
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  // Forward m = 2·5·5, n = 8, k = 3·3·3; the weight gradient m = 8, n = 27, k = 50.
  std::vector<std::array<int64_t, 4>> want = {{50, 8, 27, 1}, {8, 27, 50, 1}};
  EXPECT_EQ(step_stats(*trainer).gemm_shapes, want);
}

// A product with transpose_a (aᵀ·b, as decompose-composites writes attention_grad's dk
// and dv) contracts over a's second-to-last dim. An attention node counts as the matmuls
// the CPU writes it back as: q·kᵀ [5, 7] over 3, then p·v [5, 9] over 7, per batch of 2.
TEST(StepStats, CountsATransposedProductAndAttentionsMatmuls) {
  StatusOr<Graph> g = parse_graph(R"(graph @f(%a: f32[8,4], %b: f32[8,6], %q: f32[2,5,3], %k: f32[2,7,3], %v: f32[2,7,9]) {
  %c = matmul(%a, %b) {transpose_a=true} : f32[4,6]
  %y = attention(%q, %k, %v) {scale=0.5} : f32[2,5,9]
  return %c, %y
})",
                                  "step_stats_test.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  std::vector<std::array<int64_t, 4>> want = {{4, 6, 8, 1}, {5, 7, 3, 2}, {5, 9, 7, 2}};
  EXPECT_EQ(gemm_shapes(*g), want);
}

// The loop models trained as loop invocations and unrolled (TrainOptions::unroll_loops)
// from the same graph and seed: the same losses, step after step, to 1e-5.
TEST(BenchModels, LoopedAndUnrolledFormsGiveTheSameLosses) {
  for (const std::string name : {"gru_seq", "lstm_seq", "feedback_fixed", "iterative_refine"}) {
    auto m = make_bench_model(name, Preset::cpu);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    std::mt19937_64 rng(3);
    std::vector<Tensor> batch;
    for (const InputSpec& in : m->inputs) batch.push_back(random_tensor(in.type, m->token_range, rng));
    batch.push_back(random_tensor(m->target, m->token_range, rng));
    std::vector<std::vector<double>> losses;
    for (const bool unrolled : {false, true}) {
      TrainOptions options{.seed = 5};
      options.unroll_loops = unrolled;
      auto t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), options);
      ASSERT_TRUE(t.ok()) << t.error().to_string();
      losses.emplace_back();
      for (int s = 0; s < 3; ++s) {
        auto loss = t->step(batch);
        ASSERT_TRUE(loss.ok()) << loss.error().to_string();
        losses.back().push_back(*loss);
      }
    }
    for (size_t s = 0; s < losses[0].size(); ++s) {
      EXPECT_NEAR(losses[0][s], losses[1][s], 1e-5 * std::abs(losses[1][s])) << name << " step " << s;
    }
  }
}

TEST(BenchModels, RecurrentAndSharedBlockModelsAreLoops) {
  // One loop per recurrent layer, one per shared block: the graph does not grow with the
  // number of steps.
  const std::map<std::string, int> want = {
      {"gru_seq", 1}, {"lstm_seq", 2}, {"feedback_fixed", 1}, {"iterative_refine", 1}};
  for (const auto& [name, loops] : want) {
    auto m = make_bench_model(name, Preset::cpu);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    auto built = m->net->build(m->inputs);
    ASSERT_TRUE(built.ok()) << built.error().to_string();
    int n = 0;
    for (const Node& node : built->graph().nodes()) n += node.op == Op::Scan;
    EXPECT_EQ(n, loops) << name;
  }
}

}  // namespace
}  // namespace weft::bench

// Whole training steps on the compiled CPU backend match the reference interpreter's
// losses to 1e-5 over 20 steps (issue [Compiled CPU], "Tests"), for models that exercise
// every kind of kernel: GEMMs, convolutions (2-D and 1-D), pooling, batch and instance
// norm, resampling, dropout, attention, layer norm, GELU, and every optimizer's fused
// update.
#include <gtest/gtest.h>

#include <cstdio>

#include <cmath>
#include <random>
#include <tuple>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/cpu/executor.h"

namespace weft {
namespace {

struct Case {
  std::string name;
  StatusOr<FlowPtr> (*net)();
  std::vector<InputSpec> inputs;
  LossSpec loss;
  OptimizerSpec optimizer;
};

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape{std::move(dims)}}; }

StatusOr<FlowPtr> mlp() {
  return FlowBuilder::from(Linear(20, 32)).through(GELU()).through(Linear(32, 32))
      .through(Tanh()).through(Linear(32, 5)).build();
}

StatusOr<FlowPtr> cnn() {
  // No bias before batch norm: its gradient is exactly zero, so AdamW would amplify
  // rounding noise (see the note on attention's key bias below).
  return FlowBuilder::from(Conv2d(2, 6, {.kernel = 3, .padding = 1, .bias = false}))
      .through(BatchNorm2d(6))
      .through(ReLU())
      .through(MaxPool2d(2))
      .through(Conv2d(6, 8, {.kernel = 3, .stride = 2}))
      .through(ReLU())
      .through(Flatten())
      .through(Dropout(0.25))
      .through(Linear(8 * 1 * 1, 4))
      .build();
}

// 1-D convolutions (conv over [L]) and pools (2-D ops on a unit height), BatchNorm1d,
// InstanceNorm1d. No bias before a norm, as in cnn(): its gradient is exactly zero.
StatusOr<FlowPtr> sequence_cnn() {
  return FlowBuilder::from(Conv1d(3, 6, {.kernel = 3, .padding = 1, .bias = false}))
      .through(BatchNorm1d(6))
      .through(ReLU())
      .through(MaxPool1d(2))
      .through(ConvTranspose1d(6, 4, {.kernel = 3, .stride = 2, .padding = 1, .bias = false,
                                      .output_padding = 1}))
      .through(AvgPool1d(2))
      .through(InstanceNorm1d(4, 1e-5, /*affine=*/true))
      .through(Flatten())
      .through(Linear(4 * 4, 3))
      .build();
}

// 3-D convolutions (conv over [D, H, W]; 16 channels take oneDNN's 5-D primitives, the
// first layer im2col) and pools (separable: 2-D pools over (H, W), then D), BatchNorm3d.
StatusOr<FlowPtr> volume_cnn() {
  return FlowBuilder::from(Conv3d(2, 16, {.kernel = 3, .padding = 1, .bias = false}))
      .through(BatchNorm3d(16))
      .through(ReLU())
      .through(MaxPool3d(2))
      .through(Conv3d(16, 16, {.kernel = 3, .padding = 1}))
      .through(ConvTranspose3d(16, 4, {.kernel = 2, .stride = 2}))
      .through(AvgPool3d(3, 2, 1))
      .through(Flatten())
      .through(Linear(4 * 2 * 2 * 2, 3))
      .build();
}

// Pixel (un)shuffle, bilinear and nearest upsampling, Unfold/Fold (a grouped conv and
// its input gradient with one-hot weights built from iota), InstanceNorm2d.
StatusOr<FlowPtr> resampling() {
  return FlowBuilder::from(Conv2d(2, 8, {.kernel = 3, .padding = 1, .bias = false}))
      .through(PixelShuffle(2))
      .through(PixelUnshuffle(2))
      .through(InstanceNorm2d(8, 1e-5, /*affine=*/true))
      .through(Upsample({.scale_factor = 2, .mode = UpsampleMode::bilinear}))
      .through(Unfold({.kernel = 3, .stride = 2, .padding = 1}))
      .through(Fold(12, 12, {.kernel = 3, .stride = 2, .padding = 1}))
      .through(Upsample({.scale_factor = 2}))
      .through(MaxPool2d(8))
      .through(Flatten())
      .through(Linear(8 * 3 * 3, 3))
      .build();
}

StatusOr<FlowPtr> transformer() {
  WEFT_ASSIGN_OR_RETURN(FlowPtr ffn, FlowBuilder::from(Linear(16, 32)).through(GELU())
                                         .through(Linear(32, 16)).build());
  return FlowBuilder::from(Identity())
      .also(MultiheadAttention(16, 2))
      .through(LayerNorm(16))
      .also(ffn)
      .through(LayerNorm(16))
      .through(Flatten())
      .through(Linear(6 * 16, 3))
      .build();
}

std::vector<Case> cases() {
  return {
      {"mlp_adam", mlp, {{"x", f32({16, 20})}}, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2)},
      {"mlp_sgd_mse", mlp, {{"x", f32({16, 20})}}, LossSpec::mse(),
       OptimizerSpec::sgd(0.05, /*momentum=*/0.9, /*dampening=*/0, /*weight_decay=*/1e-4)},
      {"cnn_adamw", cnn, {{"x", f32({8, 2, 6, 6})}}, LossSpec::cross_entropy(),
       OptimizerSpec::adamw(1e-2)},
      {"sequence_cnn_adam", sequence_cnn, {{"x", f32({8, 3, 8})}}, LossSpec::cross_entropy(),
       OptimizerSpec::adam(1e-2)},
      {"volume_cnn_adam", volume_cnn, {{"x", f32({4, 2, 4, 4, 4})}}, LossSpec::cross_entropy(),
       OptimizerSpec::adam(1e-2)},
      {"resampling_sgd", resampling, {{"x", f32({4, 2, 6, 6})}}, LossSpec::cross_entropy(),
       OptimizerSpec::sgd(0.05)},
      {"transformer_rmsprop", transformer, {{"x", f32({4, 6, 16})}}, LossSpec::cross_entropy(),
       OptimizerSpec::rmsprop(1e-3)},
  };
}

Tensor random(const Type& t, std::mt19937& rng, int64_t classes) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (classes > 0) x.set_double(i, static_cast<double>(rng() % classes));
    else x.set_double(i, std::uniform_real_distribution<double>(-1, 1)(rng));
  }
  return x;
}

// (model, thread count): every model on one thread and on two.
class BackendsMatch : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(BackendsMatch, TwentyStepsOfLosses) {
  const Case c = cases()[std::get<0>(GetParam())];
  const int threads = std::get<1>(GetParam());
  auto net = c.net();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto cpu = Trainer::compile(*net, c.inputs, c.loss, c.optimizer,
                              {.seed = 5, .backend = "cpu", .bind = {.num_threads = threads}});
  auto ref = Trainer::compile(*net, c.inputs, c.loss, c.optimizer,
                              {.seed = 5, .backend = "reference"});
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  const Graph& g = ref->step_graph();
  Type target_type = g.type(*g.find_value("weft.target"));
  const int64_t classes = c.loss.integer_targets() ? 3 : 0;
  std::mt19937 rng(11);
  for (int step = 0; step < 20; ++step) {
    std::vector<Tensor> batch;
    for (const InputSpec& in : c.inputs) batch.push_back(random(in.type, rng, 0));
    batch.push_back(random(target_type, rng, classes));
    auto a = cpu->step(batch);
    auto b = ref->step(batch);
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_NEAR(*a, *b, 1e-5 * std::max(1.0, std::abs(*b))) << c.name << " step " << step;
  }
  // The parameters agree too, and so does evaluation. (Attention's key bias has an
  // exactly-zero gradient in exact arithmetic — softmax ignores a constant added to a
  // row — so both backends feed rounding noise of ~1e-9 to RMSprop/Adam, which scale it
  // up to steps of ~lr: those entries agree only to about 1e-4 after 20 steps.)
  for (const auto& [name, value] : ref->values()) {
    std::string why;
    EXPECT_TRUE(all_close(cpu->values().at(name), value, 1e-3, &why)) << c.name << " " << name << ": " << why;
  }
  std::vector<Tensor> eval_batch;
  for (const InputSpec& in : c.inputs) eval_batch.push_back(random(in.type, rng, 0));
  auto ea = cpu->evaluate(eval_batch);
  auto eb = ref->evaluate(eval_batch);
  ASSERT_TRUE(ea.ok()) << ea.error().to_string();
  ASSERT_TRUE(eb.ok()) << eb.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close((*ea)[0], (*eb)[0], 1e-4, &why)) << why;
}

// Every convolution kernel (im2col and oneDNN, forward and both gradients) keeps its
// temporaries in one scratch block the executor shares: the block is the largest
// kernel's need, not their sum, and the steps still match the reference.
TEST(BackendsMatchScratch, ConvolutionsShareOneScratchBlock) {
  auto net = FlowBuilder::from(Conv2d(3, 16, {.kernel = 3, .padding = 1}))
                 .through(ReLU())
                 .through(Conv2d(16, 16, {.kernel = 3, .padding = 1}))
                 .through(ReLU())
                 .through(Conv2d(16, 4, {.kernel = 3, .stride = 2}))
                 .through(Flatten())
                 .through(Linear(4 * 3 * 3, 3))
                 .build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  const std::vector<InputSpec> inputs = {{"x", f32({6, 3, 8, 8})}};
  auto cpu = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2),
                              {.seed = 5, .backend = "cpu", .bind = {.num_threads = 2}});
  auto ref = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(1e-2),
                              {.seed = 5, .backend = "reference"});
  ASSERT_TRUE(cpu.ok() && ref.ok());
  // The scratch sharing is the cpu executor's own: asked of it, not of ProgramExecutor.
  const auto& ex = dynamic_cast<const cpu::Executor&>(*cpu->compiled_step());
  EXPECT_NE(ex.describe().find("onednn conv_backward_weight"), std::string::npos) << ex.describe();
  EXPECT_NE(ex.describe().find("im2col+"), std::string::npos) << ex.describe();
  EXPECT_GT(ex.scratch_bytes(), 0);
  EXPECT_LT(ex.scratch_bytes(), ex.unshared_scratch_bytes() / 2);
  std::printf("  shared scratch %lld bytes (one block per kernel: %lld)\n",
              static_cast<long long>(ex.scratch_bytes()),
              static_cast<long long>(ex.unshared_scratch_bytes()));
  std::mt19937 rng(3);
  for (int step = 0; step < 5; ++step) {
    const std::vector<Tensor> batch = {random(inputs[0].type, rng, 0),
                                       random(Type{DType::i64, Shape({6})}, rng, 3)};
    auto a = cpu->step(batch);
    auto b = ref->step(batch);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NEAR(*a, *b, 1e-5 * std::max(1.0, std::abs(*b))) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BackendsMatch,
                         ::testing::Combine(::testing::Range(0, 6), ::testing::Values(1, 2)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
                           return cases()[std::get<0>(info.param)].name + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_threads";
                         });

}  // namespace
}  // namespace weft

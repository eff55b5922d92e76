// LossSpec::network_output(): the Trainer trains a flow whose output is its loss — here a
// CTC model (a Linear and LogSoftmax over frames, then CTCLoss with the targets and
// lengths as inputs of the flow, through uses) — with no target of its own. The compiled
// CPU step matches the reference interpreter step for step, the loss falls, and the
// errors (an output that is not a scalar, a batch with a target) are pinned.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {

constexpr int64_t kFrames = 12, kBatch = 4, kFeatures = 6, kClasses = 5, kLabels = 4;

StatusOr<FlowPtr> ctc_net() {
  return FlowBuilder::from(Linear(kFeatures, kClasses))
      .through(LogSoftmax(-1))
      .input({"targets", "input_lengths", "target_lengths"})
      .through(CTCLoss())
      .uses({"targets", "input_lengths", "target_lengths"})
      .build();
}

std::vector<InputSpec> ctc_inputs() {
  return {{"x", Type{DType::f32, {kFrames, kBatch, kFeatures}}},
          {"targets", Type{DType::i64, {kBatch, kLabels}}},
          {"input_lengths", Type{DType::i64, {kBatch}}},
          {"target_lengths", Type{DType::i64, {kBatch}}}};
}

// One fixed batch: features that carry the labels (so the model can learn them), mixed
// input and target lengths, repeated labels.
std::vector<Tensor> ctc_batch() {
  Tensor x(Type{DType::f32, {kFrames, kBatch, kFeatures}});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.7 * static_cast<double>(i)));
  Tensor targets(Type{DType::i64, {kBatch, kLabels}});
  const int64_t labels[kBatch][kLabels] = {{1, 2, 3, 4}, {2, 2, 1, 0}, {4, 3, 0, 0}, {1, 0, 0, 0}};
  for (int64_t n = 0; n < kBatch; ++n) {
    for (int64_t s = 0; s < kLabels; ++s) targets.set_double(n * kLabels + s, static_cast<double>(labels[n][s]));
  }
  Tensor input_lengths(Type{DType::i64, {kBatch}}), target_lengths(Type{DType::i64, {kBatch}});
  const int64_t frames[kBatch] = {12, 10, 9, 5}, lengths[kBatch] = {4, 3, 2, 1};
  for (int64_t n = 0; n < kBatch; ++n) {
    input_lengths.set_double(n, static_cast<double>(frames[n]));
    target_lengths.set_double(n, static_cast<double>(lengths[n]));
  }
  return {x, targets, input_lengths, target_lengths};
}

StatusOr<std::vector<double>> train(const std::string& backend, int steps) {
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, ctc_net());
  WEFT_ASSIGN_OR_RETURN(Trainer trainer,
                        Trainer::compile(net, ctc_inputs(), LossSpec::network_output(),
                                         OptimizerSpec::adam(5e-2), {.seed = 7, .backend = backend}));
  const std::vector<Tensor> batch = ctc_batch();
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    WEFT_ASSIGN_OR_RETURN(double loss, trainer.step(batch));
    losses.push_back(loss);
  }
  return losses;
}

TEST(NetworkOutputLoss, TrainsACtcModelOnCpuAsTheReference) {
  StatusOr<std::vector<double>> cpu = train("cpu", 40);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  StatusOr<std::vector<double>> reference = train("reference", 40);
  ASSERT_TRUE(reference.ok()) << reference.error().to_string();
  for (size_t i = 0; i < cpu->size(); ++i) {
    EXPECT_NEAR((*cpu)[i], (*reference)[i], 1e-4 * (1 + std::abs((*reference)[i]))) << "step " << i;
  }
  // The loss (per label, mean over the batch) falls by more than half.
  EXPECT_LT(cpu->back(), 0.5 * cpu->front()) << cpu->front() << " -> " << cpu->back();
}

TEST(NetworkOutputLoss, Errors) {
  // An output that is not a scalar loss.
  StatusOr<FlowPtr> logits = FlowBuilder::from(Linear(kFeatures, kClasses)).build();
  ASSERT_TRUE(logits.ok());
  StatusOr<Trainer> t = Trainer::compile(*logits, {{"x", Type{DType::f32, {3, kFeatures}}}},
                                         LossSpec::network_output(), OptimizerSpec::sgd(0.1));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message,
            "LossSpec::network_output(): the network's output is the loss and must be a floating "
            "scalar, got f32[3,5]; end the flow in a loss module with a reduction (mean or sum)");
  // A batch with one tensor too many (a target).
  StatusOr<FlowPtr> net = ctc_net();
  ASSERT_TRUE(net.ok());
  for (const char* backend : {"cpu", "reference"}) {
    StatusOr<Trainer> trainer = Trainer::compile(*net, ctc_inputs(), LossSpec::network_output(),
                                                 OptimizerSpec::sgd(0.1), {.backend = backend});
    ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
    std::vector<Tensor> batch = ctc_batch();
    batch.push_back(batch[2]);
    StatusOr<double> loss = trainer->step(batch);
    ASSERT_FALSE(loss.ok()) << backend;
    EXPECT_EQ(loss.error().message,
              "step(...) takes 4 tensors (the inputs; LossSpec::network_output() takes no "
              "target), got 5")
        << backend;
  }
}

}  // namespace
}  // namespace weft

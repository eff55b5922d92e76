// The normalization, dropout and loss converters (ops/norm.cc, loss.cc): against numbers
// worked out by hand, their refusals pinned, BatchNormalization trained in a flow.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "frontend/flow.h"
#include "frontend/testing/run_model.h"
#include "interop/onnx/testing/nn_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_norm_loss_test {  // this file's names, apart in its package's unity test

using nn_case::iota_f32;
using nn_case::expect_close;
using nn_case::run_ok;
using nn_case::save;
using nn_case::import_error;
using nn_case::pseudo_random;

// ---------------------------------------------------------------------------
// Normalization and dropout.

/// A BatchNormalization model: x [2, 2, 2] and its four [2] initializers.
OnnxBuilder batch_norm_model(int opset, std::vector<std::string> outputs = {"y"}) {
  OnnxBuilder b(opset);
  b.input("x", DType::f32, {2, 2, 2});
  b.initializer("scale", f32({2}, {2, 1})).initializer("bias", f32({2}, {1, 0}));
  b.initializer("mean", f32({2}, {1, -1})).initializer("var", f32({2}, {4, 0.25}));
  b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, outputs, "bn");
  for (const std::string& o : outputs) b.output(o, DType::f32);
  return b;
}

// x per channel: c0 = {0, 1, 4, 5}, c1 = {2, 3, 6, 7}.
const std::vector<float> kBnInput = {0, 1, 2, 3, 4, 5, 6, 7};

TEST(OnnxNorm, BatchNormalizationUsesTheRunningStatisticsForInference) {
  for (int opset : {7, 9, 15}) {
    std::vector<Tensor> y = run_ok(batch_norm_model(opset), {f32({2, 2, 2}, kBnInput)});
    ASSERT_EQ(y.size(), 1u);
    // c0: (x - 1) / sqrt(4 + 1e-5) · 2 + 1; c1: (x + 1) / sqrt(0.25 + 1e-5).
    std::vector<float> want(8);
    for (int i = 0; i < 8; ++i) {
      const bool c0 = (i / 2) % 2 == 0;
      want[i] = static_cast<float>(c0 ? (kBnInput[i] - 1) / std::sqrt(4 + 1e-5) * 2 + 1
                                      : (kBnInput[i] + 1) / std::sqrt(0.25 + 1e-5));
    }
    expect_close(y[0], f32({2, 2, 2}, want));
  }
}

TEST(OnnxNorm, BatchNormalizationTrainingModeOutputsOnnxsRunningStatistics) {
  // Opset 15 says training_mode = 1; opset 9 names the five outputs of its training mode
  // (torch.onnx.export's training export): the model reads saved_var nowhere, and
  // saved_mean is the batch mean.
  OnnxBuilder b15 = batch_norm_model(15, {"y", "running_mean", "running_var"});
  set_attr(*b15.model().mutable_graph()->mutable_node(0), "training_mode", int64_t{1});
  OnnxBuilder b9 = batch_norm_model(9, {"y", "running_mean", "running_var", "saved_mean", "saved_var"});
  b9.model().mutable_graph()->mutable_output()->RemoveLast();
  for (OnnxBuilder* b : {&b15, &b9}) {
    set_attr(*b->model().mutable_graph()->mutable_node(0), "momentum", 0.75);
    std::vector<Tensor> y = run_ok(*b, {f32({2, 2, 2}, kBnInput)});
    ASSERT_EQ(y.size(), b == &b9 ? 4u : 3u);
    if (b == &b9) expect_close(y[3], f32({2}, {2.5, 4.5}));
    // Batch: mean {2.5, 4.5}, biased var {4.25, 4.25}; ONNX: 0.75·running + 0.25·batch.
    expect_close(y[1], f32({2}, {0.75 * 1 + 0.25 * 2.5, 0.75 * -1 + 0.25 * 4.5}));
    expect_close(y[2], f32({2}, {0.75 * 4 + 0.25 * 4.25, 0.75 * 0.25 + 0.25 * 4.25}));
    const double inv = 1 / std::sqrt(4.25 + 1e-5);
    expect_close(y[0], f32({2, 2, 2}, {static_cast<float>(-2.5 * inv * 2 + 1), static_cast<float>(-1.5 * inv * 2 + 1),
                                       static_cast<float>(-2.5 * inv), static_cast<float>(-1.5 * inv),
                                       static_cast<float>(1.5 * inv * 2 + 1), static_cast<float>(2.5 * inv * 2 + 1),
                                       static_cast<float>(1.5 * inv), static_cast<float>(2.5 * inv)}));
  }
}

TEST(OnnxNorm, BatchNormalizationTrainedInAFlowAssignsTheRunningStatistics) {
  OnnxBuilder b = batch_norm_model(9);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "momentum", 0.75);
  StatusOr<Model> m = FlowBuilder::from(OnnxModel(save(b, "bn.onnx"))).build({{"x", Type{DType::f32, {2, 2, 2}}}},
                                                               BuildOptions{.training = true});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // The running statistics are state, never trained; scale and bias are parameters.
  std::map<std::string, InputKind> kinds;
  for (const ParamInfo& p : m->parameters()) kinds[p.name] = p.kind;
  EXPECT_EQ(kinds["0.mean"], InputKind::state);
  EXPECT_EQ(kinds["0.var"], InputKind::state);
  EXPECT_EQ(kinds["0.scale"], InputKind::param);
  StatusOr<testing::ModelRun> r = testing::run_model(
      *m, {f32({2, 2, 2}, kBnInput)},
      {{"0.scale", f32({2}, {2, 1})}, {"0.bias", f32({2}, {1, 0})},
       {"0.mean", f32({2}, {1, -1})}, {"0.var", f32({2}, {4, 0.25})}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // The batch statistics normalize: channel 1 is {2, 3, 6, 7} - 4.5 over sqrt(4.25).
  const double inv = 1 / std::sqrt(4.25 + 1e-5);
  EXPECT_NEAR(r->outputs[0].get_double(2), -2.5 * inv, 1e-5);
  // PyTorch's update with momentum 1 - 0.75: the variance's from the unbiased one (17/3).
  expect_close(r->updated.at("0.mean"), f32({2}, {0.75 * 1 + 0.25 * 2.5, 0.75 * -1 + 0.25 * 4.5}));
  expect_close(r->updated.at("0.var"),
               f32({2}, {static_cast<float>(0.75 * 4 + 0.25 * 17 / 3.0), static_cast<float>(0.75 * 0.25 + 0.25 * 17 / 3.0)}));
}

TEST(OnnxNorm, BatchNormalizationRefusalsArePinned) {
  OnnxBuilder b = batch_norm_model(6);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "spatial", int64_t{0});
  EXPECT_EQ(import_error(b),
            "node 'bn' (BatchNormalization, opset 6): spatial = 0 (statistics per activation) is not supported");
  b = batch_norm_model(9, {"y", "m", "v", "sm", "sv"});
  EXPECT_EQ(import_error(b, /*training=*/true),
            "test.onnx: the model's output 'sv' is output 4 of node 'bn' (BatchNormalization, "
            "opset 9), which weft does not compute");
  b = batch_norm_model(15, {"y", "m"});
  // Outside training the running statistics' outputs are not computed: refused where read.
  EXPECT_EQ(import_error(b),
            "test.onnx: the model's output 'm' is output 1 of node 'bn' (BatchNormalization, "
            "opset 15), which weft does not compute");
  OnnxBuilder fed(15);  // the running statistics fed as data, not initializers
  fed.input("x", DType::f32, {2, 2});
  for (const char* name : {"s", "b", "m", "v"}) fed.input(name, DType::f32, {2});
  fed.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
  fed.output("y", DType::f32);
  EXPECT_EQ(import_error(fed, /*training=*/true),
            "node 'bn' (BatchNormalization, opset 15): training with a running mean or variance that is "
            "not an initializer (weft updates them as state) is not supported");
  EXPECT_EQ(import_error(fed), "imported");
  OnnxBuilder one(15);
  one.input("x", DType::f32, {1, 2});
  for (const char* name : {"s", "b", "m", "v"}) one.initializer(name, f32({2}, {1, 1}));
  one.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
  one.output("y", DType::f32);
  EXPECT_EQ(import_error(one, /*training=*/true),
            "node 'bn' (BatchNormalization, opset 15): training needs more than one value per channel "
            "to compute the batch variance, got f32[1,2]");
}

TEST(OnnxNorm, InstanceLayerAndMeanVarianceNormalization) {
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 0, 0, 6});
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    b.initializer("s", f32({2}, {2, 1})).initializer("b", f32({2}, {0, 1}));
    set_attr(b.node("InstanceNormalization", {"x", "s", "b"}, {"y"}), "epsilon", 0.0);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    // c0: mean 2, var 2/3; c1: mean 2, var 8.
    const double a = 1 / std::sqrt(2 / 3.0), c = 1 / std::sqrt(8.0);
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-2 * a), 0, static_cast<float>(2 * a),
                                       static_cast<float>(1 - 2 * c), static_cast<float>(1 - 2 * c),
                                       static_cast<float>(1 + 4 * c)}));
  }
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    b.initializer("s", f32({3}, {1, 2, 3}));
    auto& n = b.node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv_std"});
    set_attr(n, "epsilon", 0.0);
    b.output("y", DType::f32).output("mean", DType::f32).output("inv_std", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 3u);
    const double a = 1 / std::sqrt(2 / 3.0), c = 1 / std::sqrt(8.0);
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-a), 0, static_cast<float>(3 * a),
                                       static_cast<float>(-2 * c), static_cast<float>(-4 * c),
                                       static_cast<float>(12 * c)}));
    expect_close(y[1], f32({1, 2, 1}, {2, 2}));
    expect_close(y[2], f32({1, 2, 1}, {static_cast<float>(a), static_cast<float>(c)}));
  }
  {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 2, 3});
    set_attr(b.node("MeanVarianceNormalization", {"x"}, {"y"}), "axes", std::vector<int64_t>{2});
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    const double a = std::sqrt(2 / 3.0) + 1e-9, c = std::sqrt(8.0) + 1e-9;
    expect_close(y[0], f32({1, 2, 3}, {static_cast<float>(-1 / a), 0, static_cast<float>(1 / a),
                                       static_cast<float>(-2 / c), static_cast<float>(-2 / c),
                                       static_cast<float>(4 / c)}));
  }
}

TEST(OnnxNorm, LayerNormalizationStatisticsAreFloatForADoubleInput) {
  OnnxBuilder b;
  b.input("x", DType::f64, {2, 2});
  b.initializer("s", Tensor::from_vector<double>({2}, {1, 1}));
  b.node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv_std"});
  b.output("y", DType::f64).output("mean", DType::f32).output("inv_std", DType::f32);
  std::vector<Tensor> y = run_ok(b, {Tensor::from_vector<double>({2, 2}, {1, 3, 0, 0})});
  ASSERT_EQ(y.size(), 3u);
  expect_close(y[0], Tensor::from_vector<double>({2, 2}, {-1 / std::sqrt(1 + 1e-5), 1 / std::sqrt(1 + 1e-5), 0, 0}));
  expect_close(y[1], f32({2, 1}, {2, 0}));
  expect_close(y[2], f32({2, 1}, {static_cast<float>(1 / std::sqrt(1 + 1e-5)), static_cast<float>(1 / std::sqrt(1e-5))}));
}

TEST(OnnxNorm, LrnSumsSquaresOverTheChannelWindow) {
  const Tensor x = pseudo_random({1, 5, 2, 1}, 16);
  for (int64_t size : {2, 3}) {
    OnnxBuilder b;
    b.input("x", DType::f32, {1, 5, 2, 1});
    auto& n = b.node("LRN", {"x"}, {"y"});
    set_attr(n, "size", size);
    set_attr(n, "alpha", 0.5);
    set_attr(n, "beta", 0.75);
    set_attr(n, "bias", 2.0);
    b.output("y", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x});
    ASSERT_EQ(y.size(), 1u);
    Tensor want({DType::f32, {1, 5, 2, 1}});
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t h = 0; h < 2; ++h) {
        double sq = 0;
        for (int64_t j = c - (size - 1) / 2; j <= c + size / 2; ++j) {
          if (j >= 0 && j < 5) sq += std::pow(x.get_double(j * 2 + h), 2);
        }
        want.set_double(c * 2 + h, x.get_double(c * 2 + h) / std::pow(2 + 0.5 / size * sq, 0.75));
      }
    expect_close(y[0], want);
  }
}

TEST(OnnxNorm, LayerNormalizationRefusesAnotherStashType) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2, 3});
  b.initializer("s", f32({3}, {1, 1, 1}));
  set_attr(b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln"), "stash_type", int64_t{10});
  b.output("y", DType::f32);
  EXPECT_EQ(import_error(b), "node 'ln' (LayerNormalization, opset 17): stash_type 10 (weft has "
                             "1, float, and 11, double) is not supported");
}

TEST(OnnxNorm, LayerNormalizationInAnotherStashType) {
  // f64 input, f32 statistics (stash_type 1): normalized in f32, scaled in f64.
  OnnxBuilder b;
  b.input("x", DType::f64, {1, 3});
  b.initializer("s", Tensor::from_vector<double>({3}, {1, 2, 3}));
  b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
  b.output("y", DType::f64);
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {Tensor::from_vector<double>({1, 3}, {1, 2, 4})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  const std::vector<float> xs = {1, 2, 4};
  const float mean = (xs[0] + xs[1] + xs[2]) / 3;
  float var = 0;
  for (float v : xs) var += (v - mean) * (v - mean) / 3;
  for (int i = 0; i < 3; ++i) {
    const float unit = (xs[i] - mean) / std::sqrt(var + 1e-5f);
    EXPECT_NEAR((*y)[0].get_double(i), static_cast<double>(unit) * (i + 1), 1e-6) << i;
  }
}

TEST(OnnxDropout, IdentityForInferenceWithAnAllTrueMask) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 2});
  b.input("ratio", DType::f32, {});  // fed at run time: it does not matter here
  b.node("Dropout", {"x", "ratio"}, {"y", "mask"});
  b.output("y", DType::f32).output("mask", DType::boolean);
  std::vector<Tensor> y = run_ok(b, {f32({2, 2}, {1, 2, 3, 4}), Tensor::scalar(DType::f32, 0.3)});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0], f32({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(y[1], Tensor::from_vector<bool>({2, 2}, {true, true, true, true}));
}

TEST(OnnxDropout, TrainingDropsAndScalesTheRestAsTheModuleDoes) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {64, 64});
  b.initializer("ratio", Tensor::scalar(DType::f32, 0.25));
  b.node("Dropout", {"x", "ratio"}, {"y", "mask"});
  b.output("y", DType::f32).output("mask", DType::boolean);
  Tensor x({DType::f32, {64, 64}});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, 3);
  std::vector<Tensor> y = run_ok(b, {x}, /*training=*/true);
  ASSERT_EQ(y.size(), 2u);
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = y[1].get_double(i) != 0;
    kept += keep;
    EXPECT_NEAR(y[0].get_double(i), keep ? 4.0 : 0.0, 1e-6);  // 3 / (1 - 0.25)
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(x.numel()), 0.75, 0.03);
  set_attr(*b.model().mutable_graph()->mutable_node(0), "seed", 1.0);
  EXPECT_EQ(import_error(b, /*training=*/true),
            "node '#0' (Dropout, opset 13): a seed in training (weft draws from the graph's Philox "
            "stream) is not supported");
}

// ---------------------------------------------------------------------------
// Losses.

TEST(OnnxLoss, NegativeLogLikelihoodWithWeightAndIgnoreIndex) {
  // x [2, 3, 2] log-probabilities (any numbers do), target [2, 2].
  const Tensor x = iota_f32({2, 3, 2}, -1, -0.5);
  const Tensor target = Tensor::from_vector<int64_t>({2, 2}, {0, 2, 1, 1});
  const Tensor weight = f32({3}, {1, 2, 0.5});
  auto x_at = [&](int64_t n, int64_t c, int64_t d) { return x.get_double((n * 3 + c) * 2 + d); };
  for (const char* reduction : {"none", "sum", "mean"}) {
    OnnxBuilder b(13);
    b.input("x", DType::f32, {2, 3, 2});
    b.input("t", DType::i64, {2, 2});
    b.initializer("w", weight);
    auto& n = b.node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"});
    set_attr(n, "reduction", reduction);
    set_attr(n, "ignore_index", int64_t{2});
    b.output("loss", DType::f32);
    std::vector<Tensor> y = run_ok(b, {x, target});
    ASSERT_EQ(y.size(), 1u);
    // Kept: (0,0) class 0 weight 1, (1,0) and (1,1) class 1 weight 2; (0,1) ignored.
    const double l00 = -x_at(0, 0, 0), l10 = -2 * x_at(1, 1, 0), l11 = -2 * x_at(1, 1, 1);
    const std::string r = reduction;
    if (r == "none") {
      expect_close(y[0], f32({2, 2}, {static_cast<float>(l00), 0, static_cast<float>(l10), static_cast<float>(l11)}));
    } else {
      const double sum = l00 + l10 + l11;
      expect_close(y[0], Tensor::scalar(DType::f32, r == "sum" ? sum : sum / 5));
    }
  }
}

TEST(OnnxLoss, SoftmaxCrossEntropyIsTheNllOfLogSoftmax) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3});
  b.input("t", DType::i64, {2});
  b.node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "log_prob"});
  b.output("loss", DType::f32).output("log_prob", DType::f32);
  std::vector<Tensor> y = run_ok(b, {f32({2, 3}, {1, 2, 3, 0, 0, 0}), Tensor::from_vector<int64_t>({2}, {2, 0})});
  ASSERT_EQ(y.size(), 2u);
  const double lse = std::log(std::exp(1) + std::exp(2) + std::exp(3));
  expect_close(y[1], f32({2, 3}, {static_cast<float>(1 - lse), static_cast<float>(2 - lse),
                                  static_cast<float>(3 - lse), static_cast<float>(-std::log(3)),
                                  static_cast<float>(-std::log(3)), static_cast<float>(-std::log(3))}));
  expect_close(y[0], Tensor::scalar(DType::f32, ((lse - 3) + std::log(3)) / 2));
}

TEST(OnnxLoss, ErrorsArePinned) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3});
  b.input("t", DType::i64, {3});
  b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
  b.output("loss", DType::f32);
  EXPECT_EQ(import_error(b), "node 'nll' (NegativeLogLikelihoodLoss, opset 13): the target i64[3] must be "
                             "the input's shape without the class axis, [2]");
}

}  // namespace ops_norm_loss_test
}  // namespace
}  // namespace weft::onnx_io

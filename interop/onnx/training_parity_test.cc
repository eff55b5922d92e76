// Exported PyTorch models trained in weft, step for step (issue #33): a ResNet-18-shaped
// torchvision ResNet, the suite's transformer and PyTorch's recurrent layers (nn.LSTM,
// nn.GRU, nn.RNN), exported to ONNX from PyTorch's own initial weights, imported as the
// first module of a flow and trained with weft's Trainer (SGD, mean cross-entropy) on the
// batch PyTorch trained on; every step's loss must be PyTorch's within the suite's
// first-loss tolerance, on the cpu and reference backends; then Trainer::evaluate's logits
// must be PyTorch's model.eval() ones. The fixtures and the PyTorch losses are made by
// testdata/make_parity_fixtures.py (its docstring says what each model is); torchvision's
// full-width resnet18 runs too when its fixture is made on demand (FullResnet18OnCpu).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/npy.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "interop/onnx/importer.h"

namespace weft::onnx_io {
namespace {
namespace training_parity_test {  // this file's names, apart in its package's unity test

const std::string kFixtures = "interop/onnx/testdata/parity/";

/// bench/suite_report.cc's first_losses_agree: the tolerance the benchmark suite holds
/// weft's first loss to against PyTorch's, here applied to every step. The fixtures are
/// well conditioned (PyTorch's own float32 and float64 losses agree to 1e-5 relative;
/// make_parity_fixtures.py refuses others), so a miss is weft's, not rounding's.
bool losses_agree(double weft, double pytorch) {
  return std::fabs(weft - pytorch) <= 1e-4 * (1.0 + std::fabs(pytorch));
}

/// One model's fixture: the batch, the PyTorch run's lr and losses, and the trained
/// model's eval-mode logits.
struct Fixture {
  std::string dir;
  Tensor input;
  Tensor target;
  Tensor eval_logits;
  double lr = 0;
  int64_t parameters = 0;
  std::vector<double> losses;
};

Tensor read_array(const std::string& path) {
  StatusOr<Tensor> t = read_npy(path);
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(*t) : Tensor();
}

/// The fixture in folder `dir` (ending in '/').
Fixture read_fixture(const std::string& dir) {
  Fixture f;
  f.dir = dir;
  f.input = read_array(f.dir + "input.npy");
  f.target = read_array(f.dir + "target.npy");
  f.eval_logits = read_array(f.dir + "eval_logits.npy");
  std::ifstream in(f.dir + "losses.json");
  nlohmann::json j = nlohmann::json::parse(in);
  f.lr = j.at("lr").get<double>();
  f.parameters = j.at("parameters").get<int64_t>();
  f.losses = j.at("losses").get<std::vector<double>>();
  EXPECT_EQ(static_cast<int64_t>(f.losses.size()), j.at("steps").get<int64_t>());
  return f;
}

/// What a case checks after the training steps.
enum class After { nothing, evaluate };

/// Trains `net` (the model as the flow's first module) on the fixture's batch with the
/// fixture's SGD for as many steps as PyTorch took, comparing every step's loss; then,
/// with After::evaluate, the trained network's eval-mode logits with PyTorch's.
void expect_pytorch_training(const Fixture& f, const FlowPtr& net, const std::string& backend,
                             After after) {
  StatusOr<Trainer> t = Trainer::compile(net, {{"input", f.input.type()}}, LossSpec::cross_entropy(),
                                         OptimizerSpec::sgd(f.lr), {.backend = backend});
  ASSERT_TRUE(t.ok()) << t.error().to_string();

  // Every float initializer is a trained parameter, PyTorch's count of them.
  int64_t trained = 0;
  for (const ParamInfo& p : t->model().parameters()) {
    if (p.kind == InputKind::param) trained += t->model().graph().type(p.value).shape.numel();
  }
  EXPECT_EQ(trained, f.parameters);

  double worst = 0;
  for (size_t k = 0; k < f.losses.size(); ++k) {
    StatusOr<double> loss = t->step({f.input, f.target});
    ASSERT_TRUE(loss.ok()) << "step " << k + 1 << ": " << loss.error().to_string();
    EXPECT_TRUE(losses_agree(*loss, f.losses[k]))
        << "step " << k + 1 << ": weft " << *loss << ", PyTorch " << f.losses[k];
    std::printf("%s on %s, step %zu: weft %.9g, PyTorch %.9g\n", f.dir.c_str(), backend.c_str(),
                k + 1, *loss, f.losses[k]);
    worst = std::max(worst, std::fabs(*loss - f.losses[k]) / std::fabs(f.losses[k]));
  }
  std::printf("largest relative difference from PyTorch %.3g\n", worst);
  if (after == After::nothing) return;

  StatusOr<std::vector<Tensor>> out = t->evaluate({f.input});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  ASSERT_EQ((*out)[0].type(), f.eval_logits.type());
  const std::vector<double> got = (*out)[0].to_doubles(), want = f.eval_logits.to_doubles();
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (losses_agree(got[i], want[i])) continue;
    if (++mismatches <= 5) {
      ADD_FAILURE() << "eval logit " << i << ": weft " << got[i] << ", PyTorch " << want[i];
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << got.size() << " eval logits";
}

/// The ResNet (and the recurrent models): logits [batch, classes] straight from the model.
void train_resnet(const std::string& backend, After after = After::nothing,
                  const std::string& dir = kFixtures + "resnet/") {
  Fixture f = read_fixture(dir);
  StatusOr<FlowPtr> net = FlowBuilder::from(OnnxModel(f.dir + "model.onnx")).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  expect_pytorch_training(f, *net, backend, after);
}

/// The transformer: logits [batch, seq, vocab], flattened to [batch * seq, vocab] against
/// the [batch * seq] labels, as the suite's loss does.
void train_transformer(const std::string& backend, After after = After::nothing) {
  Fixture f = read_fixture(kFixtures + "transformer/");
  StatusOr<FlowPtr> net =
      FlowBuilder::from(OnnxModel(f.dir + "model.onnx")).through(Flatten(0, 1)).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  expect_pytorch_training(f, *net, backend, after);
}

TEST(TrainingParity, ResnetOnCpu) { train_resnet("cpu"); }
TEST(TrainingParity, ResnetOnReference) { train_resnet("reference"); }
// torchvision's resnet18 itself, full width: its 44 MB fixture is made on demand
// (make_parity_fixtures.py --resnet18 DIR) and named by $WEFT_PARITY_RESNET18.
TEST(TrainingParity, FullResnet18OnCpu) {
  const char* dir = std::getenv("WEFT_PARITY_RESNET18");
  if (dir == nullptr) GTEST_SKIP() << "WEFT_PARITY_RESNET18 is not set";
  train_resnet("cpu", After::nothing, std::string(dir) + "/");
}
// nn.LSTM (2 layers, bidirectional), nn.GRU (2 layers), nn.RNN (relu, bidirectional), each
// with a linear head: ONNX's LSTM, GRU and RNN nodes as weft loops (ops/rnn.cc), trained,
// then evaluated.
TEST(TrainingParity, LstmOnCpu) { train_resnet("cpu", After::evaluate, kFixtures + "lstm/"); }
TEST(TrainingParity, LstmOnReference) { train_resnet("reference", After::evaluate, kFixtures + "lstm/"); }
TEST(TrainingParity, GruOnCpu) { train_resnet("cpu", After::evaluate, kFixtures + "gru/"); }
TEST(TrainingParity, RnnOnCpu) { train_resnet("cpu", After::evaluate, kFixtures + "rnn/"); }
// A strided convolution, F.interpolate(scale_factor=2, mode="bilinear") (ONNX's Resize,
// linear: two gathers and a weighted sum per axis, ops/indexing.cc) and a convolution:
// the first convolution trains through the resize's gradient.
TEST(TrainingParity, UpsamplingOnCpu) {
  train_resnet("cpu", After::evaluate, kFixtures + "upsampling/");
}
TEST(TrainingParity, UpsamplingOnReference) {
  train_resnet("reference", After::evaluate, kFixtures + "upsampling/");
}
TEST(TrainingParity, TransformerOnCpu) { train_transformer("cpu"); }
TEST(TrainingParity, TransformerOnReference) { train_transformer("reference"); }

// After training, Trainer::evaluate runs the network in eval mode: batch norm with the
// running statistics the steps updated, as PyTorch's model.eval(). The model was exported
// for training (training_mode = 1 on every BatchNormalization): inside a flow, the flow's
// mode decides, so evaluation uses the running statistics all the same.
TEST(TrainingParity, ResnetEvaluatesAsPyTorchAfterTraining) {
  train_resnet("reference", After::evaluate);
}
TEST(TrainingParity, TransformerEvaluatesAsPyTorchAfterTraining) {
  train_transformer("reference", After::evaluate);
}

}  // namespace training_parity_test
}  // namespace
}  // namespace weft::onnx_io

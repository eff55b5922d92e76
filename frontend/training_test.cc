// The training API: steps match PyTorch, runs are bitwise reproducible, checkpoints
// resume the exact loss curve, frozen parameters stay put, eval mode shares weights.
#include "frontend/training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/testing/run_model.h"
#include "runtime/cuda/executor.h"
#include "formats/npy.h"

namespace weft {
namespace {
namespace training_test {  // this file's names, apart in its package's unity test

const std::string kData = "frontend/testdata/training/";

Tensor npy(const std::string& case_name, const std::string& name) {
  auto t = read_npy(kData + case_name + "/" + name + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return std::move(t).value();
}

std::string tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  std::string why;
  EXPECT_TRUE(all_close(a, b, tol, &why)) << what << ": " << why;
}

/// Runs three steps of a fixture case from PyTorch's initial weights and compares the
/// losses and final weights.
void check_against_pytorch(const std::string& case_name, const FlowPtr& net,
                           std::vector<InputSpec> inputs, LossSpec loss, OptimizerSpec opt) {
  auto trainer = Trainer::compile(net, inputs, loss, opt);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  const char* names[] = {"0.weight", "0.bias", "2.weight", "2.bias"};
  for (const char* name : names) {
    ASSERT_TRUE(trainer->set_value(name, npy(case_name, std::string("init.") + name)).ok()) << name;
  }
  Tensor losses = npy(case_name, "losses");
  for (int i = 0; i < 3; ++i) {
    auto l = trainer->step({npy(case_name, "x" + std::to_string(i)), npy(case_name, "y" + std::to_string(i))});
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    double want = losses.get_double(i);
    EXPECT_NEAR(*l, want, 1e-5 + 1e-5 * std::abs(want)) << case_name << " step " << i;
  }
  for (const char* name : names) {
    expect_close(trainer->values().at(name), npy(case_name, std::string("final.") + name), 1e-5,
                 case_name + " " + name);
  }
}

TEST(Training, MatchesPyTorchAdamCrossEntropy) {
  auto net = FlowBuilder::from(Linear(4, 8)).through(Tanh()).through(Linear(8, 3)).build();
  ASSERT_TRUE(net.ok());
  check_against_pytorch("mlp_adam", *net, {{"x", f32({5, 4})}}, LossSpec::cross_entropy(),
                        OptimizerSpec::adam(0.01));
}

TEST(Training, MatchesPyTorchSgdMomentumMse) {
  auto net = FlowBuilder::from(Linear(3, 6)).through(ReLU()).through(Linear(6, 2)).build();
  ASSERT_TRUE(net.ok());
  check_against_pytorch("reg_sgd", *net, {{"x", f32({4, 3})}}, LossSpec::mse(),
                        OptimizerSpec::sgd(0.1, /*momentum=*/0.9, /*dampening=*/0,
                                           /*weight_decay=*/1e-3));
}

/// A small CNN with batch norm and dropout: every kind of state the step carries.
StatusOr<FlowPtr> cnn() {
  return FlowBuilder::from(Conv2d(1, 4, {.kernel = 3, .padding = 1}))
      .through(BatchNorm2d(4))
      .through(ReLU())
      .through(MaxPool2d(2))
      .through(Flatten())
      .through(Dropout(0.2))
      .through(Linear(4 * 4 * 4, 3))
      .label("net")
      .build();
}

std::vector<Tensor> cnn_batch(int i) {
  Tensor x(Type{DType::f32, {6, 1, 8, 8}});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = std::sin(0.37f * k + i);
  Tensor y = Tensor::from_vector<int64_t>({6}, {0, 1, 2, (i + 1) % 3, 1, 0});
  return {x, y};
}

std::vector<double> train_cnn(Trainer& t, int from, int to) {
  std::vector<double> losses;
  for (int i = from; i < to; ++i) {
    auto l = t.step(cnn_batch(i));
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    losses.push_back(l.ok() ? *l : NAN);
  }
  return losses;
}

TEST(Training, SameSeedGivesBitwiseIdenticalLosses) {
  auto net = cnn();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto a = Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                            OptimizerSpec::adamw(1e-2), {.seed = 7});
  auto b = Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                            OptimizerSpec::adamw(1e-2), {.seed = 7});
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<double> la = train_cnn(*a, 0, 5), lb = train_cnn(*b, 0, 5);
  EXPECT_EQ(la, lb);  // bitwise
  EXPECT_LT(la.back(), la.front());
}

// RAdam switches branches at step 6 and NAdam carries a scalar f32 slot (mu_product):
// both resume as Adam does.
class ResumingFromACheckpoint : public ::testing::TestWithParam<OptimizerSpec> {};

TEST_P(ResumingFromACheckpoint, ReproducesTheLossCurve) {
  auto net = cnn();
  ASSERT_TRUE(net.ok());
  auto compile = [&] {
    return Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                            GetParam(), {.seed = 3});
  };
  auto straight = compile();
  ASSERT_TRUE(straight.ok());
  std::vector<double> all = train_cnn(*straight, 0, 8);

  auto first = compile();
  ASSERT_TRUE(first.ok());
  train_cnn(*first, 0, 3);
  std::string path = tmp("mid.safetensors");
  ASSERT_TRUE(first->save(path).ok());

  auto resumed = compile();
  ASSERT_TRUE(resumed.ok());
  auto report = resumed->load(path);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(resumed->steps(), 3);
  EXPECT_TRUE(report->missing.empty());
  std::vector<double> rest = train_cnn(*resumed, 3, 8);
  EXPECT_EQ(rest, std::vector<double>(all.begin() + 3, all.end()));  // bitwise
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ResumingFromACheckpoint,
                         ::testing::Values(OptimizerSpec::adam(1e-2), OptimizerSpec::radam(1e-2),
                                           OptimizerSpec::nadam(1e-2)),
                         [](const auto& info) {
                           return std::string(optimizer_kind_name(info.param.kind));
                         });

TEST(Training, FrozenParametersDoNotMove) {
  auto encoder = FlowBuilder::from(Linear(4, 8)).through(Tanh()).label("encoder").build();
  ASSERT_TRUE(encoder.ok());
  auto net = FlowBuilder::from(*encoder).through(Linear(8, 3)).build();
  ASSERT_TRUE(net.ok());
  auto t = Trainer::compile(*net, {{"x", f32({5, 4})}}, LossSpec::cross_entropy(),
                            OptimizerSpec::sgd(0.5));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->freeze("encoder").ok());
  Tensor w_encoder = t->values().at("encoder.0.weight");
  Tensor w_head = t->values().at("1.weight");
  ASSERT_TRUE(t->step({npy("mlp_adam", "x0"), npy("mlp_adam", "y0")}).ok());
  EXPECT_TRUE(t->values().at("encoder.0.weight") == w_encoder);
  EXPECT_FALSE(t->values().at("1.weight") == w_head);
  EXPECT_EQ(t->freeze("decoder").to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: encoder");
}

TEST(Training, EvaluateUsesRunningStatisticsAndAnyBatchSize) {
  auto net = cnn();
  ASSERT_TRUE(net.ok());
  auto t = Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                            OptimizerSpec::sgd(0.1));
  ASSERT_TRUE(t.ok());
  train_cnn(*t, 0, 2);
  Tensor x(Type{DType::f32, {2, 1, 8, 8}});
  auto a = t->evaluate({x});
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(a->at(0).type().to_string(), "f32[2,3]");
  auto b = t->evaluate({x});  // eval is deterministic: no dropout, fixed statistics
  EXPECT_TRUE(a->at(0) == b->at(0));
  // Eval mode normalizes with the running statistics: moving them moves the output
  // (batch statistics would not notice).
  Tensor shifted = t->values().at("net.1.running_mean");
  for (int64_t k = 0; k < shifted.numel(); ++k) shifted.data<float>()[k] += 3.0f;
  Tensor original = t->values().at("net.1.running_mean");
  ASSERT_TRUE(t->set_value("net.1.running_mean", shifted).ok());
  auto moved = t->evaluate({x});
  ASSERT_TRUE(moved.ok());
  EXPECT_FALSE(moved->at(0) == a->at(0));
  ASSERT_TRUE(t->set_value("net.1.running_mean", original).ok());
  // Evaluating does not change the running statistics.
  Tensor mean = t->values().at("net.1.running_mean");
  ASSERT_TRUE(t->evaluate({x}).ok());
  EXPECT_TRUE(t->values().at("net.1.running_mean") == mean);
}

// The cuda backend: the same step on the GPU. Without one, compile says why; with one
// (tests/cuda's machines), its losses and parameters follow the cpu backend's.
TEST(Training, CudaBackendFollowsTheCpuBackend) {
  auto net = cnn();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto gpu = Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                              OptimizerSpec::adamw(1e-2), {.seed = 7, .backend = "cuda"});
  if (!cuda::available()) {
    ASSERT_FALSE(gpu.ok());
    EXPECT_EQ(gpu.error().to_string().rfind("error: no CUDA device: ", 0), 0u) << gpu.error().to_string();
    return;
  }
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  auto cpu = Trainer::compile(*net, {{"x", f32({6, 1, 8, 8})}}, LossSpec::cross_entropy(),
                              OptimizerSpec::adamw(1e-2), {.seed = 7});
  ASSERT_TRUE(cpu.ok());
  std::vector<double> on_gpu = train_cnn(*gpu, 0, 5), on_cpu = train_cnn(*cpu, 0, 5);
  for (size_t i = 0; i < on_cpu.size(); ++i) EXPECT_NEAR(on_gpu[i], on_cpu[i], 1e-4 * (1 + std::abs(on_cpu[i])));
  for (const auto& [name, value] : cpu->values()) {
    std::string why;
    EXPECT_TRUE(all_close(gpu->values().at(name), value, 1e-4, &why)) << name << ": " << why;
  }
  auto eval_gpu = gpu->evaluate({cnn_batch(9)[0]}), eval_cpu = cpu->evaluate({cnn_batch(9)[0]});
  ASSERT_TRUE(eval_gpu.ok() && eval_cpu.ok());
  EXPECT_TRUE(all_close((*eval_gpu)[0], (*eval_cpu)[0], 1e-4));
}

/// `n` values spread over [low, high) by a fixed rule (no RNG needed).
std::vector<double> spread(int64_t n, double low, double high) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(low + (high - low) * std::fmod(0.37 * i + 0.11, 1.0));
  return v;
}

// Each LossSpec with a float target: the Trainer's step loss (before the update) equals
// the loss module's value on the same weights and data.
TEST(Training, FloatTargetLossSpecsMatchTheirModules) {
  const std::vector<std::pair<LossSpec, ModulePtr>> cases = {
      {LossSpec::huber(0.5), HuberLoss(Reduction::Mean, 0.5)},
      {LossSpec::poisson_nll(), PoissonNLLLoss()},
      {LossSpec::sigmoid_focal(0.5, 1.0), SigmoidFocalLoss({.alpha = 0.5, .gamma = 1.0})},
      {LossSpec::hinge_embedding(0.5), HingeEmbeddingLoss(Reduction::Mean, 0.5)}};
  Tensor x = Tensor::from_doubles(DType::f32, {5, 4}, spread(20, -1, 1));
  Tensor w = Tensor::from_doubles(DType::f32, {3, 4}, spread(12, -0.5, 0.5));
  Tensor b = Tensor::from_doubles(DType::f32, {3}, spread(3, -0.1, 0.1));
  std::vector<double> signs;
  for (double v : spread(15, -1, 1)) signs.push_back(v < 0 ? -1.0 : 1.0);
  // ±1 targets: hinge_embedding's labels, and valid (if odd) for the others.
  Tensor target = Tensor::from_doubles(DType::f32, {5, 3}, signs);
  for (const auto& [spec, module] : cases) {
    auto net = FlowBuilder::from(Linear(4, 3)).build();
    ASSERT_TRUE(net.ok());
    auto t = Trainer::compile(*net, {{"x", f32({5, 4})}}, spec, OptimizerSpec::sgd(0.1));
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    ASSERT_TRUE(t->set_value("0.weight", w).ok());
    ASSERT_TRUE(t->set_value("0.bias", b).ok());
    StatusOr<double> step = t->step({x, target});
    ASSERT_TRUE(step.ok()) << step.error().to_string();
    auto model = FlowBuilder::from(Linear(4, 3)).input({"target"}).through(module).uses({"target"})
                     .build({{"x", f32({5, 4})}, {"target", f32({5, 3})}});
    ASSERT_TRUE(model.ok()) << model.error().to_string();
    auto run = testing::run_model(*model, {x, target}, {{"0.weight", w}, {"0.bias", b}});
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    const double want = run->outputs[0].get_double(0);
    EXPECT_NEAR(*step, want, 1e-5 * (1 + std::abs(want))) << module->describe();
  }
}

TEST(Training, Errors) {
  auto net = FlowBuilder::from(Linear(4, 3)).build();
  ASSERT_TRUE(net.ok());
  EXPECT_EQ(Trainer::compile(*net, {{"x", f32({5, 4})}}, LossSpec::mse(), OptimizerSpec::adam(),
                             {.seed = 0, .backend = "tpu"})
                .error()
                .to_string(),
            "error: unknown backend 'tpu'; backends: cpu, cuda, reference");
  const int line = __LINE__ + 1;  // A null network crashed (SIGSEGV).
  EXPECT_EQ(Trainer::compile(nullptr, {{"x", f32({5, 4})}}, LossSpec::mse(), OptimizerSpec::adam()).error().to_string(),
            "frontend/training_test.cc:" + std::to_string(line) +
                ":3: error: Trainer::compile: the network is null; pass the flow that FlowBuilder's build() returned");
  EXPECT_EQ(Trainer::compile(*net, {{"x", f32({5, 4})}}, LossSpec::mse(), OptimizerSpec::adam(),
                             {.seed = 0, .backend = "cuda", .check_numerics = true})
                .error()
                .to_string(),
            "error: check_numerics runs on the cpu and reference backends, not yet on cuda");
  auto t = Trainer::compile(*net, {{"x", f32({5, 4})}}, LossSpec::mse(), OptimizerSpec::adam());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->step({Tensor(Type{DType::f32, {5, 4}})}).error().to_string(),
            "error: step(...) takes 2 tensors (the inputs, then the target), got 1");
  auto wrong = t->step({Tensor(Type{DType::f32, {5, 4}}), Tensor(Type{DType::i64, {5}})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("weft.target"), std::string::npos) << wrong.error().message;
  EXPECT_EQ(t->evaluate({}).error().to_string(), "error: evaluate(...) takes 1 tensors, got 0");
  EXPECT_EQ(t->set_value("0.wieght", Tensor(Type{DType::f32, {3, 4}})).to_string(),
            "error: no parameter, state or optimizer slot named '0.wieght'");
  EXPECT_EQ(t->set_value("0.weight", Tensor(Type{DType::f32, {4, 3}})).to_string(),
            "error: '0.weight' is f32[3,4], not f32[4,3]");
  EXPECT_EQ(t->thaw("decoder").to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: (none)");
}

// A forward reference carries the tag's value from one step to the next: step 2 reads
// what step 1 computed (checked against the model run by hand), evaluation (from zeros,
// at another batch size too) leaves it, reset_state() zeroes it; the same on the
// interpreter and the cpu backend.
TEST(Trainer, ForwardReferencesCarryStateAcrossSteps) {
  auto net = FlowBuilder::from(Linear(3, 2)).through(GRUCell(2, 2)).uses({"h"}).tag("h").through(Linear(2, 1)).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  const Tensor x1 = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0.5f, 0});
  const Tensor x2 = Tensor::from_vector<float>({2, 3}, {0, -2, 1, 3, 1, -1});
  const Tensor y = Tensor::from_vector<float>({2, 1}, {0.5f, -0.5f});
  std::map<std::string, Tensor> reference_state;
  for (const char* backend : {"reference", "cpu"}) {
    auto t = Trainer::compile(*net, {{"x", f32({2, 3})}}, LossSpec::mse(), OptimizerSpec::sgd(0.0),
                              {.backend = backend});
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->values().at("h.state").to_doubles(), (std::vector<double>{0, 0, 0, 0}));
    ASSERT_TRUE(t->step({x1, y}).ok());
    const Tensor after1 = t->values().at("h.state");
    ASSERT_TRUE(t->step({x2, y}).ok());
    const Tensor after2 = t->values().at("h.state");

    // By hand: the GRU cell on step 1's input from zeros, then on step 2's from that.
    auto compiled = Trainer::compile(*net, {{"x", f32({2, 3})}}, LossSpec::mse(), OptimizerSpec::sgd(0.0),
                                     {.backend = "reference"});
    ASSERT_TRUE(compiled.ok());
    Trainer& by_hand = *compiled;
    for (const auto& [name, value] : t->values()) ASSERT_TRUE(by_hand.set_value(name, value).ok()) << name;
    ASSERT_TRUE(by_hand.set_value("h.state", Tensor(f32({2, 2}))).ok());
    ASSERT_TRUE(by_hand.step({x1, y}).ok());
    EXPECT_TRUE(all_close(by_hand.values().at("h.state"), after1, 1e-6)) << backend;
    ASSERT_TRUE(by_hand.step({x2, y}).ok());
    EXPECT_TRUE(all_close(by_hand.values().at("h.state"), after2, 1e-6)) << backend;
    // Step 2 from zeros instead of step 1's state gives another state: it was read.
    ASSERT_TRUE(by_hand.reset_state().ok());
    ASSERT_TRUE(by_hand.step({x2, y}).ok());
    EXPECT_FALSE(all_close(by_hand.values().at("h.state"), after2, 1e-4)) << backend;

    auto eval = t->evaluate({x1});
    ASSERT_TRUE(eval.ok()) << eval.error().to_string();
    auto wider = t->evaluate({Tensor(f32({5, 3}))});
    ASSERT_TRUE(wider.ok()) << wider.error().to_string();
    EXPECT_TRUE(all_close(t->values().at("h.state"), after2, 0)) << "evaluation changed the state";
    ASSERT_TRUE(t->reset_state().ok());
    EXPECT_EQ(t->values().at("h.state").to_doubles(), (std::vector<double>{0, 0, 0, 0}));
    if (reference_state.empty()) reference_state["after2"] = after2;
    EXPECT_TRUE(all_close(after2, reference_state["after2"], 1e-5)) << backend << " against the interpreter";
  }
}

// Resuming with another batch size: a Trainer built for batch 8 loads a batch-4 Trainer's
// checkpoint with the same parameters, batch-norm state, Adam slots and step as a batch-4
// Trainer does, bitwise, and steps on from there.
TEST(Trainer, ResumesAtAnotherBatchSize) {
  auto net = FlowBuilder::from(Linear(3, 4)).through(BatchNorm1d(4)).through(Linear(4, 1)).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto trainer = [&](int64_t batch) {
    auto t = Trainer::compile(*net, {{"x", f32({batch, 3})}}, LossSpec::mse(), OptimizerSpec::adam(0.01),
                              {.seed = 3, .backend = "cpu"});
    EXPECT_TRUE(t.ok()) << t.error().to_string();
    return std::move(*t);
  };
  auto batch4 = trainer(4);
  Tensor x(f32({4, 3})), y(f32({4, 1}));
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, 0.1 * static_cast<double>(i % 7) - 0.3);
  for (int64_t i = 0; i < y.numel(); ++i) y.set_double(i, static_cast<double>(i));
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(batch4.step({x, y}).ok());
  const std::string path = tmp("batch4.safetensors");
  ASSERT_TRUE(batch4.save(path).ok());
  auto same = trainer(4), other = trainer(8);
  ASSERT_TRUE(same.load(path).ok());
  auto loaded = other.load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_EQ(other.steps(), 2);
  EXPECT_EQ(other.steps(), same.steps());
  ASSERT_EQ(other.values().size(), same.values().size());
  for (const auto& [name, value] : same.values()) EXPECT_TRUE(other.values().at(name) == value) << name;
  auto step = other.step({Tensor(f32({8, 3})), Tensor(f32({8, 1}))});
  ASSERT_TRUE(step.ok()) << step.error().to_string();
  EXPECT_EQ(other.steps(), 3);
}

// The step count stops at 2^53 (kMaxSteps): a checkpoint there loads, and the next step
// is an error rather than an overflow (found by tests/fuzz:driver_resume_fuzzer).
TEST(Trainer, TheStepCountStopsAtTwoToThe53) {
  auto net = FlowBuilder::from(Linear(2, 1)).build();
  ASSERT_TRUE(net.ok());
  auto t = Trainer::compile(*net, {{"x", f32({2, 2})}}, LossSpec::mse(), OptimizerSpec::sgd(0.1),
                            {.backend = "cpu"});
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const std::string path = tmp("max_steps.safetensors");
  ASSERT_TRUE(save_checkpoint(path, t->model(), t->values(), kMaxSteps).ok());
  ASSERT_TRUE(t->load(path).ok());
  EXPECT_EQ(t->steps(), kMaxSteps);
  auto r = t->step({Tensor(f32({2, 2})), Tensor(f32({2, 1}))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "error: the model has taken 9007199254740992 steps, 2^53, the most weft counts; load a checkpoint "
            "with a smaller weft.step");
}

// Profiling goes through the backend registry: the cpu backend times each kernel, the
// interpreter says it cannot.
TEST(Trainer, ProfilingWhereTheBackendHasAProfiler) {
  auto net = FlowBuilder::from(Linear(2, 3)).through(ReLU()).through(Linear(3, 1)).build();
  ASSERT_TRUE(net.ok());
  for (const char* backend : {"cpu", "reference"}) {
    auto t = Trainer::compile(*net, {{"x", f32({2, 2})}}, LossSpec::mse(), OptimizerSpec::sgd(0.1),
                              {.backend = backend});
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    Status on = t->set_profiling(true);
    ASSERT_TRUE(t->step({Tensor(f32({2, 2})), Tensor(f32({2, 1}))}).ok());
    StatusOr<std::string> report = t->profile_report();
    if (std::string(backend) == "cpu") {
      ASSERT_TRUE(on.ok() && report.ok()) << backend;
      EXPECT_NE(report->find("1 steps, "), std::string::npos) << *report;
      EXPECT_NE(report->find("onednn sgemm"), std::string::npos) << *report;
    } else {
      ASSERT_FALSE(on.ok());
      EXPECT_EQ(on.error().to_string(), "error: profiling runs on the cpu backend, not on reference");
      EXPECT_FALSE(report.ok());
    }
  }
}

}  // namespace training_test
}  // namespace
}  // namespace weft

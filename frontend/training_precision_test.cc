// Mixed-precision training (TrainOptions::precision, passes/autocast.h): bf16 and f16
// steps of an MLP and a small CNN follow the f32 loss curve on the reference and cpu
// backends, their gradients match the f32 step's within the low precision's tolerance,
// parameters stay f32 (each weight cast once), and checkpoints load across precisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {
namespace training_precision_test {  // this file's names, apart in its package's unity test

std::string tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

StatusOr<FlowPtr> mlp() {
  return FlowBuilder::from(Linear(6, 16)).through(GELU()).through(Linear(16, 16)).through(Tanh())
      .through(Linear(16, 3)).build();
}

/// Two convolutions (the second takes batch norm's f32 output), and every kind of state a
/// step carries: batch norm's statistics, dropout's generator.
StatusOr<FlowPtr> cnn() {
  return FlowBuilder::from(Conv2d(1, 4, {.kernel = 3, .padding = 1}))
      .through(BatchNorm2d(4))
      .through(ReLU())
      .through(Conv2d(4, 4, {.kernel = 3, .padding = 1}))
      .through(MaxPool2d(2))
      .through(Flatten())
      .through(Dropout(0.2))
      .through(Linear(4 * 4 * 4, 3))
      .build();
}

struct Model {
  const char* name;
  StatusOr<FlowPtr> (*net)();
  Shape input;
};
const Model kMlp{"mlp", mlp, {8, 6}};
const Model kCnn{"cnn", cnn, {6, 1, 8, 8}};

std::vector<Tensor> batch(const Model& m, int i) {
  Tensor x(Type{DType::f32, m.input});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = std::sin(0.37f * k + i);
  std::vector<int64_t> labels;
  for (int64_t k = 0; k < m.input[0]; ++k) labels.push_back((k + i / 4) % 3);
  return {x, Tensor::from_vector<int64_t>({m.input[0]}, labels)};
}

StatusOr<Trainer> compile(const Model& m, DType precision, const std::string& backend,
                          OptimizerSpec optimizer = OptimizerSpec::adam(1e-2)) {
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, m.net());
  return Trainer::compile(net, {{"x", Type{DType::f32, m.input}}}, LossSpec::cross_entropy(),
                          std::move(optimizer),
                          {.seed = 5, .backend = backend, .precision = precision});
}

/// `steps` steps on batches 0, 1, ... (or on batch 0 every time when `same_batch`).
std::vector<double> train(Trainer& t, const Model& m, int steps, bool same_batch = false) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    StatusOr<double> l = t.step(batch(m, same_batch ? 0 : i));
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    losses.push_back(l.ok() ? *l : NAN);
  }
  return losses;
}

/// The largest |a - b| over every parameter, and the largest |b|.
// Over the values both hold (an f16 step's loss-scale state is its own).
std::pair<double, double> max_difference(const Trainer& a, const Trainer& b) {
  double diff = 0, scale = 0;
  for (const auto& [name, t] : b.values()) {
    if (!a.values().count(name)) continue;
    const Tensor& u = a.values().at(name);
    for (int64_t k = 0; k < t.numel(); ++k) {
      diff = std::max(diff, std::abs(u.get_double(k) - t.get_double(k)));
      scale = std::max(scale, std::abs(t.get_double(k)));
    }
  }
  return {diff, scale};
}

using CurveCase = std::tuple<const Model*, std::string, DType>;
class MixedPrecisionCurve : public ::testing::TestWithParam<CurveCase> {};

// 20 Adam steps on one batch: the low-precision loss stays near the f32 run's (the CNN's
// f16 run drifts most, about 3%: Adam's steps are lr-sized even for the gradients that are
// rounding noise, such as the first conv's bias before batch norm), and it learns.
TEST_P(MixedPrecisionCurve, FollowsTheF32LossCurve) {
  const auto& [model, backend, precision] = GetParam();
  StatusOr<Trainer> f32 = compile(*model, DType::f32, backend);
  StatusOr<Trainer> low = compile(*model, precision, backend);
  ASSERT_TRUE(f32.ok()) << f32.error().to_string();
  ASSERT_TRUE(low.ok()) << low.error().to_string();
  const std::vector<double> want = train(*f32, *model, 20, /*same_batch=*/true);
  const std::vector<double> got = train(*low, *model, 20, /*same_batch=*/true);
  const double tol = 0.05;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "step " << i;
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
  }
  std::printf("%s %s %s: loss %.4f -> %.4f (f32 %.4f -> %.4f), largest relative gap %.2e\n",
              model->name, backend.c_str(), std::string(dtype_name(precision)).c_str(), got.front(),
              got.back(), want.front(), want.back(), worst);
  EXPECT_LT(got.back(), 0.8 * got.front());
  for (const auto& [name, t] : low->values()) {
    if (is_floating(t.dtype())) {
      EXPECT_EQ(t.dtype(), DType::f32) << name << " (master copy)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, MixedPrecisionCurve,
    ::testing::Combine(::testing::Values(&kMlp, &kCnn), ::testing::Values("reference", "cpu"),
                       ::testing::Values(DType::bf16, DType::f16)),
    [](const ::testing::TestParamInfo<CurveCase>& info) {
      return std::string(std::get<0>(info.param)->name) + "_" + std::get<1>(info.param) + "_" +
             std::string(dtype_name(std::get<2>(info.param)));
    });

// The step graph: contractions in low, each parameter cast to low at most once, and every
// parameter's update (its gradient's use) in f32.
TEST(MixedPrecision, ParametersAndTheirUpdatesStayF32) {
  for (const Model* m : {&kMlp, &kCnn}) {
    StatusOr<Trainer> t = compile(*m, DType::bf16, "reference");
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    const Graph& g = t->step_graph();
    int low_contractions = 0;
    for (const Node& n : g.nodes()) {
      if (autocast_class(n.op) == AutocastClass::Low && g.type(n.result()).dtype == DType::bf16) {
        ++low_contractions;
      }
      if (n.op == Op::Assign) {
        EXPECT_EQ(g.type(n.operands[1]).dtype, g.type(n.operands[0]).dtype)
            << m->name << ": assign to %" << g.value(n.operands[0]).name;
      }
    }
    EXPECT_GE(low_contractions, 3) << m->name;  // forward and backward products
    for (const Input& in : g.inputs()) {
      if (in.kind != InputKind::param) continue;
      EXPECT_EQ(g.type(in.value).dtype, DType::f32) << g.value(in.value).name;
      int casts = 0;
      for (const Node& n : g.nodes()) {
        casts += n.op == Op::Cast && n.operands[0] == in.value && n.dtype_attr("dtype") == DType::bf16;
      }
      EXPECT_LE(casts, 1) << m->name << ": " << g.value(in.value).name << " cast " << casts << " times";
    }
  }
}

// One SGD step with lr 1 moves each parameter by minus its gradient: the bf16 and f16
// steps' gradients against the f32 step's, all parameters' together as one vector, within
// the low precision's tolerance (relative L2 error). The CNN's is larger than its bits
// alone (7% in bf16, 4% in f16, almost all of it in the first convolution's weight):
// probably batch norm's backward, which subtracts means and so amplifies the rounding of
// that convolution's low output, and max pooling's choice among rounded values.
TEST(MixedPrecision, GradientsMatchTheF32StepsWithinTolerance) {
  for (const Model* m : {&kMlp, &kCnn}) {
    StatusOr<Trainer> f32 = compile(*m, DType::f32, "reference", OptimizerSpec::sgd(1.0));
    ASSERT_TRUE(f32.ok()) << f32.error().to_string();
    const std::map<std::string, Tensor> before = f32->values();
    train(*f32, *m, 1);
    for (DType precision : {DType::bf16, DType::f16}) {
      StatusOr<Trainer> low = compile(*m, precision, "reference", OptimizerSpec::sgd(1.0));
      ASSERT_TRUE(low.ok()) << low.error().to_string();
      train(*low, *m, 1);
      double diff = 0, norm = 0;  // squared
      for (const auto& [name, t0] : before) {
        if (!is_floating(t0.dtype())) continue;
        const Tensor& a = f32->values().at(name);
        const Tensor& b = low->values().at(name);
        for (int64_t k = 0; k < t0.numel(); ++k) {
          const double ga = t0.get_double(k) - a.get_double(k), gb = t0.get_double(k) - b.get_double(k);
          diff += (ga - gb) * (ga - gb);
          norm += ga * ga;
        }
      }
      const double relative = std::sqrt(diff / norm);
      std::printf("%s %s: gradient norm %.4g, relative L2 difference from f32 %.3g\n", m->name,
                  std::string(dtype_name(precision)).c_str(), std::sqrt(norm), relative);
      EXPECT_GT(norm, 0) << m->name;
      const double tol = (m == &kMlp ? 1 : 10) * (precision == DType::bf16 ? 1e-2 : 5e-3);
      EXPECT_LE(relative, tol) << m->name << " " << dtype_name(precision);
    }
  }
}

// Parameters and optimizer state are f32 at every precision: a bf16 run's checkpoint
// loads into an f32 trainer and the other way round, tensor for tensor.
// Across precisions, f16's loss-scale state included: a strict load of an f32 checkpoint
// into an f16 step keeps the scale it starts with; an f16 checkpoint into an f32 step
// skips the scale.
TEST(MixedPrecision, CheckpointsLoadAcrossPrecisions) {
  for (auto [from, to] : {std::pair{DType::bf16, DType::f32}, std::pair{DType::f32, DType::f16},
                          std::pair{DType::f16, DType::f32}}) {
    StatusOr<Trainer> a = compile(kCnn, from, "reference");
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    train(*a, kCnn, 3);
    const std::string path = tmp(std::string("mixed_") + std::string(dtype_name(from)) + ".safetensors");
    ASSERT_TRUE(a->save(path).ok());
    StatusOr<Trainer> b = compile(kCnn, to, "reference");
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    StatusOr<LoadReport> report = b->load(path);
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    EXPECT_EQ(b->steps(), 3);
    const auto [diff, scale] = max_difference(*a, *b);
    EXPECT_EQ(diff, 0) << dtype_name(from) << " -> " << dtype_name(to);
    EXPECT_GT(scale, 0);
    if (to == DType::f16) {
      ASSERT_TRUE(b->loss_scale().ok());
      EXPECT_EQ(*b->loss_scale(), 65536);
    }
    if (from == DType::f16) {
      EXPECT_EQ(report->skipped, (std::vector<std::string>{"loss_scale", "loss_scale_growth_tracker",
                                                           "skipped_steps"}));
    }
    StatusOr<double> loss = b->step(batch(kCnn, 3));
    EXPECT_TRUE(loss.ok() && std::isfinite(*loss));
  }
}

// Attention with layer norm (softmax and the norm in f32, the products in bf16), and a GRU
// (a loop: its products in bf16 too, passes/autocast.h), under an MSE
// loss: five steps close to the f32 ones.
TEST(MixedPrecision, AttentionAndLoopsFollowF32) {
  auto attention = [] {
    return FlowBuilder::from(MultiheadAttention(8, 2)).through(LayerNorm(8)).through(Linear(8, 3)).build();
  };
  auto gru = [] { return FlowBuilder::from(GRU(8, 6)).through(Linear(6, 3)).build(); };
  for (auto [name, make] : {std::pair{"attention", +attention}, std::pair{"gru", +gru}}) {
    std::vector<double> curves[2];
    for (int p = 0; p < 2; ++p) {
      StatusOr<FlowPtr> net = make();
      ASSERT_TRUE(net.ok()) << net.error().to_string();
      StatusOr<Trainer> t = Trainer::compile(*net, {{"x", f32({2, 5, 8})}}, LossSpec::mse(),
                                             OptimizerSpec::adam(1e-2),
                                             {.seed = 1, .backend = "reference",
                                              .precision = p == 0 ? DType::f32 : DType::bf16});
      ASSERT_TRUE(t.ok()) << name << ": " << t.error().to_string();
      int low = 0;
      for (const Node& n : t->step_graph().nodes()) {
        low += n.results.size() == 1 && t->step_graph().type(n.result()).dtype == DType::bf16;
      }
      EXPECT_EQ(low > 0, p == 1) << name << ": " << low << " bf16 values";
      const Type out = t->step_graph().type(t->step_graph().find_value("weft.target").value());
      Tensor x(f32({2, 5, 8})), y(out);
      for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = std::cos(0.3f * k);
      for (int64_t k = 0; k < y.numel(); ++k) y.data<float>()[k] = std::sin(0.7f * k);
      for (int i = 0; i < 5; ++i) {
        StatusOr<double> l = t->step({x, y});
        ASSERT_TRUE(l.ok()) << name << ": " << l.error().to_string();
        curves[p].push_back(*l);
      }
    }
    for (size_t i = 0; i < curves[0].size(); ++i) {
      EXPECT_NEAR(curves[1][i], curves[0][i], 0.02 * (1 + curves[0][i])) << name << " step " << i;
    }
  }
}

// The low-precision weight copies (TrainOptions::weight_copies, passes/weight_copies.h)
// change no number: a step that keeps them as state and one that casts every weight in
// every step give the same losses bit for bit — over several steps, after set_value, after
// a checkpoint load and after a failed load (which leaves the parameters and their copies
// as they were). The copies are state inputs of the step and never values or checkpoint
// entries.
TEST(MixedPrecision, WeightCopiesChangeNoNumber) {
  for (const std::string backend : {"cpu", "reference"}) {
    for (const Model* m : {&kMlp, &kCnn}) {
      const std::string what = backend + " " + m->name;
      StatusOr<FlowPtr> net = m->net();
      ASSERT_TRUE(net.ok()) << net.error().to_string();
      std::vector<Trainer> trainers;
      for (bool copies : {true, false}) {
        StatusOr<Trainer> t = Trainer::compile(
            *net, {{"x", Type{DType::f32, m->input}}}, LossSpec::cross_entropy(),
            OptimizerSpec::adam(1e-2),
            {.seed = 5, .backend = backend, .precision = DType::bf16, .weight_copies = copies});
        ASSERT_TRUE(t.ok()) << what << ": " << t.error().to_string();
        int copy_inputs = 0;
        for (const Input& in : t->step_graph().inputs()) {
          copy_inputs += t->step_graph().value(in.value).name.rfind("weft.copy.", 0) == 0;
        }
        EXPECT_EQ(copy_inputs > 0, copies) << what << ": " << copy_inputs << " copies";
        trainers.push_back(std::move(*t));
      }
      Trainer& kept = trainers[0];
      Trainer& cast = trainers[1];
      auto same_losses = [&](int steps, const std::string& after) {
        EXPECT_EQ(train(kept, *m, steps), train(cast, *m, steps)) << what << " after " << after;
      };
      same_losses(4, "compile");
      const std::string path = tmp("copies_" + backend + "_" + m->name + ".safetensors");
      ASSERT_TRUE(kept.save(path).ok());
      same_losses(2, "save");
      // set_value: the first weight scaled on both; the copy follows it.
      const std::string first = kept.model().parameters()[0].name;
      Tensor w = kept.values().at(first);
      for (int64_t k = 0; k < w.numel(); ++k) w.set_double(k, 1.5 * w.get_double(k));
      ASSERT_TRUE(kept.set_value(first, w).ok());
      ASSERT_TRUE(cast.set_value(first, w).ok());
      same_losses(2, "set_value");
      ASSERT_TRUE(kept.load(path).ok());
      ASSERT_TRUE(cast.load(path).ok());
      same_losses(2, "load");
      EXPECT_FALSE(kept.load(tmp("no_such_checkpoint.safetensors")).ok());
      same_losses(2, "a failed load");
      for (const auto& [name, value] : kept.values()) {
        EXPECT_EQ(name.rfind("weft.copy.", 0), std::string::npos) << what << ": " << name;
        EXPECT_NE(value.dtype(), DType::bf16) << what << ": " << name;
      }
    }
  }
}

TEST(MixedPrecision, RefusesOtherPrecisions) {
  for (DType precision : {DType::f64, DType::i32}) {
    StatusOr<Trainer> t = compile(kMlp, precision, "reference");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().to_string(),
              "error: TrainOptions::precision is " + std::string(dtype_name(precision)) +
                  "; a training step runs in f32, or mixed precision with bf16 or f16");
  }
}

}  // namespace training_precision_test
}  // namespace
}  // namespace weft

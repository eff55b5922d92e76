// The lstm_seq bench model's training step (bench/models_seq.cc, cpu preset: LSTM(64 ->
// 128, 2 layers) over 50 steps, batch 32, Adam) on the compiled CPU backend against the
// reference interpreter, with the reference run in f64 as the arbiter: each f32 result is
// judged by its distance to the f64 one, not by its distance to the other f32 result.
//
// Two regimes:
//  - The model as it trains (the Trainer's initialization, U(±1/sqrt(128))): the loss,
//    the gradients (Adam's first moment after the first step is 0.1·g) and the updated
//    parameters agree with f64 to f32 accumulation noise, over 20 steps.
//  - The step graph on testing::random_inputs (every weight U(±1), as a test comparing
//    two cpu executors feeds it): the gates saturate and the gradient through 50 steps
//    explodes and is ill-conditioned. There the f32 reference is itself several percent
//    from f64, and so is f64 on inputs moved by one f32 rounding: the cpu's difference
//    from the reference there (the loss 2.7e-4 from f64's 6.38589, the reference's
//    1.2e-4; the gradients 7% apart) is rounding amplified by the problem, not a bug, and
//    it vanishes over 3 steps or with sane weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "bench/models.h"
#include "codegen/cpu_backend.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {

/// max |a - b| / max |b|: the error relative to the tensor's scale, so that entries near
/// zero (a gradient's many tiny ones) do not dominate. NaN anywhere gives NaN.
double normwise(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double d = std::abs(a.get_double(i) - b.get_double(i));
    if (std::isnan(d)) return d;
    diff = std::max(diff, d);
    scale = std::max(scale, std::abs(b.get_double(i)));
  }
  return scale == 0 ? diff : diff / scale;
}

Tensor uniform(const Type& t, std::mt19937& rng) {
  Tensor x(t);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::uniform_real_distribution<double>(-1, 1)(rng));
  return x;
}

/// `inputs` with every floating type in `dtype`.
std::vector<InputSpec> in_dtype(std::vector<InputSpec> inputs, DType dtype) {
  for (InputSpec& s : inputs) s.type.dtype = dtype;
  return inputs;
}

bench::BenchModel lstm_seq() {
  auto m = bench::make_bench_model("lstm_seq", bench::Preset::cpu);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? *m : bench::BenchModel{};
}

// 20 Adam steps from the Trainer's initialization on the cpu, and on the reference in f32
// and in f64 (the f64 trainer starting from the f32 one's values). Measured, normwise to
// f64 and worst over the steps and tensors, cpu / f32 reference: the loss 3.6e-8 / 3.6e-8
// (relative), the gradients at the first step 4.5e-7 / 4.9e-7, the Adam states 1.9e-6 /
// 1.4e-6, the parameters 1.1e-5 / 1.2e-5; the bounds are about ten times those. The parameters'
// 1e-5 is Adam's: its first updates are lr·g/|g|, so an entry whose gradient is near zero
// moves by up to lr on the sign of its rounding. The last time step read from the one
// before (a wrong window) takes the first gradients 0.8 away and the parameters 0.2.
TEST(LstmParity, TheLstmSeqStepMatchesTheF64Reference) {
  const bench::BenchModel m = lstm_seq();
  ASSERT_NE(m.net, nullptr);
  const OptimizerSpec adam = OptimizerSpec::adam(m.lr);
  auto cpu = Trainer::compile(m.net, m.inputs, m.loss, adam, {.seed = 1, .backend = "cpu"});
  auto ref = Trainer::compile(m.net, m.inputs, m.loss, adam, {.seed = 1, .backend = "reference"});
  auto f64 = Trainer::compile(m.net, in_dtype(m.inputs, DType::f64), m.loss, adam, {.seed = 1, .backend = "reference"});
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_TRUE(f64.ok()) << f64.error().to_string();
  for (const auto& [name, value] : ref->values()) {
    ASSERT_TRUE(f64->set_value(name, to_dtype(value, DType::f64)).ok()) << name;
  }
  // The worst over the steps and tensors, normwise to f64: cpu and f32 reference.
  double loss[2] = {0, 0}, grad[2] = {0, 0}, state[2] = {0, 0}, params[2] = {0, 0};
  std::mt19937 rng(11);
  for (int step = 0; step < 20; ++step) {
    const std::vector<Tensor> batch = {uniform(m.inputs[0].type, rng), uniform(m.target, rng)};
    auto a = cpu->step(batch);
    auto b = ref->step(batch);
    auto c = f64->step({to_dtype(batch[0], DType::f64), to_dtype(batch[1], DType::f64)});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    // The loss is the forward pass on the parameters before this step's update.
    EXPECT_NEAR(*a, *c, 1e-6 * std::max(1.0, std::abs(*c))) << "step " << step;
    loss[0] = std::max(loss[0], std::abs(*a - *c) / std::abs(*c));
    loss[1] = std::max(loss[1], std::abs(*b - *c) / std::abs(*c));
    EXPECT_NEAR(*a, *b, 1e-5 * std::max(1.0, std::abs(*b))) << "step " << step << " (README's promise)";
    for (const auto& [name, want] : f64->values()) {
      const double d = normwise(cpu->values().at(name), want);
      const bool param = !name.starts_with("optimizer.");
      double* worst = param ? params : step == 0 && name.ends_with(".exp_avg") ? grad : state;
      worst[0] = std::max(worst[0], d);
      worst[1] = std::max(worst[1], normwise(ref->values().at(name), want));
      // exp_avg after the first step is (1 - β1)·g = 0.1·g: the gradient, before any update.
      if (step == 0 && name.ends_with(".exp_avg")) {
        EXPECT_LT(d, 5e-6) << "the gradient: " << name;
      }
      EXPECT_LT(d, param ? 1e-4 : 2e-5) << "step " << step << ", " << name;
    }
  }
  std::printf("  normwise to f64, worst of 20 steps, cpu / f32 reference: loss %.2e / %.2e, first gradients "
              "%.2e / %.2e, Adam states %.2e / %.2e, parameters %.2e / %.2e\n",
              loss[0], loss[1], grad[0], grad[1], state[0], state[1], params[0], params[1]);
}

/// The step graph of `m` for `dtype` inputs, as the reference Trainer builds it.
StatusOr<Graph> step_graph(const bench::BenchModel& m, DType dtype) {
  WEFT_ASSIGN_OR_RETURN(Trainer t, Trainer::compile(m.net, in_dtype(m.inputs, dtype), m.loss,
                                                    OptimizerSpec::adam(m.lr), {.seed = 1, .backend = "reference"}));
  return t.step_graph();
}

/// The gradients (Adam's exp_avg from zero state: 0.1·g) of one run of a step graph.
std::map<std::string, Tensor> gradients(const reference::RunResult& r) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : r.updated) {
    if (name.ends_with(".exp_avg")) out.emplace(name, value);
  }
  return out;
}

/// How far the gradients of one step graph are from f64's, with every input from
/// testing::random_inputs (weights U(±1)) except a zero Adam state, the first step and
/// lr 1e-3: on the cpu, on the f32 reference, and on f64 with its inputs moved by one
/// f32 rounding (each scaled by 1 ± 2^-24) — the spread rounding alone causes. The worst
/// tensor of each.
struct Spread {
  double cpu = 0, ref = 0, rounded = 0;
};

Spread saturated_spread(const bench::BenchModel& m) {
  Spread s;
  auto g32 = step_graph(m, DType::f32);
  auto g64 = step_graph(m, DType::f64);
  EXPECT_TRUE(g32.ok() && g64.ok());
  if (!g32.ok() || !g64.ok()) return s;
  std::vector<Tensor> in32 = testing::random_inputs(*g32, /*seed=*/7);
  std::vector<Tensor> in64, moved;
  std::mt19937 rng(3);
  for (size_t k = 0; k < in32.size(); ++k) {
    const std::string& name = g32->value(g32->inputs()[k].value).name;
    const bool state = name.starts_with("optimizer.");
    if (state) in32[k] = Tensor(in32[k].type());
    if (name == "weft.lr") in32[k].set_double(0, 1e-3);
    if (name == "weft.step") in32[k].set_double(0, 1);
    in64.push_back(to_dtype(in32[k], g64->type(g64->inputs()[k].value).dtype));
    moved.push_back(in64.back());
    if (in64.back().dtype() != DType::f64 || state) continue;
    for (int64_t i = 0; i < moved.back().numel(); ++i) {
      moved.back().set_double(i, in64.back().get_double(i) * (1 + std::ldexp(rng() % 2 ? 1.0 : -1.0, -24)));
    }
  }
  // The cpu as it runs loops (each ys and carry bound to its slot), copying them
  // (runtime/loop_slots.h off) and unrolled: the worst of the three.
  std::vector<StatusOr<reference::RunResult>> cpu;
  for (int variant = 0; variant < 3; ++variant) {
    codegen::CpuOptions options;
    options.executor.loop_slots = variant != 1;
    options.lower.unroll_loops = variant == 2;
    cpu.push_back(codegen::run_on_cpu(*g32, in32, options));
    EXPECT_TRUE(cpu.back().ok()) << cpu.back().error().to_string();
    if (!cpu.back().ok()) return s;
  }
  auto ref = reference::run(*g32, in32);
  auto exact = reference::run(*g64, in64);
  auto rounded = reference::run(*g64, moved);
  EXPECT_TRUE(ref.ok() && exact.ok() && rounded.ok());
  if (!ref.ok() || !exact.ok() || !rounded.ok()) return s;
  const auto want = gradients(*exact);
  const auto from_ref = gradients(*ref), from_rounded = gradients(*rounded);
  EXPECT_EQ(want.size(), m.name == "lstm_seq" ? 10u : 6u);
  for (const auto& [name, g] : want) {
    for (const auto& run : cpu) s.cpu = std::max(s.cpu, normwise(gradients(*run).at(name), g));
    s.ref = std::max(s.ref, normwise(from_ref.at(name), g));
    s.rounded = std::max(s.rounded, normwise(from_rounded.at(name), g));
  }
  std::printf("  %s: gradients normwise to f64: cpu %.2e, f32 reference %.2e, f64 on inputs moved by one "
              "f32 rounding %.2e\n",
              m.name.c_str(), s.cpu, s.ref, s.rounded);
  return s;
}

/// lstm_seq's model with `steps` time steps and `layers` layers.
bench::BenchModel lstm(int64_t steps, int64_t layers) {
  bench::BenchModel m = lstm_seq();
  auto net = FlowBuilder::from(LSTM(64, 128, {.layers = layers, .last = true})).through(Linear(128, 64)).build();
  EXPECT_TRUE(net.ok()) << net.error().to_string();
  m.name = "lstm " + std::to_string(layers) + " layer, " + std::to_string(steps) + " steps";
  m.net = *net;
  m.inputs[0].type.shape = Shape({32, steps, 64});
  return m;
}

// With saturated weights the 50-step gradient is ill-conditioned (measured on lstm_seq:
// max |g| about 1,800; f64 on its inputs moved by one f32 rounding lands 2.8% away), and
// both f32 results are several percent from f64 (cpu 6.8%, reference 6.7%): the cpu is
// judged against that spread. Over 3 steps the same weights give a well-conditioned
// gradient: cpu 1.9e-6, reference 1.1e-6, moved f64 7e-7.
TEST(LstmParity, SaturatedWeightsMakeTheLongGradientIllConditionedNotWrong) {
  const Spread short_run = saturated_spread(lstm(/*steps=*/3, /*layers=*/1));
  EXPECT_LT(short_run.cpu, 2e-5);
  EXPECT_LT(short_run.rounded, 1e-5);
  const Spread full = saturated_spread(lstm_seq());
  EXPECT_GT(full.rounded, 1e-3) << "the 50-step gradient amplifies a rounding of its inputs";
  EXPECT_GT(full.ref, 1e-3) << "and so the f32 reference is far from f64 too";
  EXPECT_LT(full.cpu, 3 * std::max(full.ref, full.rounded)) << "the cpu is as far as rounding takes f32";
}

}  // namespace
}  // namespace weft

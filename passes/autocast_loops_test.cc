// Mixed precision inside loop bodies (#30 with #31's loops, passes/autocast.h): a tanh
// RNN (forward and reversed), nested loops, loops with early exits (`stop`, `active`) and
// a loop over a batched weight, each autocast to bf16:
//  - its bodies' products run in bf16 (counted), and its value stays within bf16's
//    tolerance of the f32 graph's on the reference interpreter, its gradient too (and
//    the same in f16, within f16's);
//  - the cpu backend compiles the bf16 bodies, forward and gradient, with no invocation
//    falling back to the interpreter, and matches the interpreter on the same graph;
//  - a weight's gradient summed in the reverse loop is summed in f32 (its accumulator).
// Then the GRU and LSTM modules' training steps in bf16 on the reference and cpu backends,
// and the suite's gru_seq and lstm_seq trained a few dozen steps in bf16 beside f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/models.h"
#include "codegen/cpu_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/verifier.h"
#include "passes/autocast.h"
#include "passes/loop_testing.h"
#include "runtime/cuda/recurrent_plan.h"
#include "runtime/cuda/recurrent_plan_testing.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {

/// A tanh RNN with a bias, its hidden states squared and summed into a loss (output 0).
std::string rnn(bool reverse) {
  return std::string(R"(graph @rnn(%w: f32[6,6] {param}, %b: f32[6] {param}, %h0: f32[3,6], %xs: f32[5,3,6]) {
  %h, %hs = scan(%w, %b, %h0, %xs) {consts=2, carries=1, length=5)") +
         (reverse ? ", reverse=true" : "") + R"(} : f32[3,6], f32[5,3,6] ({
    ^cell(%cw: f32[6,6], %cb: f32[6], %ch: f32[3,6], %cx: f32[3,6]):
      %m = matmul(%ch, %cw) : f32[3,6]
      %mb = add(%m, %cb) : f32[3,6]
      %a = add(%mb, %cx) : f32[3,6]
      %n = tanh(%a) : f32[3,6]
      return %n, %n
  })
  %sq = mul(%hs, %hs) : f32[5,3,6]
  %l = sum(%sq) : f32[]
  return %l, %h, %hs
})";
}

/// A loop whose body runs a loop over the same weight.
constexpr char kNested[] = R"(graph @nested(%w: f32[5,5] {param}, %a0: f32[3,5], %xs: f32[4,3,5]) {
  %a, %ys = scan(%w, %a0, %xs) {consts=1, carries=1, length=4} : f32[3,5], f32[4,3,5] ({
    ^outer(%ow: f32[5,5], %oa: f32[3,5], %ox: f32[3,5]):
      %s = add(%oa, %ox) : f32[3,5]
      %in = scan(%ow, %s) {consts=1, carries=1, length=2} : f32[3,5] ({
        ^inner(%iw: f32[5,5], %ia: f32[3,5]):
          %m = matmul(%ia, %iw) : f32[3,5]
          %t = tanh(%m) : f32[3,5]
          return %t
      })
      return %in, %in
  })
  %sq = mul(%ys, %ys) : f32[4,3,5]
  %l = sum(%sq) : f32[]
  return %l, %a
})";

/// Early exits: a loop that stops after three of five iterations (a counter carry), then a
/// reversed loop that runs only where %on is true.
constexpr char kExits[] = R"(graph @exits(%w: f32[4,4] {param}, %h0: f32[3,4], %xs: f32[5,3,4], %on: bool[5]) {
  %k0 = full() {shape=[], value=0, dtype=f32} : f32[]
  %d0 = full() {shape=[], value=0, dtype=bool} : bool[]
  %h, %k, %d, %ys = scan(%w, %h0, %k0, %d0, %xs) {carries=3, consts=1, length=5, stop=2} : f32[3,4], f32[], bool[], f32[5,3,4] ({
    ^cell(%cw: f32[4,4], %h1: f32[3,4], %k1: f32[], %d1: bool[], %x1: f32[3,4]):
      %m = matmul(%h1, %cw) : f32[3,4]
      %a = add(%m, %x1) : f32[3,4]
      %h2 = tanh(%a) : f32[3,4]
      %one = full() {shape=[], value=1, dtype=f32} : f32[]
      %k2 = add(%k1, %one) : f32[]
      %three = full() {shape=[], value=3, dtype=f32} : f32[]
      %d2 = ge(%k2, %three) : bool[]
      return %h2, %k2, %d2, %h2
  })
  %g, %zs = scan(%w, %h, %xs, %on) {consts=1, carries=1, length=5, active=1, reverse=true} : f32[3,4], f32[5,3,4] ({
    ^masked(%mw: f32[4,4], %g1: f32[3,4], %x2: f32[3,4], %o2: bool[]):
      %p = matmul(%g1, %mw) : f32[3,4]
      %s = sin(%p) : f32[3,4]
      %g2 = add(%s, %x2) : f32[3,4]
      return %g2, %g2
  })
  %sy = sum(%ys) : f32[]
  %zz = mul(%zs, %zs) : f32[5,3,4]
  %sz = sum(%zz) : f32[]
  %l = add(%sy, %sz) : f32[]
  return %l, %h, %k, %g
})";

/// A batched weight (one [4,4] matrix per sample): its gradient, a batched product per
/// iteration, is summed in the reverse loop (not one product after it, which needs
/// rank-2 operands: autodiff/scan_grad.cc), in an accumulator.
constexpr char kBatched[] = R"(graph @batched(%w: f32[2,4,4] {param}, %h0: f32[2,3,4]) {
  %h, %hs = scan(%w, %h0) {consts=1, carries=1, length=6} : f32[2,3,4], f32[6,2,3,4] ({
    ^cell(%cw: f32[2,4,4], %ch: f32[2,3,4]):
      %m = matmul(%ch, %cw) : f32[2,3,4]
      %n = tanh(%m) : f32[2,3,4]
      return %n, %n
  })
  %sq = mul(%hs, %hs) : f32[6,2,3,4]
  %l = sum(%sq) : f32[]
  return %l
})";

struct Case {
  const char* name;
  std::string text;
};

std::vector<Case> cases() {
  return {{"rnn", rnn(false)}, {"rnn_reversed", rnn(true)}, {"nested", kNested}, {"exits", kExits},
          {"batched", kBatched}};
}

Graph parse(const std::string& text) { return parse_typed(text, "autocast_loops_test.cc"); }

Graph autocast(const Graph& g, DType dtype = DType::bf16) {
  Graph low = g;
  StatusOr<bool> changed = AutocastPass(dtype).run(low);
  EXPECT_TRUE(changed.ok() && *changed) << (changed.ok() ? "no change" : changed.error().to_string());
  EXPECT_TRUE(verify(low).ok()) << verify(low).to_string();
  return low;
}

/// The contractions in `g`'s loop bodies (nested ones included), by result dtype: f16 or
/// bf16 (`low`), or another (`f32`).
void count_body_products(const Graph& g, int& low, int& f32, bool in_body = false) {
  for (const Node& n : g.nodes()) {
    if (in_body && autocast_class(n.op) == AutocastClass::Low) {
      const DType d = g.type(n.result()).dtype;
      (is_half(d) ? low : f32) += 1;
    }
    if (n.op == Op::Scan) count_body_products(*n.body, low, f32, /*in_body=*/true);
  }
}

/// The largest over the outputs of max |got - want| / max |want|.
double relative_error(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    EXPECT_EQ(got[k].numel(), want[k].numel());
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < std::min(got[k].numel(), want[k].numel()); ++i) {
      diff = std::max(diff, std::abs(got[k].get_double(i) - want[k].get_double(i)));
      scale = std::max(scale, std::abs(want[k].get_double(i)));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-30));
  }
  return worst;
}

/// `g` on the cpu backend, twice (the second run starts from what the first left in the
/// loops' slots), against the reference interpreter on the same graph; no invocation
/// runs through the interpreter.
void expect_cpu_matches_reference(const Graph& g, const std::vector<Tensor>& inputs, double tol) {
  const std::vector<Tensor> want = run_reference(g, inputs);
  auto ex = codegen::compile_for_cpu(g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  for (size_t k = 0; k < inputs.size(); ++k) ASSERT_TRUE((*ex)->set_input(static_cast<int>(k), inputs[k]).ok());
  for (int run = 0; run < 2; ++run) {
    Status ran = (*ex)->run();
    ASSERT_TRUE(ran.ok()) << ran.error().to_string();
    std::vector<Tensor> got;
    for (size_t k = 0; k < want.size(); ++k) got.push_back((*ex)->output(static_cast<int>(k)));
    const double error = relative_error(got, want);
    if (run == 0) std::printf("  cpu vs reference: %.3g\n", error);
    EXPECT_LE(error, tol) << "run " << run;
  }
  EXPECT_EQ((*ex)->fallbacks(), 0);
}

Graph gradient(const Graph& g) { return gradient_of_floats(g); }

// bf16 against f32: within a few units of bf16's last place (2^-8) of the largest value,
// over five or six iterations; f16 to as many units of its own (2^-11). The cpu backend against the interpreter on the same bf16
// graph: its kernels compute in f32 and round at their stores, the interpreter rounds
// every op, so they differ by a few units of the last place too.
double low_vs_f32(DType dtype) { return dtype == DType::bf16 ? 3e-2 : 4e-3; }
constexpr double kCpuVsReference = 2e-2;

TEST(AutocastLoops, BodiesRunInBf16AndFollowF32) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (const Case& c : cases()) {
      const std::string name = c.name + std::string(" ") + std::string(dtype_name(dtype));
      SCOPED_TRACE(name);
      const Graph g = parse(c.text);
      const Graph low = autocast(g, dtype);
      int low_products = 0, f32_products = 0;
      count_body_products(low, low_products, f32_products);
      EXPECT_GT(low_products, 0);
      EXPECT_EQ(f32_products, 0);
      const std::vector<Tensor> inputs = testing::random_inputs(g, 11);
      const double error = relative_error(run_reference(low, inputs), run_reference(g, inputs));
      std::printf("%s: forward vs f32: %.3g\n", name.c_str(), error);
      EXPECT_GT(error, 0) << "the low graph computes the f32 one exactly: does it run in low precision?";
      EXPECT_LE(error, low_vs_f32(dtype));
    }
  }
}

TEST(AutocastLoops, GradientsThroughBf16BodiesFollowF32) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (const Case& c : cases()) {
      const std::string name = c.name + std::string(" ") + std::string(dtype_name(dtype));
      SCOPED_TRACE(name);
      const Graph g = parse(c.text);
      const Graph grad = gradient(g), grad_low = gradient(autocast(g, dtype));
      ASSERT_TRUE(verify(grad_low).ok()) << verify(grad_low).to_string();
      const std::vector<Tensor> inputs = testing::random_inputs(g, 12);
      const std::vector<Tensor> want = run_reference(grad, inputs), got = run_reference(grad_low, inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < want.size(); ++k) {
        const double error = relative_error({got[k]}, {want[k]});
        std::printf("%s: gradient %zu vs f32: %.3g\n", name.c_str(), k, error);
        EXPECT_LE(error, low_vs_f32(dtype)) << "gradient " << k;
      }
    }
  }
}

TEST(AutocastLoops, CpuBackendRunsBf16BodiesAsTheInterpreterDoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Graph low = autocast(parse(c.text));
    const std::vector<Tensor> inputs = testing::random_inputs(low, 13);
    std::printf("%s, forward and gradient:\n", c.name);
    {
      SCOPED_TRACE("forward");
      expect_cpu_matches_reference(low, inputs, kCpuVsReference);
    }
    SCOPED_TRACE("gradient");
    expect_cpu_matches_reference(gradient(low), inputs, kCpuVsReference);
  }
}

// The batched weight's gradient is summed in the reverse loop: in an f32 carry, the bf16
// weight's terms cast to f32 and added to it, the sum rounded to bf16 once after the loop
// (then cast to the f32 parameter's gradient by the cast's own rule).
TEST(AutocastLoops, AWeightsGradientSummedInTheLoopAccumulatesInF32) {
  const Graph grad = gradient(autocast(parse(kBatched)));
  int accumulators = 0;
  for (const Node& n : grad.nodes()) {
    if (n.op != Op::Scan || !n.bool_attr("reverse")) continue;
    const int64_t consts = n.int_attr("consts"), carries = n.int_attr("carries");
    for (int64_t k = consts; k < consts + carries; ++k) {
      const Type t = grad.type(n.operands[k]);
      EXPECT_EQ(dtype_name(t.dtype), "f32") << "carry " << k - consts;
      accumulators += t.shape == Shape({2, 4, 4});
    }
  }
  EXPECT_EQ(accumulators, 1);
}

/// The contractions of a trainer's step graph inside loop bodies, by dtype.
std::pair<int, int> step_body_products(const Trainer& t) {
  int low = 0, f32 = 0;
  count_body_products(t.step_graph(), low, f32);
  return {low, f32};
}

/// Casts to f16 or bf16 of a loop's const parameters inside its body (nested bodies
/// included).
int body_const_casts(const Graph& g) {
  int casts = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Scan) continue;
    const Graph& body = *n.body;
    for (const Node& b : body.nodes()) {
      const int in = b.op == Op::Cast ? body.input_index(b.operands[0]) : -1;
      const DType to = in >= 0 ? b.dtype_attr("dtype") : DType::f32;
      casts += in >= 0 && in < n.int_attr("consts") && is_half(to);
    }
    casts += body_const_casts(body);
  }
  return casts;
}

/// The names of the step's low-precision weight copies (passes/weight_copies.h).
std::vector<std::string> weight_copies(const Graph& g) {
  std::vector<std::string> out;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    if (name.rfind("weft.copy.", 0) == 0) out.push_back(name);
  }
  return out;
}

Tensor wave(const Type& type, double a, double b) {
  Tensor x(type);
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = static_cast<float>(std::sin(a * k + b));
  return x;
}

// The GRU and LSTM modules (one loop over time each, and its reverse loop) in bf16 and in
// f16 (with loss scaling): every product in their bodies runs in the low dtype, and five
// steps on the cpu backend follow the reference backend's.
TEST(AutocastLoops, GruAndLstmStepsRunTheirLoopsLowOnTheCpuAsOnTheReference) {
  auto gru = [] { return FlowBuilder::from(GRU(8, 6)).through(Linear(6, 3)).build(); };
  auto lstm = [] { return FlowBuilder::from(LSTM(8, 6)).through(Linear(6, 3)).build(); };
  for (auto [name, make] : {std::pair{"gru", +gru}, std::pair{"lstm", +lstm}}) {
    for (DType precision : {DType::bf16, DType::f16}) {
      SCOPED_TRACE(name + std::string(" ") + std::string(dtype_name(precision)));
      std::vector<double> losses[2];
      for (int b = 0; b < 2; ++b) {
        StatusOr<FlowPtr> net = make();
        ASSERT_TRUE(net.ok()) << net.error().to_string();
        StatusOr<Trainer> t = Trainer::compile(*net, {{"x", Type{DType::f32, Shape({2, 5, 8})}}}, LossSpec::mse(),
                                               OptimizerSpec::adam(1e-2),
                                               {.seed = 1, .backend = b == 0 ? "reference" : "cpu",
                                                .precision = precision});
        ASSERT_TRUE(t.ok()) << t.error().to_string();
        const auto [low, f32] = step_body_products(*t);
        EXPECT_GT(low, 0);
        EXPECT_EQ(f32, 0);
        // The recurrent weights enter the loops low: cast once per step, outside, as the
        // step's weight copies (one per trained weight), never in a body.
        EXPECT_EQ(body_const_casts(t->step_graph()), 0);
        std::string copies;
        for (const std::string& c : weight_copies(t->step_graph())) copies += c + " ";
        EXPECT_EQ(copies, "weft.copy.0.l0.weight_ih weft.copy.0.l0.bias_ih weft.copy.0.l0.weight_hh "
                          "weft.copy.0.l0.bias_hh weft.copy.1.weight weft.copy.1.bias ");
        const Type out = t->step_graph().type(t->step_graph().find_value("weft.target").value());
        const Tensor x = wave(Type{DType::f32, Shape({2, 5, 8})}, 0.3, 0), y = wave(out, 0.7, 1);
        for (int i = 0; i < 5; ++i) {
          StatusOr<double> l = t->step({x, y});
          ASSERT_TRUE(l.ok()) << l.error().to_string();
          losses[b].push_back(*l);
        }
      }
      for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(std::isfinite(losses[0][i])) << "step " << i;
        EXPECT_NEAR(losses[1][i], losses[0][i], 1e-2 * losses[0][i]) << "step " << i;
      }
    }
  }
}

/// The GEMMs (library calls and contractions) in `p`'s loop bodies: "bf16" or "f32" per
/// GEMM, by its operands' dtypes, in body order.
std::string body_gemms(const Program& p) {
  std::string out;
  for (const Program& body : p.bodies) {
    for (const Invocation& inv : body.code) {
      const bool gemm = (inv.kind == Invocation::Kind::library || inv.kind == Invocation::Kind::contraction) &&
                        inv.node.op == Op::Matmul;
      if (!gemm) continue;
      const DType a = inv.operands[0].type.dtype, b = inv.operands[1].type.dtype;
      out += std::string(a == b ? dtype_name(a) : "mixed") + " ";
    }
  }
  return out;
}

// The lowered bf16 steps, for the cpu and for CUDA (codegen::cuda_lower_options(),
// checked here without a GPU): every GEMM in a loop body takes bf16 operands, and the
// persistent loop planner (runtime/cuda/recurrent_plan.h) plans each of their loops
// (runtime/cuda:recurrent_plan_test runs such plans against the interpreter).
TEST(AutocastLoops, LoweredBf16BodiesCallBf16Gemms) {
  for (auto [name, rnn] : {std::pair{"gru", GRU(6, 8, {.last = true})}, std::pair{"lstm", LSTM(6, 8, {.last = true})}}) {
    SCOPED_TRACE(name);
    auto net = FlowBuilder::from(rnn).through(Linear(8, 6)).build();
    ASSERT_TRUE(net.ok()) << net.error().to_string();
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", Type{DType::f32, Shape({4, 5, 6})}}}, LossSpec::mse(),
                                           OptimizerSpec::adam(), {.backend = "reference", .precision = DType::bf16});
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    for (bool cuda : {false, true}) {
      SCOPED_TRACE(cuda ? "cuda" : "cpu");
      StatusOr<codegen::Lowering> l = lower_for(t->step_graph(), cuda);
      ASSERT_TRUE(l.ok()) << l.error().to_string();
      const std::string gemms = body_gemms(l->program);
      std::printf("%s, %s: loop bodies' GEMMs: %s\n", name, cuda ? "cuda" : "cpu", gemms.c_str());
      EXPECT_NE(gemms.find("bf16"), std::string::npos) << gemms;
      EXPECT_EQ(gemms.find("f32"), std::string::npos) << gemms;
      EXPECT_EQ(gemms.find("mixed"), std::string::npos) << gemms;
      if (!cuda) continue;
      std::vector<std::byte> arena, inputs;
      for (cuda::plan_testing::HostLoop& h : cuda::plan_testing::bind_loops(*l, arena, inputs)) {
        StatusOr<cuda::RecurrentPlan> plan = cuda::plan_recurrent_loop(l->program, *h.loop, h.where);
        EXPECT_TRUE(plan.ok()) << plan.error().message;
      }
    }
  }
}

/// Batch `i` of a suite model whose input is a float sequence and whose target is the
/// output's type (MSE) or class indices: fixed waves, the same for both precisions.
std::vector<Tensor> batch(const bench::BenchModel& m, int i) {
  Tensor x = wave(m.inputs[0].type, 0.013 * (i % 7 + 1), 0.1 * i);
  Tensor y(m.target);
  for (int64_t k = 0; k < y.numel(); ++k) {
    if (m.target.dtype == DType::i64) {
      y.data<int64_t>()[k] = (k + i) % 3;
    } else {
      y.data<float>()[k] = static_cast<float>(std::cos(0.05 * k + 0.2 * i));
    }
  }
  return {x, y};
}

std::vector<double> suite_losses(const bench::BenchModel& m, DType precision, int steps) {
  StatusOr<Trainer> t = Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr),
                                         {.seed = 3, .backend = "cpu", .precision = precision});
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  std::vector<double> out;
  for (int i = 0; t.ok() && i < steps; ++i) {
    StatusOr<double> l = t->step(batch(m, i));
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    out.push_back(l.ok() ? *l : NAN);
  }
  return out;
}

// The suite's recurrent models (cpu preset: 50 steps over time) trained 30 steps on the
// cpu backend in bf16 beside f32 from the same weights on the same batches: the bf16 loss
// stays within 3% of the f32 one at every step.
TEST(AutocastLoops, SuiteRecurrentModelsTrainInBf16WithinThreePercentOfF32) {
  constexpr int kSteps = 30;
  for (const char* name : {"gru_seq", "lstm_seq"}) {
    SCOPED_TRACE(name);
    StatusOr<bench::BenchModel> m = bench::make_bench_model(name, bench::Preset::cpu);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    ASSERT_EQ(m->inputs.size(), 1u);
    ASSERT_EQ(m->inputs[0].type.dtype, DType::f32);
    const std::vector<double> f32 = suite_losses(*m, DType::f32, kSteps), bf16 = suite_losses(*m, DType::bf16, kSteps);
    ASSERT_EQ(f32.size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(bf16.size(), static_cast<size_t>(kSteps));
    double worst = 0;
    for (int i = 0; i < kSteps; ++i) {
      const double relative = std::abs(bf16[i] - f32[i]) / f32[i];
      worst = std::max(worst, relative);
      EXPECT_LE(relative, 0.03) << "step " << i << ": bf16 " << bf16[i] << ", f32 " << f32[i];
    }
    EXPECT_GT(worst, 0) << "the bf16 curve is the f32 one: did the step run in bf16?";
    std::printf("%s: loss f32 %.4f -> %.4f, bf16 %.4f -> %.4f; largest difference %.2f%%\n", name, f32.front(),
                f32.back(), bf16.front(), bf16.back(), 100 * worst);
  }
}

}  // namespace
}  // namespace weft

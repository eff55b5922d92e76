// CTC loss (loss::ctc, CTCLoss) against PyTorch 1.13's ctc_loss (fixtures from
// frontend/testdata/make_sequence_fixtures.py's losses_ctc): the loss and its gradient
// w.r.t. the logits before log_softmax to 1e-5, on the reference interpreter and on the
// compiled CPU backend (loops run as loops, and unrolled); the gradient against f64
// finite differences, w.r.t. the logits and w.r.t. log_probs themselves (which PyTorch's
// backward does not return: see ctc_case in the fixture script); the loss against
// enumeration of every path; the recursion is one loop, and no op falls back to the
// host on the CPU or (lowered only) the GPU; the user errors with their messages pinned.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "autodiff/grad.h"
#include "codegen/targets.h"
#include "frontend/flow.h"
#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/testing/loss_fixtures.h"
#include "runtime/cuda/library.h"

namespace weft {
namespace {
namespace losses_ctc_test {  // this file's names, apart in its package's unity test

using testing::to_f64;

const std::string kFile = "frontend/losses_ctc_test.cc";
constexpr double kTol = 1e-5;
const std::vector<std::string> kExtras = {"targets", "input_lengths", "target_lengths"};

Tensor load(const std::string& case_name, const std::string& file) {
  return testing::load_loss_fixture(case_name, file);
}

/// `first` (log_softmax over the classes for the fixtures' logits) -> CTC loss, the
/// targets and lengths graph inputs passed with uses(...).
FlowBuilder ctc_flow(ModulePtr first, ModulePtr loss) {
  return FlowBuilder::from(std::move(first)).input(kExtras).through(std::move(loss)).uses(kExtras);
}

struct Case {
  std::string name;  ///< Fixture folder.
  loss::CtcOptions options;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

std::vector<Case> cases() {
  return {
      {"loss_ctc_mean", {}},
      {"loss_ctc_sum", {.reduction = Reduction::Sum}},
      {"loss_ctc_none", {.reduction = Reduction::None}},
      {"loss_ctc_blank5_mean", {.blank = 5}},
      {"loss_ctc_blank2_sum", {.blank = 2, .reduction = Reduction::Sum}},
      {"loss_ctc_no_alignment_none", {.reduction = Reduction::None}},
      {"loss_ctc_no_alignment_zero_infinity_mean", {.zero_infinity = true}},
      {"loss_ctc_long_mean", {}},  // T = 60, S = 20
  };
}

/// The fixture's graph inputs in order: logits, targets, input_lengths, target_lengths.
std::vector<Tensor> inputs_of(const Case& c, bool f64) {
  std::vector<Tensor> out = {load(c.name, "input")};
  for (const std::string& n : kExtras) out.push_back(load(c.name, n));
  if (f64) out[0] = to_f64(out[0]);
  return out;
}

StatusOr<Model> build(const Case& c, const std::vector<Tensor>& inputs,
                      ModulePtr first = LogSoftmax(-1)) {
  std::vector<InputSpec> specs = {{"x", inputs[0].type()}};
  for (size_t i = 0; i < kExtras.size(); ++i) specs.push_back({kExtras[i], inputs[i + 1].type()});
  return ctc_flow(std::move(first), CTCLoss(c.options)).build(specs);
}

/// `g` through `backend`'s pass pipeline, then run once on `inputs`. "cpu-unrolled" is
/// the cpu backend with each loop unrolled rather than run as a loop invocation.
StatusOr<reference::RunResult> run_on(const std::string& backend, Graph g,
                                      const std::vector<Tensor>& inputs) {
  const bool unrolled = backend == "cpu-unrolled";
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* target,
                        codegen::find_target(unrolled ? "cpu" : backend));
  WEFT_RETURN_IF_ERROR(target->pipeline({}).run(g).status());
  return target->run(g, inputs, {.unroll_loops = unrolled});
}

/// PyTorch's gradient with its NaNs (the frames of a sample with no alignment, without
/// zero_infinity) as weft's zeros (losses.h).
Tensor nan_as_zero(Tensor t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isnan(t.get_double(i))) t.set_double(i, 0);
  }
  return t;
}

class CtcParity : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(CtcParity, MatchesTorch) {
  const auto& [c, backend] = GetParam();
  std::vector<Tensor> inputs = inputs_of(c, /*f64=*/false);
  auto model = build(c, inputs);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = run_on(backend, model->graph(), inputs);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], load(c.name, "output"), kTol, &why)) << why;

  StatusOr<Graph> grad = gradient_graph(model->graph(), 0, {"x"}, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  inputs.push_back(load(c.name, "seed"));
  auto grads = run_on(backend, *grad, inputs);
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  EXPECT_TRUE(all_close(grads->outputs[0], nan_as_zero(load(c.name, "grad.input")), kTol, &why))
      << why;
}

std::string parity_name(const ::testing::TestParamInfo<std::tuple<Case, std::string>>& info) {
  return testing::test_name(std::get<0>(info.param).name + "_" + std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Torch, CtcParity,
                         ::testing::Combine(::testing::ValuesIn(cases()),
                                            ::testing::Values("reference", "cpu", "cpu-unrolled")),
                         parity_name);

/// In f64, autodiff's gradient w.r.t. the logits against central differences of
/// sum(output · seed) (not for an infinite loss, whose differences are NaN, nor for the
/// long case, 2,160 inputs to perturb).
class CtcGradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(CtcGradCheck, FiniteDifferencesF64) {
  const Case& c = GetParam();
  std::vector<Tensor> inputs = inputs_of(c, /*f64=*/true);
  Tensor seed = to_f64(load(c.name, "seed"));
  auto model = build(c, inputs);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto grads = testing::input_gradients(*model, {"x"}, inputs, seed);
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  testing::expect_input_gradients_match_finite_differences(*model, inputs, {0}, *grads, seed);
}

std::vector<Case> finite_cases() {
  std::vector<Case> out;
  for (const Case& c : cases()) {
    if (c.name != "loss_ctc_no_alignment_none" && c.name != "loss_ctc_long_mean") {
      out.push_back(c);
    }
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return testing::test_name(info.param.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, CtcGradCheck, ::testing::ValuesIn(finite_cases()), case_name);

/// The gradient w.r.t. log_probs themselves (the loss on the stream as it is), which
/// PyTorch's backward does not give: against finite differences, in f64.
TEST(Ctc, LogProbsGradientMatchesFiniteDifferences) {
  const Case c = cases()[1];  // sum: mixed lengths, an empty target, repeats
  std::vector<Tensor> inputs = inputs_of(c, /*f64=*/true);
  auto model = build(c, inputs, Identity());
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const Tensor seed = Tensor::from_doubles(DType::f64, {}, {1.0});
  auto grads = testing::input_gradients(*model, {"x"}, inputs, seed);
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  testing::expect_input_gradients_match_finite_differences(*model, inputs, {0}, *grads, seed);
}

TEST(Ctc, TheRecursionIsOneLoopOverTheFrames) {
  const Case c = cases()[0];
  auto model = build(c, inputs_of(c, /*f64=*/false));
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  int scans = 0;
  for (const Node& n : model->graph().nodes()) {
    if (n.op != Op::Scan) continue;
    ++scans;
    EXPECT_EQ(n.int_attr("length"), 8);  // T
  }
  EXPECT_EQ(scans, 1);
}

/// losses.h's example: a network ending in CTCLoss, differentiated w.r.t. its weights.
TEST(Ctc, HeaderExampleBuildsAndDifferentiates) {
  auto net = FlowBuilder::from(Linear(64, 28)).through(LogSoftmax(-1))
                 .input({"targets", "input_lengths", "target_lengths"})
                 .through(CTCLoss()).uses({"targets", "input_lengths", "target_lengths"})
                 .build({{"x", f32({50, 8, 64})}, {"targets", i64({8, 20})},
                         {"input_lengths", i64({8})}, {"target_lengths", i64({8})}});
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  EXPECT_EQ(net->graph().type(net->graph().outputs()[0]).to_string(), "f32[]");
  StatusOr<Graph> grad = gradient_graph(net->graph(), 0, {"0.weight", "0.bias"});
  EXPECT_TRUE(grad.ok()) << grad.error().to_string();
}

TEST(Ctc, ModuleDescription) {
  EXPECT_EQ(CTCLoss()->describe(), "CTCLoss(mean)");
  EXPECT_EQ(CTCLoss({.blank = 3, .reduction = Reduction::Sum, .zero_infinity = true})->describe(),
            "CTCLoss(sum, blank=3, zero_infinity)");
}

/// -log Σ over every path of `frames` classes that collapses (repeats merged, then blanks
/// dropped) to `target`, of exp(Σ_t log_probs[t, n, path_t]): CTC by enumeration.
double ctc_by_enumeration(const Tensor& log_probs, int64_t n, const std::vector<int64_t>& target,
                          int64_t frames, int64_t blank = 0) {
  const int64_t batch = log_probs.type().shape[1], classes = log_probs.type().shape[2];
  double total = 0;
  std::vector<int64_t> path(static_cast<size_t>(frames), 0);
  for (bool more = true; more;) {
    std::vector<int64_t> collapsed;
    double log_p = 0;
    for (int64_t t = 0; t < frames; ++t) {
      const int64_t c = path[static_cast<size_t>(t)];
      log_p += log_probs.get_double((t * batch + n) * classes + c);
      if (c != blank && (t == 0 || path[static_cast<size_t>(t - 1)] != c)) collapsed.push_back(c);
    }
    if (collapsed == target) total += std::exp(log_p);
    more = false;  // the next path, counting in base `classes`
    for (int64_t& c : path) {
      if (++c < classes) {
        more = true;
        break;
      }
      c = 0;
    }
  }
  return -std::log(total);
}

/// Against enumeration of the paths, and what losses.h says of the values PyTorch
/// refuses: a label outside [0, C) or a target length above S leaves no alignment (inf),
/// an input length above T counts as T, and an input length of 0 with an empty target
/// gives 0.
TEST(Ctc, MatchesEnumerationAndTheDocumentedRuntimeCases) {
  const int64_t frames = 4, batch = 7, classes = 3;
  std::vector<double> lp;
  for (int64_t t = 0; t < frames; ++t) {
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < classes; ++c) {
        lp.push_back(-0.1 * static_cast<double>(1 + (t * 7 + n * 3 + c * 5) % 11));
      }
    }
  }
  const Tensor log_probs = Tensor::from_doubles(DType::f64, {frames, batch, classes}, lp);
  const Tensor targets =
      Tensor::from_vector<int64_t>({batch, 2}, {1, 2, 1, 1, 2, 7, 1, 2, 1, 2, 2, 2, 2, 1});
  const Tensor input_lengths = Tensor::from_vector<int64_t>({batch}, {4, 4, 4, 4, 9, 0, 3});
  const Tensor target_lengths = Tensor::from_vector<int64_t>({batch}, {2, 2, 2, 3, 2, 0, 1});
  const Case c{"none", {.reduction = Reduction::None}};
  const std::vector<Tensor> inputs = {log_probs, targets, input_lengths, target_lengths};
  auto model = build(c, inputs, Identity());
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto run = run_on("reference", model->graph(), inputs);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> want = {
      ctc_by_enumeration(log_probs, 0, {1, 2}, 4),
      ctc_by_enumeration(log_probs, 1, {1, 1}, 4),  // the skip rule: 1, blank, 1 at least
      inf,                                           // label 7 of 3 classes
      inf,                                           // target length 3 of S = 2
      ctc_by_enumeration(log_probs, 4, {1, 2}, 4),  // input length 9 of T = 4
      0,                                             // no frames, empty target
      ctc_by_enumeration(log_probs, 6, {2}, 3),
  };
  const std::vector<double> got = run->outputs[0].to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t n = 0; n < want.size(); ++n) {
    if (std::isinf(want[n])) {
      EXPECT_EQ(got[n], inf) << "sample " << n;
    } else {
      EXPECT_NEAR(got[n], want[n], 1e-12 * (1 + std::abs(want[n]))) << "sample " << n;
    }
  }
}

/// The gradient graph (the forward loop and its reverse) compiled for the CPU runs no op
/// through the interpreter, and lowered for the GPU (PTX, no device needed) it has a CUDA
/// kernel for every op, in the loops' bodies too.
TEST(Ctc, CompilesWithoutHostFallbacks) {
  const Case c = cases()[0];
  auto model = build(c, inputs_of(c, /*f64=*/false));
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  StatusOr<Graph> grad = gradient_graph(model->graph(), 0, {"x"}, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  for (const char* name : {"cpu", "cuda"}) {
    const codegen::Target* target = *codegen::find_target(name);
    Graph g = *grad;
    ASSERT_TRUE(target->pipeline({}).run(g).ok()) << name;
    auto lowered = target->lower(g);
    ASSERT_TRUE(lowered.ok()) << name << ": " << lowered.error().to_string();
    ASSERT_EQ(lowered->program.bodies.size(), 2u) << name << ": the loop and its gradient";
    if (std::string(name) == "cuda") {
      Status device_only = cuda::check_device_only(lowered->program);
      EXPECT_TRUE(device_only.ok()) << device_only.error().to_string();
    } else {
      auto ex = target->compile(g, {.bind = {.num_threads = 1}});
      ASSERT_TRUE(ex.ok()) << ex.error().to_string();
      EXPECT_EQ((*ex)->fallbacks(), 0) << (*ex)->describe();
    }
  }
}

// ---- User errors, messages pinned.

/// The error of building CTCLoss(options) on log_probs `lp`, targets `targets` and
/// lengths of type `input_lengths` / `target_lengths`.
std::string error_of(Type lp, Type targets, Type input_lengths, Type target_lengths,
                     loss::CtcOptions options = {}) {
  return testing::build_error(ctc_flow(Identity(), CTCLoss(options)),
                              {{"x", lp},
                               {"targets", targets},
                               {"input_lengths", input_lengths},
                               {"target_lengths", target_lengths}});
}

std::string error_of(Type lp, Type targets, loss::CtcOptions options = {}) {
  return error_of(lp, targets, i64({2}), i64({2}), options);
}

TEST(CtcErrors, LogProbsRank) {
  EXPECT_NE(error_of(f32({6, 5}), i64({2, 3}))
                .find("error: ctc: log_probs must be an f32 or f64 [T, N, C] tensor (frames, "
                      "batch, classes; log_softmax over C), got f32[6,5]"),
            std::string::npos);
}

TEST(CtcErrors, LogProbsF32OrF64) {
  EXPECT_NE(error_of(i64({6, 2, 5}), i64({2, 3}))
                .find("error: ctc: log_probs must be an f32 or f64 [T, N, C] tensor"),
            std::string::npos);
  EXPECT_NE(error_of(Type{DType::f16, Shape({6, 2, 5})}, i64({2, 3})).find("got f16[6,2,5]"),
            std::string::npos);
}

TEST(CtcErrors, BlankInRange) {
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({2, 3}), {.blank = 5})
                .find("error: ctc: blank must be a class of log_probs f32[6,2,5], in [0, 5), "
                      "got 5"),
            std::string::npos);
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({2, 3}), {.blank = -1}).find("in [0, 5), got -1"),
            std::string::npos);
}

TEST(CtcErrors, TargetsPaddedIndices) {
  EXPECT_NE(error_of(f32({6, 2, 5}), f32({2, 3}))
                .find("error: ctc: targets must be i64 class indices [N, S] with N = 2 (one "
                      "padded row per sample of log_probs f32[6,2,5]), got f32[2,3]; PyTorch's "
                      "1-D concatenated targets are not taken: pad them"),
            std::string::npos);
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({5})).find("got i64[5]; PyTorch's 1-D"),
            std::string::npos);
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({3, 3})).find("with N = 2"), std::string::npos);
}

TEST(CtcErrors, TargetsLongerThanInput) {
  EXPECT_NE(error_of(f32({4, 2, 5}), i64({2, 6}))
                .find("error: ctc: targets i64[2,6] hold up to S = 6 labels per sample, but "
                      "log_probs f32[4,2,5] has only T = 4 frames, and a target cannot be "
                      "longer than its input; pad targets to at most T columns"),
            std::string::npos);
}

TEST(CtcErrors, TargetsWithoutColumns) {
  EXPECT_NE(error_of(f32({4, 2, 5}), i64({2, 0}))
                .find("error: ctc: targets i64[2,0] need at least one column"),
            std::string::npos);
}

TEST(CtcErrors, Lengths) {
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({2, 3}), i64({3}), i64({2}))
                .find("error: ctc: input_lengths must be i64[2] (one per sample of log_probs "
                      "f32[6,2,5]), got i64[3]"),
            std::string::npos);
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({2, 3}), i64({2}), f32({2}))
                .find("error: ctc: target_lengths must be i64[2] (one per sample of log_probs "
                      "f32[6,2,5]), got f32[2]"),
            std::string::npos);
}

TEST(CtcErrors, BatchMean) {
  EXPECT_NE(error_of(f32({6, 2, 5}), i64({2, 3}), {.reduction = Reduction::BatchMean})
                .find("error: ctc: reduction 'batchmean' is only defined for kl_div; use mean, "
                      "sum or none"),
            std::string::npos);
}

TEST(CtcErrors, FourInputsNeeded) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(Identity()).input({"targets"}).through(CTCLoss()).uses({"targets"});
  EXPECT_EQ(testing::build_error(b, {{"x", f32({6, 2, 5})}, {"targets", i64({2, 3})}}),
            kFile + ":" + std::to_string(line) +
                ":68: error: CTCLoss(mean) takes four inputs, log_probs (the stream), then "
                "targets, input_lengths and target_lengths from uses({...}), but 2 were given "
                "[in CTCLoss(mean)]");
}

}  // namespace losses_ctc_test
}  // namespace
}  // namespace weft

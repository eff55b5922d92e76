// NAME_test of an AOT model target (tools/aot/weft.bzl): the model compiled ahead of time
// and the same model source compiled by the JIT Trainer, with the options the generator
// recorded in the table, give the same losses for the same seed (on the cpu backend bit
// for bit at every one of 30 steps; on cuda to 1e-6 over 100), the same eval outputs,
// and checkpoints that load into each other. A model compiled for cuda is compared with
// Trainer{.backend = "cuda"}; without a GPU every test skips, naming why.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "training/aot/compiled_model.h"
#include "formats/safetensors.h"
#include "training/derived_state.h"
#include "training/step_inputs.h"
#include "tools/aot/batches.h"
#include "tools/aot/model.h"
#include "tools/aot/options.h"

namespace weft::aot {
namespace {

constexpr uint64_t kSeed = 7;
constexpr int kThreads = 2;  // both paths on the same thread count: bitwise-stable steps

/// Whether the two models' losses must be equal bit for bit: on the cpu backend the AOT
/// step and the JIT step are the same kernels on the same threads (every model's 100
/// steps were, before the run was cut to 30); elsewhere (cuda's library calls) 1e-6.
bool bitwise(const CompiledModel& aot) { return aot.table().backend == "cpu"; }

/// Steps compared by SameLossesStepForStepAndSameEvalOutputs: 30 where every step is
/// compared bit for bit (the batches cycle through 10 seeds: each seen 3 times), else 100.
int compared_steps(const CompiledModel& aot) { return bitwise(aot) ? 30 : 100; }

/// The AOT model's loss `a` is the JIT Trainer's `j` (bitwise, or to 1e-6 relative).
void expect_same_loss(const CompiledModel& aot, double a, double j, const std::string& where) {
  if (bitwise(aot)) {
    EXPECT_EQ(a, j) << where << ": the cpu backend's losses differ";
  } else {
    EXPECT_NEAR(a, j, 1e-6 * std::max(1.0, std::abs(j))) << where;
  }
}

struct Pair {
  std::unique_ptr<CompiledModel> aot;
  std::unique_ptr<Trainer> jit;
  ModelSource source;
  int64_t classes = 0;
};

std::vector<std::string> split(const std::string& flags) {
  std::istringstream in(flags);
  std::vector<std::string> out;
  for (std::string s; in >> s;) out.push_back(s);
  return out;
}

Pair make_pair_of_models() {
  Pair p;
  StatusOr<std::unique_ptr<driver::Trainable>> t = driver::make_compiled_model({.seed = kSeed, .bind = {.num_threads = kThreads}});
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  if (!t.ok()) return p;
  p.aot.reset(dynamic_cast<CompiledModel*>(t->release()));
  StatusOr<CompileOptions> options = parse_compile_options(split(p.aot->table().options));
  EXPECT_TRUE(options.ok()) << options.error().to_string();
  StatusOr<ModelSource> source = weft_model(options->batch, options->dtype);
  EXPECT_TRUE(source.ok()) << source.error().to_string();
  p.source = *source;
  StatusOr<Trainer> jit = Trainer::compile(p.source.net, p.source.inputs, *options->loss_spec(),
                                           *options->optimizer_spec(),
                                           {.seed = kSeed, .backend = p.aot->table().backend,
                                            .bind = {.num_threads = kThreads},
                                            .fuse_attention = options->fuse_attention,
                                            .precision = options->precision});
  EXPECT_TRUE(jit.ok()) << jit.error().to_string();
  p.jit = std::make_unique<Trainer>(std::move(*jit));
  p.classes = p.aot->eval_outputs()[0].type.shape.dims.back();
  return p;
}

std::vector<Tensor> batch(const Pair& p, uint64_t i) {
  if (!p.aot->inference_only()) {
    return random_batch(p.aot->step_inputs(), p.source.token_range, p.classes, 1000 + i % 10);
  }
  // An inference-only model has no step inputs: the JIT step's batch inputs.
  std::vector<driver::TensorSpec> specs;
  const Graph& g = p.jit->step_graph();
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    if (in.kind == InputKind::data && !lr_input_group(name) && name != kStepInput && name != kMomentumInput) {
      specs.push_back({name, g.type(in.value)});
    }
  }
  return random_batch(specs, p.source.token_range, p.classes, 1000 + i % 10);
}

std::vector<Tensor> eval_batch(const Pair& p) {
  std::vector<driver::TensorSpec> specs = p.aot->eval_inputs();
  specs.push_back({"target", Type{DType::i64, {1}}});  // random_batch's last is the target
  std::vector<Tensor> b = random_batch(specs, p.source.token_range, p.classes, 99);
  b.pop_back();
  return b;
}

// Every test starts from a fresh pair of models.
class AotVsJit : public ::testing::Test {
 protected:
  void SetUp() override {
    const Backend* backend = *find_backend(linked_model_table().backend);
    if (backend->unavailable_reason && !backend->unavailable_reason().empty()) {
      GTEST_SKIP() << "model '" << linked_model_table().name << "' was compiled for "
                   << backend->name << ", which this machine cannot run: "
                   << backend->unavailable_reason();
    }
    if (backend->check_program && linked_model_table().step_program) {
      if (Status s = backend->check_program(linked_model_table().step_program()); !s.ok()) {
        GTEST_SKIP() << "the step is not yet runnable on " << backend->name << ": "
                     << s.error().to_string();
      }
    }
    p = make_pair_of_models();
    ASSERT_TRUE(p.aot && p.jit);
  }
  Pair p;
};

// Both models give the same outputs (1e-5) for eval_batch.
void expect_same_eval_outputs(const Pair& p) {
  const std::vector<Tensor> x = eval_batch(p);
  StatusOr<std::vector<Tensor>> a = p.aot->evaluate(x);
  StatusOr<std::vector<Tensor>> j = p.jit->evaluate(x);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(j.ok()) << j.error().to_string();
  ASSERT_EQ(a->size(), j->size());
  for (size_t i = 0; i < a->size(); ++i) {
    std::string why;
    EXPECT_TRUE(all_close((*a)[i], (*j)[i], 1e-5, &why)) << "eval output " << i << ": " << why;
  }
}

TEST_F(AotVsJit, SameInitialValues) {
  const std::map<std::string, Tensor> aot = p.aot->values();
  const std::map<std::string, Tensor>& jit = p.jit->values();
  // Inference-only models have no optimizer slots; everything else is the same.
  EXPECT_EQ(aot.size(), p.aot->inference_only() ? p.jit->model().parameters().size() : jit.size());
  for (const auto& [name, value] : aot) {
    auto it = jit.find(name);
    ASSERT_NE(it, jit.end()) << name;
    EXPECT_TRUE(it->second == value) << name << " differs at initialization";
  }
}

TEST_F(AotVsJit, SameEvalOutputsAtInitialization) {
  expect_same_eval_outputs(p);
}

TEST_F(AotVsJit, SameLossesStepForStepAndSameEvalOutputs) {
  if (p.aot->inference_only()) GTEST_SKIP() << "inference-only: no training step";
  std::vector<double> aot_ms, jit_ms;
  double worst = 0;
  const int steps = compared_steps(*p.aot);
  for (int i = 0; i < steps; ++i) {
    const std::vector<Tensor> b = batch(p, i);
    auto t0 = std::chrono::steady_clock::now();
    StatusOr<double> a = p.aot->step(b);
    auto t1 = std::chrono::steady_clock::now();
    StatusOr<double> j = p.jit->step(b);
    auto t2 = std::chrono::steady_clock::now();
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(j.ok()) << j.error().to_string();
    ASSERT_TRUE(std::isfinite(*a)) << "step " << i;
    expect_same_loss(*p.aot, *a, *j, "step " + std::to_string(i));
    if (HasFailure()) return;  // the first step that differs is the one to read
    worst = std::max(worst, std::abs(*a - *j));
    aot_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    jit_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  EXPECT_EQ(p.aot->steps(), steps);
  std::sort(aot_ms.begin(), aot_ms.end());
  std::sort(jit_ms.begin(), jit_ms.end());
  std::printf("%s: %d steps, largest loss difference %.3g; median step %.3f ms AOT, %.3f ms JIT\n",
              p.aot->table().name.c_str(), steps, worst, aot_ms[steps / 2], jit_ms[steps / 2]);

  expect_same_eval_outputs(p);
}

// A step that takes its momentum as an input (scheduled_momentum): both models fed the
// same changing momentum, as a cycling schedule feeds it, give the same losses.
TEST_F(AotVsJit, SameLossesUnderAChangingMomentum) {
  if (p.aot->inference_only() || !p.aot->takes_momentum()) {
    GTEST_SKIP() << "the step compiles its optimizer's momentum in";
  }
  ASSERT_TRUE(p.jit->optimizer().scheduled_momentum);
  for (int i = 0; i < 20; ++i) {
    const double momentum = 0.5 + 0.45 * std::cos(0.7 * i);
    ASSERT_TRUE(p.aot->set_momentum(momentum).ok());
    ASSERT_TRUE(p.jit->set_momentum(momentum).ok());
    const std::vector<Tensor> b = batch(p, i);
    StatusOr<double> a = p.aot->step(b), j = p.jit->step(b);
    ASSERT_TRUE(a.ok() && j.ok());
    expect_same_loss(*p.aot, *a, *j, "step " + std::to_string(i));
  }
}

TEST_F(AotVsJit, CheckpointsInterchange) {
  const std::string dir = testing::TempDir();
  if (p.aot->inference_only()) {
    // A trained JIT checkpoint loads into the inference-only model (its optimizer
    // slots are ignored), and the model saves what it holds.
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(p.jit->step(batch(p, i)).ok());
    ASSERT_TRUE(p.jit->save(dir + "/jit.safetensors").ok());
    Status s = p.aot->load(dir + "/jit.safetensors", /*partial=*/false).status();
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(p.aot->steps(), 3);
    for (const auto& [name, value] : p.aot->values()) {
      EXPECT_TRUE(value == p.jit->values().at(name)) << name << " not loaded exactly";
    }
    ASSERT_NO_FATAL_FAILURE(expect_same_eval_outputs(p));
    ASSERT_TRUE(p.aot->save(dir + "/aot.safetensors").ok());
    // It has no optimizer slots: into the Trainer, a partial load.
    StatusOr<LoadReport> r = p.jit->load(dir + "/aot.safetensors", {.subgraph = "", .strict = false});
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    return;
  }
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(p.aot->step(batch(p, i)).ok());
  // AOT -> JIT: the Trainer resumes exactly where the AOT model is.
  ASSERT_TRUE(p.aot->save(dir + "/aot.safetensors").ok());
  StatusOr<LoadReport> r = p.jit->load(dir + "/aot.safetensors");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->missing.empty() && r->unexpected.empty());
  EXPECT_EQ(p.jit->steps(), 3);
  // Each labelled subgraph alone, its structure checked against the one the AOT binary
  // wrote (the generator's table holds every subgraph's).
  EXPECT_EQ(p.aot->table().subgraphs.size(), p.jit->model().label_paths().size());
  for (const std::string& path : p.jit->model().label_paths()) {
    StatusOr<LoadReport> sub = p.jit->load(dir + "/aot.safetensors", {.subgraph = path});
    EXPECT_TRUE(sub.ok()) << path << ": " << sub.error().to_string();
  }
  StatusOr<double> a = p.aot->step(batch(p, 3));
  StatusOr<double> j = p.jit->step(batch(p, 3));
  ASSERT_TRUE(a.ok() && j.ok());
  expect_same_loss(*p.aot, *a, *j, "the step after the AOT checkpoint's load");
  // JIT -> AOT, after the JIT model moved on alone.
  ASSERT_TRUE(p.jit->step(batch(p, 4)).ok());
  ASSERT_TRUE(p.jit->save(dir + "/jit.safetensors").ok());
  Status s = p.aot->load(dir + "/jit.safetensors", /*partial=*/false).status();
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(p.aot->steps(), 5);
  for (const auto& [name, value] : p.jit->values()) {
    EXPECT_TRUE(*p.aot->value(name) == value) << name << " not loaded exactly";
  }
}

TEST_F(AotVsJit, FailedLoadChangesNothing) {
  if (p.aot->inference_only()) GTEST_SKIP() << "inference-only: no training step";
  const std::string dir = testing::TempDir();
  ASSERT_TRUE(p.aot->step(batch(p, 0)).ok());
  ASSERT_TRUE(p.aot->save(dir + "/good.safetensors").ok());
  // The same file claiming another architecture.
  StatusOr<SafetensorsFile> f = read_safetensors(dir + "/good.safetensors");
  ASSERT_TRUE(f.ok());
  std::map<std::string, std::string> meta = f->metadata;
  meta.erase(std::string(kSafetensorsChecksumKey));
  meta.erase(std::string(kSafetensorsMetadataChecksumKey));
  meta["weft.structural_hash"] = "0123456789abcdef";
  ASSERT_TRUE(write_safetensors(dir + "/other.safetensors", f->tensors, meta).ok());
  ASSERT_TRUE(p.aot->step(batch(p, 1)).ok());
  const std::map<std::string, Tensor> before = p.aot->values();
  Status s = p.aot->load(dir + "/other.safetensors", /*partial=*/false).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("checkpoint is of a different architecture: structural hash "
                               "0123456789abcdef in the checkpoint"),
            std::string::npos)
      << s.to_string();
  // The command-line remedy, without --batch: a compiled model's batch size is compiled in.
  const std::string hint =
      " for this model; nothing was loaded: on the command line, resume with the model and options the "
      "checkpoint was saved with";
  EXPECT_EQ(s.to_string().substr(s.to_string().size() - std::min(s.to_string().size(), hint.size())), hint);
  // No hint to set LoadOptions::subgraph: a compiled model has no such option.
  EXPECT_EQ(s.to_string().find("subgraph"), std::string::npos) << s.to_string();
  s = p.aot->load(dir + "/missing.safetensors", /*partial=*/false).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(p.aot->steps(), 2);
  for (const auto& [name, value] : p.aot->values()) {
    EXPECT_TRUE(value == before.at(name)) << name << " changed by a failed load";
  }
}

// A mixed-precision step keeps its weights' low-precision copies as state
// (passes/weight_copies.h), derived again whenever a parameter changes outside the step
// (training/derived_state.h): the AOT model, which keeps them, and a JIT Trainer that
// casts every weight in every step (TrainOptions::weight_copies = false) give the same
// losses bit for bit — from creation, after set_value, a load and a failed load.
TEST_F(AotVsJit, WeightCopiesChangeNoNumber) {
  if (p.aot->inference_only() || p.aot->table().precision == DType::f32) {
    GTEST_SKIP() << "no weight copies: an f32 or inference-only model";
  }
  StatusOr<CompileOptions> options = parse_compile_options(split(p.aot->table().options));
  ASSERT_TRUE(options.ok()) << options.error().to_string();
  StatusOr<Trainer> cast = Trainer::compile(p.source.net, p.source.inputs, *options->loss_spec(),
                                            *options->optimizer_spec(),
                                            {.seed = kSeed, .backend = p.aot->table().backend,
                                             .bind = {.num_threads = kThreads},
                                             .fuse_attention = options->fuse_attention,
                                             .precision = options->precision,
                                             .weight_copies = false});
  ASSERT_TRUE(cast.ok()) << cast.error().to_string();
  int copies = 0;
  for (const ProgramInput& in : p.aot->step_executor()->program().inputs) {
    copies += weight_copy_source(in.name).has_value();
  }
  EXPECT_GT(copies, 0) << "the AOT step keeps no weight copies";
  auto same_losses = [&](int from, int to, const std::string& after) {
    for (int i = from; i < to; ++i) {
      const std::vector<Tensor> b = batch(p, i);
      StatusOr<double> a = p.aot->step(b), c = cast->step(b);
      ASSERT_TRUE(a.ok() && c.ok());
      EXPECT_EQ(*a, *c) << "step " << i << " after " << after;
    }
  };
  same_losses(0, 5, "create");
  const std::string path = testing::TempDir() + "/copies.safetensors";
  ASSERT_TRUE(p.aot->save(path).ok());
  same_losses(5, 7, "save");
  std::string weight;  // the first float parameter, scaled on both
  for (const ParamInfo& info : cast->model().parameters()) {
    if (info.kind == InputKind::param && is_floating(cast->values().at(info.name).dtype())) {
      weight = info.name;
      break;
    }
  }
  Tensor w = cast->values().at(weight);
  for (int64_t k = 0; k < w.numel(); ++k) w.set_double(k, 1.5 * w.get_double(k));
  ASSERT_TRUE(p.aot->set_value(weight, w).ok());
  ASSERT_TRUE(cast->set_value(weight, w).ok());
  same_losses(7, 9, "set_value");
  ASSERT_TRUE(p.aot->load(path, /*partial=*/false).ok());
  ASSERT_TRUE(cast->load(path).ok());
  same_losses(9, 11, "load");
  ASSERT_FALSE(p.aot->load(testing::TempDir() + "/missing.safetensors", /*partial=*/false).ok());
  same_losses(11, 13, "a failed load");
}

TEST_F(AotVsJit, WrongBatchIsAnError) {
  StatusOr<double> loss = p.aot->step({});
  ASSERT_FALSE(loss.ok());
  if (p.aot->inference_only()) {
    EXPECT_EQ(loss.error().message, "model '" + p.aot->table().name +
                                        "' was compiled inference-only; it has no training step");
  } else {
    EXPECT_EQ(loss.error().message, "step(...) takes " +
                                        std::to_string(p.aot->step_inputs().size()) +
                                        " tensors, got 0");
  }
  StatusOr<std::vector<Tensor>> out = p.aot->evaluate({});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "evaluate(...) takes " +
                                     std::to_string(p.aot->eval_inputs().size()) + " tensors, got 0");
}

}  // namespace
}  // namespace weft::aot

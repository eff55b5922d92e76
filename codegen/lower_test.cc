// Lowering to a Program: golden listings, kernel counts and arena bytes on small graphs,
// every fused group of a training step against the reference interpreter, and whole
// graphs run through the compiled backend against the reference.
#include "codegen/lower.h"

#include <gtest/gtest.h>

#include <random>

#include "codegen/cpu_backend.h"
#include "codegen/kernel_test_util.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/infer_types.h"

namespace weft::codegen {
namespace {

Graph parse(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  InferTypesPass infer;
  EXPECT_TRUE(infer.run(*g).ok());
  return std::move(*g);
}

TEST(LowerTest, GoldenProgramOfALinearLayer) {
  Graph g = parse(R"(graph @f(%x: f32[4,6], %w: f32[5,6] {param}, %b: f32[5] {param}, %lr: f32[]) {
  %wt = transpose(%w) {perm=[1,0]}
  %h = matmul(%x, %wt)
  %hb = add(%h, %b)
  %y = relu(%hb)
  %s = sum(%y)
  %gw = mul(%w, %lr)
  %w1 = sub(%w, %gw)
  assign(%w, %w1)
  return %s
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(l->program.to_string(),
            "program @f  arena 192 bytes (bound 192, naive 192)\n"
            "  inputs: %x f32[4,6] data @in0, %w f32[5,6] param @in1, %b f32[5] param @in2, "
            "%lr f32[] data @in3\n"
            "  0  matmul  arena+0 f32[4,5] <- in0 f32[4,6], in1 f32[5,6]  ; %h\n"
            "  1  generated k0  arena+128 f32[] <- arena+0 f32[4,5], in2 f32[5]  ; %s\n"
            "  2  generated k1  in1 f32[5,6] <- in1 f32[5,6], in3 f32[]  ; %w1\n"
            "  outputs: arena+128 f32[]\n");
  ASSERT_EQ(l->program.kernels.size(), 2u);
  // add, relu and sum are one reduction kernel: one row of all 20 elements (the GEMM's
  // epilogue gives its chain back to the reduction that reads it).
  EXPECT_EQ(l->program.kernels[0].rows, 1);
  EXPECT_EQ(l->program.kernels[0].row_length, 20);
  // The update is written in place: nothing to copy after the step.
  EXPECT_TRUE(l->program.updates.empty());
}

// The training step of a small MLP with Adam: counts after fusion and planning (golden),
// and every fused group computes what the reference interpreter computes.
TEST(LowerTest, TrainingStepOfAnMlp) {
  auto net = FlowBuilder::from(Linear(12, 16)).through(GELU()).through(Linear(16, 5)).build();
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), OptimizerSpec::adam(),
                                  {.backend = "reference"});
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  StatusOr<Lowering> l = lower_to_program(trainer->step_graph());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const Program& p = l->program;
  int generated = 0, library = 0, contraction = 0;
  for (const Invocation& inv : p.code) {
    generated += inv.kind == Invocation::Kind::generated;
    library += inv.kind == Invocation::Kind::library;
    contraction += inv.kind == Invocation::Kind::contraction;
  }
  std::printf("%s", p.to_string().c_str());
  EXPECT_EQ(generated, 8);  // each Adam update is one kernel with three results
  // Both forward layers with their bias (and gelu) and the backward product that gelu's
  // derivative multiplies are GEMMs with an epilogue: three generated kernels (bias
  // adds, the gelu derivative) and three library GEMMs fewer than without epilogues.
  EXPECT_EQ(contraction, 3);
  EXPECT_EQ(library, 21);
  // Identical bodies share one.
  EXPECT_LE(static_cast<int>(p.kernels.size()), generated + contraction);
  EXPECT_EQ(p.arena_bytes, 1984);  // 2176 without epilogues
  EXPECT_EQ(p.arena_bytes, p.lower_bound_bytes);
  EXPECT_TRUE(p.updates.empty());

  std::mt19937_64 rng(3);
  for (const GeneratedKernel& k : p.kernels) {
    std::vector<Tensor> inputs;
    for (const Input& in : k.body.inputs()) {
      inputs.push_back(testing::random_tensor(k.body.type(in.value), rng, -2, 2));
    }
    std::vector<Tensor> jit = testing::run_kernel(k.body, inputs);
    auto ref = reference::run(k.body, inputs);
    ASSERT_TRUE(ref.ok());
    ASSERT_EQ(jit.size(), ref->outputs.size());
    for (size_t o = 0; o < jit.size(); ++o) {
      std::string why;
      EXPECT_TRUE(all_close(jit[o], ref->outputs[o], 1e-6, &why))
          << k.name << " result " << o << ": " << why << "\n" << print_graph(k.body);
    }
  }
}

TEST(LowerTest, RunOnCpuMatchesTheReference) {
  Graph g = parse(R"(graph @f(%x: f32[3,40,33], %y: f32[33,7], %i: i64[5]) {
  %a = tanh(%x)
  %m = matmul(%a, %y)
  %s = softmax(%m) {axis=1}
  %r = reshape(%s) {shape=[120,7]}
  %g = gather(%r, %i) {axis=0}
  %e = exp(%g)
  %t = sum(%e) {axes=[1]}
  return %t, %s
})");
  std::mt19937_64 rng(9);
  std::vector<Tensor> inputs = {testing::random_tensor(g.type(g.inputs()[0].value), rng, -2, 2),
                                testing::random_tensor(g.type(g.inputs()[1].value), rng, -1, 1),
                                Tensor::from_vector<int64_t>({5}, {0, 119, 7, 7, 64})};
  auto cpu = run_on_cpu(g, inputs);
  auto ref = reference::run(g, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  ASSERT_TRUE(ref.ok());
  for (size_t i = 0; i < ref->outputs.size(); ++i) {
    std::string why;
    EXPECT_TRUE(all_close(cpu->outputs[i], ref->outputs[i], 1e-5, &why)) << i << ": " << why;
  }
  // A runtime error carries the op's location, as on the reference backend.
  inputs[2] = Tensor::from_vector<int64_t>({5}, {0, 120, 7, 7, 64});
  auto bad = run_on_cpu(g, inputs);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(), reference::run(g, inputs).error().to_string());
}

TEST(LowerTest, RunOnCpuReportsUpdatesWrittenInPlace) {
  Graph g = parse(R"(graph @f(%w: f32[3] {param}, %g: f32[3]) {
  %w1 = sub(%w, %g)
  assign(%w, %w1)
  %s = sum(%w)
  return %s
})");
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({3}, {1, 2, 3}),
                                Tensor::from_vector<float>({3}, {0.5f, 0.5f, 0.5f})};
  auto cpu = run_on_cpu(g, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  EXPECT_EQ(cpu->outputs[0].get_double(0), 6.0);  // the old value: sum runs before the update
  ASSERT_EQ(cpu->updated.size(), 1u);
  EXPECT_EQ(cpu->updated[0].first, "w");
  EXPECT_EQ(cpu->updated[0].second, Tensor::from_vector<float>({3}, {0.5f, 1.5f, 2.5f}));
}

// Ops with no CPU kernel for their dtypes (f16 here) run through the reference
// interpreter, one invocation at a time, and the executor counts them.
TEST(LowerTest, OpsWithoutACpuKernelFallBackToTheReference) {
  Graph g = parse(R"(graph @f(%x: f16[4,8], %y: f32[8,3]) {
  %e = exp(%x)
  %s = sum(%e) {axes=[0]}
  %c = cast(%s) {dtype=f32}
  %r = reshape(%c) {shape=[1,8]}
  %m = matmul(%r, %y)
  return %m
})");
  std::mt19937_64 rng(5);
  std::vector<Tensor> inputs = {testing::random_tensor(g.type(g.inputs()[0].value), rng, -1, 1),
                                testing::random_tensor(g.type(g.inputs()[1].value), rng, -1, 1)};
  StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ((*ex)->fallbacks(), 3);  // exp, sum and cast on f16
  EXPECT_NE((*ex)->describe().find("reference exp (no CPU kernel)"), std::string::npos)
      << (*ex)->describe();
  auto cpu = run_on_cpu(g, inputs);
  auto ref = reference::run(g, inputs);
  ASSERT_TRUE(cpu.ok() && ref.ok());
  std::string why;
  EXPECT_TRUE(all_close(cpu->outputs[0], ref->outputs[0], 1e-6, &why)) << why;
}

TEST(LowerTest, WrongInputTypesAreNamed) {
  Graph g = parse("graph @f(%x: f32[3]) {\n  %y = neg(%x)\n  return %y\n}");
  auto r = run_on_cpu(g, {Tensor(Type{DType::f32, {4}})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "error: input %x of program @f is f32[3], but the value given is f32[4]");
  auto n = run_on_cpu(g, {});
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().to_string(), "error: graph @f takes 1 inputs, got 0");
}

}  // namespace
}  // namespace weft::codegen

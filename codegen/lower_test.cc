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
#include "ir/fused_kind.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/infer_types.h"

namespace weft::codegen {
namespace {
namespace lower_test {  // this file's names, apart in its package's unity test

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
  // The forward layers with their bias (and gelu) and the backward product that gelu's
  // derivative multiplies are GEMMs with an epilogue (fuse-contraction-epilogue); the
  // softmax of cross_entropy's gradient is in a row kernel; the Adam update of all four
  // parameters is ONE kernel with three results (new p, m, v) over flat ranges of
  // 192 + 16 + 80 + 16 = 304 elements (each parameter rounded up to 16), instead of one
  // kernel per parameter (passes/merge_updates.h).
  EXPECT_EQ(generated, 5);
  EXPECT_EQ(contraction, 3);
  EXPECT_EQ(library, 20);
  EXPECT_LE(static_cast<int>(p.kernels.size()), generated + contraction);  // identical bodies share one
  int updates = 0;
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::generated || inv.results[0].space != Space::input) continue;
    ++updates;
    EXPECT_EQ(inv.results.size(), 3u);
    EXPECT_EQ(inv.results[0].type.to_string(), "f32[304]");
  }
  EXPECT_EQ(updates, 1);
  // The parameters lie back to back in the inputs block (likewise each state), and so
  // do their gradients in the arena, at the same element offsets.
  EXPECT_EQ(p.input_offsets[2] - p.input_offsets[1], 192 * 4);
  EXPECT_EQ(p.input_offsets[3] - p.input_offsets[1], 208 * 4);
  EXPECT_EQ(p.input_offsets[4] - p.input_offsets[1], 288 * 4);
  // The gradients live until the merged update at the end of the step.
  EXPECT_EQ(p.arena_bytes, 2816);
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

// The training step of an attention block with layer norm: softmax and layer norm,
// forward and backward, are one row kernel each (fuse-elementwise's row groups; the
// forward ones decomposed by decompose-composites unless that is off), and every row
// kernel computes what the reference interpreter computes.
TEST(LowerTest, AttentionBackwardUsesRowKernels) {
  auto net = FlowBuilder::from(Identity()).also(MultiheadAttention(16, 2)).through(LayerNorm(16)).build();
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {2, 6, 16}}}}, LossSpec::mse(),
                                  OptimizerSpec::sgd(0.1), {.backend = "reference"});
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  StatusOr<Lowering> l = lower_to_program(trainer->step_graph());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const Program& p = l->program;
  int row_invocations = 0;
  for (const Invocation& inv : p.code) {
    row_invocations += inv.kind == Invocation::Kind::generated &&
                       p.kernels[inv.kernel].kind == FusedKind::row;
  }
  // Softmax forward and backward (decompose-composites decomposes the forward one); layer
  // norm forward and backward are one kernel with the residual add and mse's gradient
  // (its forward values leave through the mse library kernel, which does not lead back).
  EXPECT_EQ(row_invocations, 3) << p.to_string();
  LowerOptions library;
  library.decompose_composites = false;
  StatusOr<Lowering> composite = lower_to_program(trainer->step_graph(), library);
  ASSERT_TRUE(composite.ok()) << composite.error().to_string();
  int softmax = 0;
  for (const Invocation& inv : composite->program.code) {
    softmax += inv.kind == Invocation::Kind::library && inv.node.op == Op::Softmax;
  }
  EXPECT_EQ(softmax, 1);
  std::mt19937_64 rng(5);
  for (const GeneratedKernel& k : p.kernels) {
    if (k.kind != FusedKind::row) continue;
    std::vector<Tensor> inputs;  // Positive: a scalar operand may be layer norm's eps.
    for (const Input& in : k.body.inputs()) {
      inputs.push_back(testing::random_tensor(k.body.type(in.value), rng, 0.1, 2));
    }
    testing::expect_matches_reference(k.body, inputs, 2e-6);
  }
}

// Random graphs of row computations (elementwise ops on [R,C] and per-row [R,1] values,
// keepdims row reductions, column sums, several outputs; f32 and f64): after lowering the graph
// verifies (acyclic, in order) and the compiled run matches the reference interpreter.
TEST(LowerTest, RandomRowGraphsMatchTheReference) {
  std::mt19937_64 rng(12345);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int row_kernels = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t rows = 2 + pick(4), cols = std::vector<int64_t>{7, 16, 33}[pick(3)];
    const DType d = trial % 2 ? DType::f32 : DType::f64;
    const Type full{d, {rows, cols}}, row{d, {rows, 1}};
    Graph g("random");
    std::vector<ValueId> fulls = {g.add_input("x", full), g.add_input("y", full)};
    std::vector<ValueId> per_row = {g.add_input("r", row)};
    const ValueId gain = g.add_input("w", Type{d, {cols}});
    std::vector<ValueId> all;
    for (int k = 0; k < 14; ++k) {
      const int kind = static_cast<int>(pick(6));
      if (kind == 0) {  // A row reduction.
        const Op op = std::vector<Op>{Op::Sum, Op::Mean, Op::Max}[pick(3)];
        per_row.push_back(g.add_node(op, {fulls[pick(fulls.size())]},
                                     {{"axes", IntList{1}}, {"keepdims", true}}, {}, row));
        all.push_back(per_row.back());
      } else if (kind == 1) {  // A per-row op.
        const Op op = std::vector<Op>{Op::Tanh, Op::Neg, Op::Sigmoid}[pick(3)];
        per_row.push_back(g.add_node(op, {per_row[pick(per_row.size())]}, {}, {}, row));
        all.push_back(per_row.back());
      } else if (kind == 2) {  // A column sum broadcast back (not a row reduction).
        const ValueId c = g.add_node(Op::Sum, {fulls[pick(fulls.size())]},
                                     {{"axes", IntList{0}}, {"keepdims", true}}, {}, Type{d, {1, cols}});
        fulls.push_back(g.add_node(Op::Mul, {fulls[pick(fulls.size())], c}, {}, {}, full));
        all.push_back(fulls.back());
      } else {  // A full-shape op on full, per-row or gain operands.
        const Op op = std::vector<Op>{Op::Add, Op::Sub, Op::Mul, Op::Maximum}[pick(4)];
        const ValueId a = fulls[pick(fulls.size())];
        const ValueId b = kind == 3 ? per_row[pick(per_row.size())] : kind == 4 ? gain : fulls[pick(fulls.size())];
        fulls.push_back(g.add_node(op, {a, b}, {}, {}, full));
        if (pick(3) == 0) fulls.back() = g.add_node(Op::Tanh, {fulls.back()}, {}, {}, full);
        all.push_back(fulls.back());
      }
    }
    for (size_t k = all.size() - 3; k < all.size(); ++k) g.add_output(all[k]);
    if (pick(2) == 0) g.add_output(all[pick(all.size())]);
    std::vector<Tensor> inputs;
    for (const Input& in : g.inputs()) inputs.push_back(testing::random_tensor(g.type(in.value), rng, -1, 1));
    SCOPED_TRACE(print_graph(g));
    StatusOr<Lowering> l = lower_to_program(g);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    ASSERT_TRUE(verify(l->graph).ok()) << print_graph(l->graph);
    for (const GeneratedKernel& k : l->program.kernels) {
      // The kind carried from the fused node is the one the body's structure has.
      EXPECT_EQ(body_fused_kind(k.body), std::optional<FusedKind>(k.kind)) << print_graph(k.body);
      row_kernels += k.kind == FusedKind::row;
    }
    auto cpu = run_on_cpu(g, inputs);
    auto ref = reference::run(g, inputs);
    ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
    ASSERT_TRUE(ref.ok()) << ref.error().to_string();
    for (size_t o = 0; o < ref->outputs.size(); ++o) {
      std::string why;
      EXPECT_TRUE(all_close(cpu->outputs[o], ref->outputs[o], d == DType::f32 ? 1e-5 : 1e-9, &why))
          << "output " << o << ": " << why << "\n" << print_graph(l->graph);
    }
  }
  EXPECT_GT(row_kernels, 20);  // The trials do exercise row kernels.
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

// Ops with no CPU kernel for their dtypes (integer pow here) run through the reference
// interpreter, one invocation at a time, and the executor counts them.
TEST(LowerTest, OpsWithoutACpuKernelFallBackToTheReference) {
  // Integer pow has no CPU kernel (its negative exponents are the reference's error);
  // the f16 exp, cast and sum around it are generated kernels (issue #30).
  Graph g = parse(R"(graph @f(%x: i32[4,8], %h: f16[4,8], %y: f32[8,3]) {
  %p = pow(%x, %x)
  %e = exp(%h)
  %c = cast(%p) {dtype=f16}
  %a = add(%e, %c)
  %s = sum(%a) {axes=[0]}
  %f = cast(%s) {dtype=f32}
  %r = reshape(%f) {shape=[1,8]}
  %m = matmul(%r, %y)
  return %m
})");
  std::mt19937_64 rng(5);
  std::vector<Tensor> inputs = {testing::random_tensor(g.type(g.inputs()[0].value), rng, 1, 3),
                                testing::random_tensor(g.type(g.inputs()[1].value), rng, -1, 1),
                                testing::random_tensor(g.type(g.inputs()[2].value), rng, -1, 1)};
  StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ((*ex)->fallbacks(), 1) << (*ex)->describe();  // pow on i32
  EXPECT_NE((*ex)->describe().find("reference pow (no CPU kernel)"), std::string::npos)
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

}  // namespace lower_test
}  // namespace
}  // namespace weft::codegen

// fuse-elementwise on f16/bf16 graphs (passes/fuse_elementwise.h): widening casts copied
// into each user's kernel, lone half reductions as kernels (FuseOptions::
// lone_half_reductions), and a bf16 training step fused bitwise as before. The pass's
// other tests: fuse_elementwise_test.cc, fuse_elementwise_rows_test.cc.
#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "passes/decompose_composites.h"
#include "passes/fuse_elementwise.h"
#include "passes/pass_testing.h"
#include "passes/step_testing.h"

namespace weft {
namespace {

// A widening cast read only by kernels is recomputed in each: they load the bf16 value
// (no f32 copy stored).
TEST(FuseElementwiseTest, WideningCastsAreCopiedIntoEachUsersKernel) {
  // Half dtypes too (as codegen's predicate on the CPU).
  FuseElementwisePass pass(FuseOptions{.fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  }});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8,16]) {
  %w = cast(%h) {dtype=f32} : f32[8,16]
  %a = exp(%w) : f32[8,16]
  %s = sum(%w) {axes=[0]} : f32[16]
  return %a, %s
})"),
            R"(graph @f(%h: bf16[8,16]) -> (f32[8,16], f32[16]) {
  %a = fused(%h) : f32[8,16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = exp(%t0) : f32[8,16]
      return %t1
  })
  %s = fused(%h) {kind="reduction"} : f32[16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = sum(%t0) {axes=[0]} : f32[16]
      return %t1
  })
  return %a, %s
}
)");
  // A library user (matmul) keeps the cast as it was: it leaves its first user's kernel
  // as one more result, the sum stays the library's.
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8,16], %v: f32[16,4]) {
  %w = cast(%h) {dtype=f32} : f32[8,16]
  %a = exp(%w) : f32[8,16]
  %s = sum(%w) {axes=[0]} : f32[16]
  %m = matmul(%w, %v) : f32[8,4]
  return %a, %s, %m
})"),
            R"(graph @f(%h: bf16[8,16], %v: f32[16,4]) -> (f32[8,16], f32[16], f32[8,4]) {
  %a, %w = fused(%h) : f32[8,16], f32[8,16] ({
    ^body(%0: bf16[8,16]):
      %t0 = cast(%0) {dtype=f32} : f32[8,16]
      %t1 = exp(%t0) : f32[8,16]
      return %t1, %t0
  })
  %s = sum(%w) {axes=[0]} : f32[16]
  %m = matmul(%w, %v) : f32[8,4]
  return %a, %s, %m
}
)");
  // A narrowing cast is never copied: it is computed once, in its first user's kernel,
  // which its second user joins, reading nothing else (FuseOptions::merge_parts).
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%h: bf16[8], %x: f32[8]) {
  %w = cast(%h) {dtype=f32} : f32[8]
  %a = exp(%w) : f32[8]
  %b = neg(%w) : f32[8]
  %n = cast(%x) {dtype=bf16} : bf16[8]
  %c = neg(%n) : bf16[8]
  %d = abs(%n) : bf16[8]
  return %a, %b, %c, %d
})"),
            R"(graph @f(%h: bf16[8], %x: f32[8]) -> (f32[8], f32[8], bf16[8], bf16[8]) {
  %a = fused(%h) : f32[8] ({
    ^body(%0: bf16[8]):
      %t0 = cast(%0) {dtype=f32} : f32[8]
      %t1 = exp(%t0) : f32[8]
      return %t1
  })
  %b = fused(%h) : f32[8] ({
    ^body(%0: bf16[8]):
      %t0 = cast(%0) {dtype=f32} : f32[8]
      %t1 = neg(%t0) : f32[8]
      return %t1
  })
  %d, %c = fused(%x) : bf16[8], bf16[8] ({
    ^body(%0: f32[8]):
      %t0 = cast(%0) {dtype=bf16} : bf16[8]
      %t1 = neg(%t0) : bf16[8]
      %t2 = abs(%t0) : bf16[8]
      return %t2, %t1
  })
  return %a, %b, %c, %d
}
)");
}

// A lone reduction of a bf16 (f16) operand becomes a kernel of one with
// FuseOptions::lone_half_reductions (the CPU pipeline's: its library would reduce a
// converted f32 copy), without lone_reductions. An f32 one stays the library's; without
// the option, all three do.
TEST(FuseElementwiseTest, LoneHalfReductionsBecomeKernels) {
  const auto fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  };
  const char* text = R"(graph @f(%g: bf16[8,16], %x: f32[8,16], %h: f16[8,16]) {
  %b = sum(%g) {axes=[0]} : bf16[16]
  %s = sum(%x) {axes=[0]} : f32[16]
  %m = max(%h) {axes=[1]} : f16[8]
  return %b, %s, %m
})";
  FuseElementwisePass without(FuseOptions{.fusible = fusible});
  EXPECT_NE(run_pass_on_text(without, text).find("(no change)"), std::string::npos);
  FuseElementwisePass pass(FuseOptions{.fusible = fusible, .lone_half_reductions = true});
  EXPECT_EQ(run_pass_on_text(pass, text),
            R"(graph @f(%g: bf16[8,16], %x: f32[8,16], %h: f16[8,16]) -> (bf16[16], f32[16], f16[8]) {
  %b = fused(%g) {kind="reduction"} : bf16[16] ({
    ^body(%0: bf16[8,16]):
      %t0 = sum(%0) {axes=[0]} : bf16[16]
      return %t0
  })
  %s = sum(%x) {axes=[0]} : f32[16]
  %m = fused(%h) {kind="reduction"} : f16[8] ({
    ^body(%0: f16[8,16]):
      %t0 = max(%0) {axes=[1]} : f16[8]
      return %t0
  })
  return %b, %s, %m
}
)");
}

// A bf16 step (autocast) with layer norm: its f32 views of bf16 activations are
// recomputed in each kernel that reads them rather than leaving a kernel as extra
// results, and the fused step computes bitwise what the unfused one does.
TEST(FuseElementwiseTest, Bf16TrainingStepRecomputesItsWideningCasts) {
  auto net = FlowBuilder::from(Linear(12, 16))
                 .through(GELU())
                 .through(LayerNorm(16))
                 .through(Linear(16, 5))
                 .build();
  TrainOptions options;
  options.precision = DType::bf16;
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), OptimizerSpec::adam(), options);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  Graph before = trainer->step_graph();
  ASSERT_TRUE(DecomposeCompositesPass().run(before).ok());  // layer norm as primitives
  int shared_casts = 0;  // widening casts read by several nodes: what the test is about
  const std::vector<int> uses = before.use_counts();
  for (const Node& n : before.nodes()) {
    shared_casts += n.op == Op::Cast && before.type(n.operands[0]).dtype == DType::bf16 &&
                    before.type(n.result()).dtype == DType::f32 && uses[n.result()] > 1;
  }
  EXPECT_GT(shared_casts, 0);
  Graph after = before;
  const auto fusible = [](const Graph& g, const Node& n) {
    return n.info().category == OpCategory::Elementwise ||
           g.type(n.operands[0]).dtype == g.type(n.result()).dtype;
  };
  // The CPU's lone_half_reductions.
  FuseElementwisePass pass(FuseOptions{.fusible = fusible, .lone_half_reductions = true});
  ASSERT_TRUE(pass.run(after).ok());
  ASSERT_TRUE(verify(after).ok()) << verify(after).to_string();
  int wide_results = 0;
  for (const Node& n : after.nodes()) {
    if (n.op != Op::Fused) continue;
    for (size_t r = 1; r < n.results.size(); ++r) {  // the extra results
      const Node& made = n.body->node(n.body->value(n.body->outputs()[r]).node);
      wide_results += made.op == Op::Cast && n.body->type(made.operands[0]).dtype == DType::bf16;
    }
  }
  // The logits' f32 view, also read by the library's cross_entropy, is stored once; the
  // layer norm's input and output gradient (3 more without the copies) are not.
  EXPECT_EQ(wide_results, 1);
  // The bf16 bias gradients' column sums are kernels (none left to the library).
  int half_library_reductions = 0, half_kernel_reductions = 0;
  for (const Node& n : after.nodes()) {
    const bool half = !n.operands.empty() && after.type(n.operands[0]).dtype == DType::bf16;
    half_library_reductions += n.info().category == OpCategory::Reduction && half;
    if (n.op == Op::Fused && n.body->nodes().size() == 1) {
      const Node& only = n.body->node(0);
      half_kernel_reductions += only.info().category == OpCategory::Reduction &&
                                n.body->type(only.operands[0]).dtype == DType::bf16;
    }
  }
  EXPECT_EQ(half_library_reductions, 0);
  EXPECT_GT(half_kernel_reductions, 0);
  expect_same_step(before, after);
}

}  // namespace
}  // namespace weft

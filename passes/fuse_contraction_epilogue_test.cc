#include "passes/fuse_contraction_epilogue.h"

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "passes/pass_testing.h"
#include "passes/step_testing.h"

namespace weft {
namespace {

int count_kind(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == Op::Fused && node.str_attr("kind") == kind;
  return n;
}

// A Linear layer + ReLU: one contraction node whose body is the GEMM and its epilogue.
TEST(FuseContractionEpilogueTest, LinearAndReluBecomeOneNode) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,6], %w: f32[5,6], %b: f32[5]) {
  %m = matmul(%x, %w) {transpose_b=true} : f32[8,5]
  %h = add(%m, %b) : f32[8,5]
  %y = relu(%h) : f32[8,5]
  return %y
})"),
            R"(graph @f(%x: f32[8,6], %w: f32[5,6], %b: f32[5]) -> (f32[8,5]) {
  %y = fused(%x, %w, %b) {kind="contraction"} : f32[8,5] ({
    ^body(%0: f32[8,6], %1: f32[5,6], %2: f32[5]):
      %t0 = matmul(%0, %1) {transpose_b=true} : f32[8,5]
      %t1 = add(%t0, %2) : f32[8,5]
      %t2 = relu(%t1) : f32[8,5]
      return %t2
  })
  return %y
}
)");
}

// Values read outside the chain (the product itself, gelu's pre-activation) stay
// results of the fused node; their readers move after it. The chain follows the first
// reader of its tail (gelu here, not the later mul standing for gelu's backward).
TEST(FuseContractionEpilogueTest, ValuesUsedElsewhereBecomeExtraResults) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,3], %w: f32[3,5], %b: f32[5], %k: f32[]) {
  %m = matmul(%x, %w) : f32[4,5]
  %s = sum(%m) : f32[]
  %h = add(%m, %b) : f32[4,5]
  %y = gelu(%h) : f32[4,5]
  %z = mul(%y, %k) : f32[4,5]
  %u = mul(%h, %h) : f32[4,5]
  return %z, %s, %u
})"),
            R"(graph @f(%x: f32[4,3], %w: f32[3,5], %b: f32[5], %k: f32[]) -> (f32[4,5], f32[], f32[4,5]) {
  %z, %m, %h = fused(%x, %w, %b, %k) {kind="contraction"} : f32[4,5], f32[4,5], f32[4,5] ({
    ^body(%0: f32[4,3], %1: f32[3,5], %2: f32[5], %3: f32[]):
      %t0 = matmul(%0, %1) : f32[4,5]
      %t1 = add(%t0, %2) : f32[4,5]
      %t2 = gelu(%t1) : f32[4,5]
      %t3 = mul(%t2, %3) : f32[4,5]
      return %t3, %t0, %t1
  })
  %s = sum(%m) : f32[]
  %u = mul(%h, %h) : f32[4,5]
  return %z, %s, %u
}
)");
}

// A residual x + x·W reads x twice: as the GEMM's operand and as the epilogue's.
TEST(FuseContractionEpilogueTest, AResidualReadsTheGemmOperandAgain) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f64[4,4], %w: f64[4,4]) {
  %m = matmul(%x, %w) : f64[4,4]
  %y = add(%x, %m) : f64[4,4]
  return %y
})"),
            R"(graph @f(%x: f64[4,4], %w: f64[4,4]) -> (f64[4,4]) {
  %y = fused(%x, %w, %x) {kind="contraction"} : f64[4,4] ({
    ^body(%0: f64[4,4], %1: f64[4,4], %2: f64[4,4]):
      %t0 = matmul(%0, %1) : f64[4,4]
      %t1 = add(%2, %t0) : f64[4,4]
      return %t1
  })
  return %y
}
)");
}

// A product feeding m·β + g·(1-β): the other term's producer joins the epilogue, and
// the product stays a result for its other reader.
TEST(FuseContractionEpilogueTest, PrivateProducersOfOtherOperandsJoin) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,3], %d: f32[8,4], %m: f32[3,4], %b: f32[]) {
  %mb = mul(%m, %b) : f32[3,4]
  %g = matmul(%x, %d) {transpose_a=true} : f32[3,4]
  %gb = mul(%g, %b) : f32[3,4]
  %m2 = add(%mb, %gb) : f32[3,4]
  %q = sum(%g) : f32[]
  return %m2, %q
})"),
            R"(graph @f(%x: f32[8,3], %d: f32[8,4], %m: f32[3,4], %b: f32[]) -> (f32[3,4], f32[]) {
  %m2, %g = fused(%x, %d, %m, %b) {kind="contraction"} : f32[3,4], f32[3,4] ({
    ^body(%0: f32[8,3], %1: f32[8,4], %2: f32[3,4], %3: f32[]):
      %t0 = matmul(%0, %1) {transpose_a=true} : f32[3,4]
      %t1 = mul(%2, %3) : f32[3,4]
      %t2 = mul(%t0, %3) : f32[3,4]
      %t3 = add(%t1, %t2) : f32[3,4]
      return %t3, %t0
  })
  %q = sum(%g) : f32[]
  return %m2, %q
}
)");
}

// The pass as the backends run it on half values: every elementwise node fusible (their
// kernel compilers take bf16 and casts; fuse-elementwise's default takes f32 and f64).
FuseContractionEpiloguePass half_pass() {
  return FuseContractionEpiloguePass(ContractionEpilogueOptions{
      .contraction = nullptr,  // the default
      .fusible = [](const Graph&, const Node& n) { return n.info().category == OpCategory::Elementwise; }});
}

// Autodiff's sum of two bf16 cotangents, one of them a bf16 product: each term widened to
// f32, added in f32, rounded once. The widening, the add, the rounding and the other
// term's widening are the GEMM's epilogue (they were a kernel of their own: members had
// to have the product's dtype).
TEST(FuseContractionEpilogueTest, AHalfProductWidenedSummedAndRoundedJoins) {
  FuseContractionEpiloguePass pass = half_pass();
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %o: bf16[8,4]) {
  %m = matmul(%x, %w) : bf16[8,4]
  %mw = cast(%m) {dtype=f32} : f32[8,4]
  %ow = cast(%o) {dtype=f32} : f32[8,4]
  %s = add(%mw, %ow) : f32[8,4]
  %r = cast(%s) {dtype=bf16} : bf16[8,4]
  return %r
})"),
            R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %o: bf16[8,4]) -> (bf16[8,4]) {
  %r = fused(%x, %w, %o) {kind="contraction"} : bf16[8,4] ({
    ^body(%0: bf16[8,3], %1: bf16[3,4], %2: bf16[8,4]):
      %t0 = matmul(%0, %1) : bf16[8,4]
      %t1 = cast(%t0) {dtype=f32} : f32[8,4]
      %t2 = cast(%2) {dtype=f32} : f32[8,4]
      %t3 = add(%t1, %t2) : f32[8,4]
      %t4 = cast(%t3) {dtype=bf16} : bf16[8,4]
      return %t4
  })
  return %r
}
)");
}

// A chain that widens the product and does not round back ends in f32: the runtime
// computes C in the first result's buffer only when the types agree, so C stays a result
// (unread: its buffer, as when the add was a kernel of its own). A member must have the
// product's shape and a float dtype: the compare's bool ends the chain.
TEST(FuseContractionEpilogueTest, AChainEndingInAnotherDtypeKeepsTheProduct) {
  FuseContractionEpiloguePass pass = half_pass();
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %b: f32[4]) {
  %m = matmul(%x, %w) : bf16[8,4]
  %mw = cast(%m) {dtype=f32} : f32[8,4]
  %h = add(%mw, %b) : f32[8,4]
  %p = gt(%h, %b) : bool[8,4]
  return %h, %p
})"),
            R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %b: f32[4]) -> (f32[8,4], bool[8,4]) {
  %h, %m = fused(%x, %w, %b) {kind="contraction"} : f32[8,4], bf16[8,4] ({
    ^body(%0: bf16[8,3], %1: bf16[3,4], %2: f32[4]):
      %t0 = matmul(%0, %1) : bf16[8,4]
      %t1 = cast(%t0) {dtype=f32} : f32[8,4]
      %t2 = add(%t1, %2) : f32[8,4]
      return %t2, %t0
  })
  %p = gt(%h, %b) : bool[8,4]
  return %h, %p
}
)");
}

// A chain that leaves the product's dtype after members of it ends at its last member of
// the product's dtype: a bf16 logits' bias add joins, the cast widening it for the loss
// stays outside (as before casts could join).
TEST(FuseContractionEpilogueTest, AChainEndsAtItsLastMemberOfTheProductsDtype) {
  FuseContractionEpiloguePass pass = half_pass();
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %b: bf16[4]) {
  %m = matmul(%x, %w) : bf16[8,4]
  %h = add(%m, %b) : bf16[8,4]
  %y = cast(%h) {dtype=f32} : f32[8,4]
  return %y
})"),
            R"(graph @f(%x: bf16[8,3], %w: bf16[3,4], %b: bf16[4]) -> (f32[8,4]) {
  %h = fused(%x, %w, %b) {kind="contraction"} : bf16[8,4] ({
    ^body(%0: bf16[8,3], %1: bf16[3,4], %2: bf16[4]):
      %t0 = matmul(%0, %1) : bf16[8,4]
      %t1 = add(%t0, %2) : bf16[8,4]
      return %t1
  })
  %y = cast(%h) {dtype=f32} : f32[8,4]
  return %y
}
)");
}

// A residual x + x·W whose x is computed (a layer norm's output): x's producer is read by
// the GEMM itself, so it must not join the epilogue (it did, and made a cycle).
TEST(FuseContractionEpilogueTest, TheGemmsOwnOperandNeverJoins) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%a: f32[4,4], %s: f32[4], %w: f32[4,4]) {
  %x = mul(%a, %s) : f32[4,4]
  %m = matmul(%x, %w) : f32[4,4]
  %y = add(%x, %m) : f32[4,4]
  return %y
})"),
            R"(graph @f(%a: f32[4,4], %s: f32[4], %w: f32[4,4]) -> (f32[4,4]) {
  %x = mul(%a, %s) : f32[4,4]
  %y = fused(%x, %w, %x) {kind="contraction"} : f32[4,4] ({
    ^body(%0: f32[4,4], %1: f32[4,4], %2: f32[4,4]):
      %t0 = matmul(%0, %1) : f32[4,4]
      %t1 = add(%2, %t0) : f32[4,4]
      return %t1
  })
  return %y
}
)");
}

// An optimizer's update stays whole for fuse-elementwise: the moment written back to the
// state does not join, and the (1-β)·g left as the tail, read only by that update, is
// given back, so nothing fuses.
TEST(FuseContractionEpilogueTest, StateUpdatesStayWithTheElementwiseFuser) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,3], %d: f32[8,4], %m: f32[3,4] {state}, %b: f32[]) {
  %g = matmul(%x, %d) {transpose_a=true} : f32[3,4]
  %gb = mul(%g, %b) : f32[3,4]
  %m2 = add(%m, %gb) : f32[3,4]
  assign(%m, %m2)
  %q = mul(%g, %g) : f32[3,4]
  return %q
})"),
            R"(graph @f(%x: f32[8,3], %d: f32[8,4], %m: f32[3,4] {state}, %b: f32[]) -> (f32[3,4]) {
  %g = matmul(%x, %d) {transpose_a=true} : f32[3,4]
  %gb = mul(%g, %b) : f32[3,4]
  %m2 = add(%m, %gb) : f32[3,4]
  assign(%m, %m2)
  %q = mul(%g, %g) : f32[3,4]
  return %q
}
(no change)
)");
}

// A loop body's carry (ContractionEpilogueOptions::assigned_in_epilogues): a GRU's
// backward dh' = dh·z + dgates·W_hh, assigned to its carry input, joins the GEMM's
// epilogue; without the option (a step's optimizer update) it stays apart. dh·z does not
// join (the kernel would read the carry it writes, which updates_in_place then copies).
TEST(FuseContractionEpilogueTest, AssignedCarriesJoinWhenTheOptionAllows) {
  constexpr char kCarry[] = R"(graph @f(%g: f32[4,12], %w: f32[12,8], %dh: f32[4,8] {state}, %z: f32[4,8]) {
  %p = mul(%dh, %z) : f32[4,8]
  %m = matmul(%g, %w) : f32[4,8]
  %n = add(%p, %m) : f32[4,8]
  assign(%dh, %n)
  return %n
})";
  FuseContractionEpiloguePass kept;
  EXPECT_NE(run_pass_on_text(kept, kCarry).find("(no change)"), std::string::npos);
  ContractionEpilogueOptions loop_body;
  loop_body.assigned_in_epilogues = true;
  FuseContractionEpiloguePass carries(loop_body);
  EXPECT_EQ(run_pass_on_text(carries, kCarry),
            R"(graph @f(%g: f32[4,12], %w: f32[12,8], %dh: f32[4,8] {state}, %z: f32[4,8]) -> (f32[4,8]) {
  %p = mul(%dh, %z) : f32[4,8]
  %n = fused(%g, %w, %p) {kind="contraction"} : f32[4,8] ({
    ^body(%0: f32[4,12], %1: f32[12,8], %2: f32[4,8]):
      %t0 = matmul(%0, %1) : f32[4,8]
      %t1 = add(%2, %t0) : f32[4,8]
      return %t1
  })
  assign(%dh, %n)
  return %n
}
)");
  // A GEMM reading the carry it would write (a tanh RNN's h' = tanh(h·W + x)): apart.
  EXPECT_NE(run_pass_on_text(carries, R"(graph @f(%h: f32[4,8] {state}, %w: f32[8,8], %x: f32[4,8]) {
  %m = matmul(%h, %w) : f32[4,8]
  %a = add(%m, %x) : f32[4,8]
  %n = tanh(%a) : f32[4,8]
  assign(%h, %n)
  return %n
})")
                .find("(no change)"),
            std::string::npos);
}

// Softmax backward's dP·P feeds its row sums: fuse-elementwise computes the product
// inside the reduction's kernel, so the chain gives it back and nothing fuses here.
TEST(FuseContractionEpilogueTest, ATailReadByAReductionIsGivenBack) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[4,8], %v: f32[6,8], %p: f32[4,6]) {
  %dp = matmul(%g, %v) {transpose_b=true} : f32[4,6]
  %q = mul(%dp, %p) : f32[4,6]
  %s = sum(%q) {axes=[1], keepdims=true} : f32[4,1]
  %d = sub(%dp, %s) : f32[4,6]
  return %d
})"),
            R"(graph @f(%g: f32[4,8], %v: f32[6,8], %p: f32[4,6]) -> (f32[4,6]) {
  %dp = matmul(%g, %v) {transpose_b=true} : f32[4,6]
  %q = mul(%dp, %p) : f32[4,6]
  %s = sum(%q) {axes=[1], keepdims=true} : f32[4,1]
  %d = sub(%dp, %s) : f32[4,6]
  return %d
}
(no change)
)");
}

// Nothing fuses across a non-elementwise op (a transpose, a reduction), into a result of
// another shape (a broadcast), or into a node reading something computed from the
// product outside the chain (it would make a cycle).
TEST(FuseContractionEpilogueTest, NothingFusesAcrossOtherOps) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,3], %w: f32[3,4], %c: f32[2,4,4]) {
  %m = matmul(%x, %w) : f32[4,4]
  %t = transpose(%m) {perm=[1,0]} : f32[4,4]
  %r = relu(%t) : f32[4,4]
  %s = sum(%m) {axes=[1], keepdims=true} : f32[4,1]
  %d = sub(%m, %s) : f32[4,4]
  %e = add(%m, %c) : f32[2,4,4]
  return %r, %d, %e
})"),
            R"(graph @f(%x: f32[4,3], %w: f32[3,4], %c: f32[2,4,4]) -> (f32[4,4], f32[4,4], f32[2,4,4]) {
  %m = matmul(%x, %w) : f32[4,4]
  %t = transpose(%m) {perm=[1, 0]} : f32[4,4]
  %r = relu(%t) : f32[4,4]
  %s = sum(%m) {axes=[1], keepdims=true} : f32[4,1]
  %d = sub(%m, %s) : f32[4,4]
  %e = add(%m, %c) : f32[2,4,4]
  return %r, %d, %e
}
(no change)
)");
}

TEST(FuseContractionEpilogueTest, ThePredicatesDecide) {
  FuseContractionEpiloguePass pass(ContractionEpilogueOptions{
      .contraction = [](const Graph&, const Node&) { return true; },
      .fusible = [](const Graph&, const Node& n) { return n.op != Op::Exp; }});
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[2,3], %w: f32[3,2]) {
  %m = matmul(%x, %w) : f32[2,2]
  %e = exp(%m) : f32[2,2]
  %n = neg(%e) : f32[2,2]
  return %n
})"),
            R"(graph @f(%x: f32[2,3], %w: f32[3,2]) -> (f32[2,2]) {
  %m = matmul(%x, %w) : f32[2,2]
  %e = exp(%m) : f32[2,2]
  %n = neg(%e) : f32[2,2]
  return %n
}
(no change)
)");
}

TEST(FuseContractionEpilogueTest, RequiresTypes) {
  FuseContractionEpiloguePass pass;
  EXPECT_EQ(
      run_pass_on_text(pass, "graph @f(%x: f32[3,3]) {\n  %a = matmul(%x, %x)\n  return %a\n}"),
      "test.wir:2:3: error: fuse-contraction-epilogue: %a has no type; run infer-types first");
}

// A training step of an MLP: each forward Linear + activation is one contraction node,
// and the step computes bitwise what the unfused one does on the reference interpreter.
TEST(FuseContractionEpilogueTest, TrainingStepOfAnMlp) {
  auto net = FlowBuilder::from(Linear(12, 16)).through(GELU()).through(Linear(16, 5)).build();
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), OptimizerSpec::adam());
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  const Graph& before = trainer->step_graph();
  Graph after = before;
  FuseContractionEpiloguePass pass;
  ASSERT_TRUE(pass.run(after).ok());
  ASSERT_TRUE(verify(after).ok()) << verify(after).to_string();
  // Both forward layers (bias + gelu; bias), and the backward product gy·W2 that gelu's
  // derivative multiplies; the weight gradients (a transpose follows) have no epilogue.
  EXPECT_EQ(count_kind(after, "contraction"), 3);

  expect_same_step(before, after);
}

}  // namespace
}  // namespace weft

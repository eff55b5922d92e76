#include "passes/decompose_composites.h"

#include <gtest/gtest.h>

#include <random>

#include "passes/fuse_elementwise.h"
#include "passes/infer_types.h"
#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

TEST(DecomposeCompositesTest, SoftmaxBecomesItsPrimitives) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,16]) {
  %y = softmax(%x) {axis=1} : f32[8,16]
  %z = neg(%y) : f32[8,16]
  return %z
})"),
            R"(graph @f(%x: f32[8,16]) -> (f32[8,16]) {
  %0 = max(%x) {axes=[1], keepdims=true} : f32[8,1]
  %1 = sub(%x, %0) : f32[8,16]
  %2 = exp(%1) : f32[8,16]
  %3 = sum(%2) {axes=[1], keepdims=true} : f32[8,1]
  %y = div(%2, %3) : f32[8,16]
  %z = neg(%y) : f32[8,16]
  return %z
}
)");
}

TEST(DecomposeCompositesTest, LogSoftmaxAndLayerNorm) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f64[2,3,4], %w: f64[3,4], %b: f64[3,4]) {
  %n = layer_norm(%x, %w, %b) {axes=[1, 2], eps=0.001} : f64[2,3,4]
  %l = log_softmax(%n) {axis=-1} : f64[2,3,4]
  return %l
})"),
            R"(graph @f(%x: f64[2,3,4], %w: f64[3,4], %b: f64[3,4]) -> (f64[2,3,4]) {
  %0 = mean(%x) {axes=[1, 2], keepdims=true} : f64[2,1,1]
  %1 = sub(%x, %0) : f64[2,3,4]
  %2 = mul(%1, %1) : f64[2,3,4]
  %3 = mean(%2) {axes=[1, 2], keepdims=true} : f64[2,1,1]
  %4 = full() {dtype=f64, shape=[], value=0.001} : f64[]
  %5 = add(%3, %4) : f64[2,1,1]
  %6 = rsqrt(%5) : f64[2,1,1]
  %7 = mul(%1, %6) : f64[2,3,4]
  %8 = mul(%7, %w) : f64[2,3,4]
  %n = add(%8, %b) : f64[2,3,4]
  %9 = max(%n) {axes=[2], keepdims=true} : f64[2,3,1]
  %10 = sub(%n, %9) : f64[2,3,4]
  %11 = exp(%10) : f64[2,3,4]
  %12 = sum(%11) {axes=[2], keepdims=true} : f64[2,3,1]
  %13 = log(%12) : f64[2,3,1]
  %l = sub(%10, %13) : f64[2,3,4]
  return %l
}
)");
}

// A composite in a loop's body is decomposed there (the lowering then hoists its
// constants, layer norm's eps, out of the loop: hoist-loop-invariants runs after this).
TEST(DecomposeCompositesTest, LoopBodiesAreDecomposed) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: f32[8], %b: f32[8], %h0: f32[4,8]) {
  %h = scan(%g, %b, %h0) {carries=1, consts=2, length=3} : f32[4,8] ({
    ^cell(%cg: f32[8], %cb: f32[8], %ch: f32[4,8]):
      %n = layer_norm(%ch, %cg, %cb) {eps=0.001} : f32[4,8]
      return %n
  })
  return %h
})"),
            R"(graph @f(%g: f32[8], %b: f32[8], %h0: f32[4,8]) -> (f32[4,8]) {
  %h = scan(%g, %b, %h0) {carries=1, consts=2, length=3} : f32[4,8] ({
    ^cell(%cg: f32[8], %cb: f32[8], %ch: f32[4,8]):
      %0 = mean(%ch) {axes=[1], keepdims=true} : f32[4,1]
      %1 = sub(%ch, %0) : f32[4,8]
      %2 = mul(%1, %1) : f32[4,8]
      %3 = mean(%2) {axes=[1], keepdims=true} : f32[4,1]
      %4 = full() {dtype=f32, shape=[], value=0.001} : f32[]
      %5 = add(%3, %4) : f32[4,1]
      %6 = rsqrt(%5) : f32[4,1]
      %7 = mul(%1, %6) : f32[4,8]
      %8 = mul(%7, %cg) : f32[4,8]
      %n = add(%8, %cb) : f32[4,8]
      return %n
  })
  return %h
}
)");
}

// A softmax over a leading axis, an f16 one and cross_entropy stay library kernels.
TEST(DecomposeCompositesTest, NoChangeOffTheRow) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4,6], %h: f16[4,6], %t: i64[4]) {
  %y = softmax(%x) {axis=0} : f32[4,6]
  %z = softmax(%h) {axis=1} : f16[4,6]
  %c = cross_entropy(%x, %t) : f32[]
  return %y, %z, %c
})"),
            R"(graph @f(%x: f32[4,6], %h: f16[4,6], %t: i64[4]) -> (f32[4,6], f16[4,6], f32[]) {
  %y = softmax(%x) {axis=0} : f32[4,6]
  %z = softmax(%h) {axis=1} : f16[4,6]
  %c = cross_entropy(%x, %t) : f32[]
  return %y, %z, %c
}
(no change)
)");
}

// softmax over rows of length 0 (or over no rows) is empty: nothing to compute, a `full`
// on every backend. The primitives' max over an empty row is an error (`weftc run` of
// this softmax on the cpu backend said "max: reduction over an empty axis").
TEST(DecomposeCompositesTest, EmptyValuesBecomeFull) {
  const char* text = R"(graph @f(%x: f32[3,0], %w: f32[0], %b: f32[0], %e: f64[0,4]) {
  %s = softmax(%x) {axis=1} : f32[3,0]
  %l = log_softmax(%x) {axis=-1} : f32[3,0]
  %n = layer_norm(%x, %w, %b) {axes=[-1]} : f32[3,0]
  %r = softmax(%e) {axis=0} : f64[0,4]
  return %s, %l, %n, %r
})";
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, text),
            R"(graph @f(%x: f32[3,0], %w: f32[0], %b: f32[0], %e: f64[0,4]) -> (f32[3,0], f32[3,0], f32[3,0], f64[0,4]) {
  %s = full() {dtype=f32, shape=[3, 0], value=0.0} : f32[3,0]
  %l = full() {dtype=f32, shape=[3, 0], value=0.0} : f32[3,0]
  %n = full() {dtype=f32, shape=[3, 0], value=0.0} : f32[3,0]
  %r = full() {dtype=f64, shape=[0, 4], value=0.0} : f64[0,4]
  return %s, %l, %n, %r
}
)");
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(pass.run(*g).ok());
  std::vector<Tensor> inputs;
  for (const Input& in : g->inputs()) inputs.emplace_back(g->type(in.value));
  StatusOr<reference::RunResult> r = reference::run(*g, inputs);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].type(), (Type{DType::f32, Shape({3, 0})}));
}

TEST(DecomposeCompositesTest, RequiresTypes) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, "graph @f(%x: f32[3]) {\n  %a = softmax(%x)\n  return %a\n}"),
            "test.wir:2:3: error: decompose-composites: %a has no type; run infer-types first");
}

// The decomposed graph computes what the composites compute (reference interpreter),
// and the fuser makes the composites and their neighbours one row kernel.
TEST(DecomposeCompositesTest, SameValuesAndOneRowKernel) {
  const char* text = R"(graph @f(%x: f64[6,10], %c: f64[], %w: f64[10], %b: f64[10], %k: f64[6,10]) {
  %s = mul(%x, %c) : f64[6,10]
  %p = softmax(%s) {axis=-1} : f64[6,10]
  %m = mul(%p, %k) : f64[6,10]
  %r = add(%m, %x) : f64[6,10]
  %n = layer_norm(%r, %w, %b) {axes=[-1], eps=1e-05} : f64[6,10]
  %l = log_softmax(%n) {axis=1} : f64[6,10]
  return %l
})";
  StatusOr<Graph> before = parse_graph(text, "test.wir");
  ASSERT_TRUE(before.ok()) << before.error().to_string();
  Graph after = *before;
  DecomposeCompositesPass decompose;
  ASSERT_TRUE(decompose.run(after).ok());
  std::mt19937_64 rng(9);
  std::vector<Tensor> inputs;
  for (const Input& in : before->inputs()) {
    Tensor t(before->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::uniform_real_distribution<double>(-2, 2)(rng));
    inputs.push_back(t);
  }
  auto want = reference::run(*before, inputs);
  auto got = reference::run(after, inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  std::string why;
  EXPECT_TRUE(all_close(got->outputs[0], want->outputs[0], 1e-12, &why)) << why;
  FuseElementwisePass fuse;
  ASSERT_TRUE(fuse.run(after).ok());
  int fused = 0, full = 0;
  for (const Node& node : after.nodes()) {
    fused += node.op == Op::Fused;
    full += node.op == Op::Full;
  }
  // Scale, softmax, mask, residual add, layer norm and log-softmax over the same rows:
  // one row kernel of six passes.
  EXPECT_EQ(fused, 1) << print_graph(after);
  EXPECT_EQ(full, 1);
}

// attention with both masks: the module's primitives (frontend/modules/attention.cc).
TEST(DecomposeCompositesTest, AttentionBecomesTheModulesPrimitives) {
  DecomposeCompositesPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%q: f32[2,3,4], %k: f32[2,5,4], %v: f32[2,5,6], %m: bool[2,1,5]) {
  %y = attention(%q, %k, %v, %m) {scale=0.5, causal=true} : f32[2,3,6]
  return %y
})"),
            R"(graph @f(%q: f32[2,3,4], %k: f32[2,5,4], %v: f32[2,5,6], %m: bool[2,1,5]) -> (f32[2,3,6]) {
  %0 = full() {dtype=f32, shape=[], value=0.5} : f32[]
  %1 = mul(%q, %0) : f32[2,3,4]
  %2 = matmul(%1, %k) {transpose_a=false, transpose_b=true} : f32[2,3,5]
  %3 = full() {dtype=f32, shape=[], value=-inf} : f32[]
  %4 = iota() {axis=1, dtype=i64, shape=[3, 5]} : i64[3,5]
  %5 = iota() {axis=0, dtype=i64, shape=[3, 5]} : i64[3,5]
  %6 = gt(%4, %5) : bool[3,5]
  %7 = select(%6, %3, %2) : f32[2,3,5]
  %8 = select(%m, %3, %7) : f32[2,3,5]
  %9 = max(%8) {axes=[2], keepdims=true} : f32[2,3,1]
  %10 = sub(%8, %9) : f32[2,3,5]
  %11 = exp(%10) : f32[2,3,5]
  %12 = sum(%11) {axes=[2], keepdims=true} : f32[2,3,1]
  %13 = div(%11, %12) : f32[2,3,5]
  %y = matmul(%13, %v) {transpose_a=false, transpose_b=false} : f32[2,3,6]
  return %y
}
)");
}

// attention and its gradient's three results, decomposed, compute what their reference
// kernels compute (each result keeping its name): odd sequence lengths, Sq != Sk, a padding mask broadcast over heads and rows,
// causal or not (every row keeps a key: a row with none is NaN either way).
TEST(DecomposeCompositesTest, AttentionSameValuesAsItsReferenceKernels) {
  for (const char* dtype : {"f64", "f32"}) {
    for (const char* causal : {"false", "true"}) {
      const std::string t = dtype;
      const std::string attrs = std::string("{scale=0.375, causal=") + causal;
      const std::string text = "graph @f(%q: " + t + "[2,3,5,4], %k: " + t + "[2,3,7,4], %v: " + t +
                               "[2,3,7,3], %dy: " + t + "[2,3,5,3], %m: bool[2,1,1,7]) {\n" +
                               "  %y = attention(%q, %k, %v, %m) " + attrs + "}\n" +
                               "  %dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy, %m) " + attrs + "}\n" +
                               "  return %y, %dq, %dk, %dv\n}";
      StatusOr<Graph> before = parse_graph(text, "test.wir");
      ASSERT_TRUE(before.ok()) << before.error().to_string();
      ASSERT_TRUE(InferTypesPass().run(*before).ok());
      Graph after = *before;
      ASSERT_TRUE(DecomposeCompositesPass().run(after).ok());
      ASSERT_TRUE(verify(after).ok()) << verify(after).to_string();
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(after.value(after.outputs()[i]).name, before->value(before->outputs()[i]).name);
      }
      int exps = 0, products = 0;
      for (const Node& node : after.nodes()) {
        EXPECT_NE(node.info().category, OpCategory::Composite) << print_graph(after);
        exps += node.op == Op::Exp;
        products += node.op == Op::Matmul;
      }
      // One problem: its probabilities once (the scores, y), dP and dS once for q and k,
      // then dq, dk, dv.
      EXPECT_EQ(exps, 1) << print_graph(after);
      EXPECT_EQ(products, 6) << print_graph(after);
      std::mt19937_64 rng(5);
      std::vector<Tensor> inputs;
      for (const Input& in : before->inputs()) {
        Tensor x(before->type(in.value));
        for (int64_t i = 0; i < x.numel(); ++i) {
          // Key 0 is never padded: every row keeps a key, causal or not.
          const bool is_mask = x.dtype() == DType::boolean;
          x.set_double(i, is_mask ? (i % 7 != 0 && i % 3 == 1)
                                  : std::uniform_real_distribution<double>(-2, 2)(rng));
        }
        inputs.push_back(x);
      }
      auto want = reference::run(*before, inputs);
      auto got = reference::run(after, inputs);
      ASSERT_TRUE(want.ok() && got.ok());
      for (size_t i = 0; i < 4; ++i) {
        std::string why;
        EXPECT_TRUE(all_close(got->outputs[i], want->outputs[i], t == "f64" ? 1e-12 : 2e-5, &why))
            << dtype << " causal=" << causal << " output " << i << ": " << why;
      }
    }
  }
}

}  // namespace
}  // namespace weft

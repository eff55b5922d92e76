#include "passes/fuse_attention.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "passes/decompose_composites.h"
#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

// The module's form (frontend/modules/attention.cc): q scaled, k transposed, the causal
// mask, then the key padding mask, softmax, the product with v.
constexpr const char* kModuleForm = R"(graph @f(%q: f32[2,4,9,16], %k: f32[2,4,9,16], %v: f32[2,4,9,16], %pad: bool[2,9]) {
  %c = full() {shape=[], value=0.25} : f32[]
  %qs = mul(%q, %c) : f32[2,4,9,16]
  %kt = transpose(%k) {perm=[0, 1, 3, 2]} : f32[2,4,16,9]
  %s = matmul(%qs, %kt) : f32[2,4,9,9]
  %ninf = full() {shape=[], value=-inf} : f32[]
  %row = iota() {shape=[9, 9], axis=0} : i64[9,9]
  %col = iota() {shape=[9, 9], axis=1} : i64[9,9]
  %later = gt(%col, %row) : bool[9,9]
  %s1 = select(%later, %ninf, %s) : f32[2,4,9,9]
  %m = reshape(%pad) {shape=[2, 1, 1, 9]} : bool[2,1,1,9]
  %s2 = select(%m, %ninf, %s1) : f32[2,4,9,9]
  %p = softmax(%s2) {axis=-1} : f32[2,4,9,9]
  %y = matmul(%p, %v) : f32[2,4,9,16]
  return %y
})";

TEST(FuseAttentionTest, TheModulesPatternBecomesOneNode) {
  FuseAttentionPass pass;
  EXPECT_EQ(run_pass_on_text(pass, kModuleForm),
            R"(graph @f(%q: f32[2,4,9,16], %k: f32[2,4,9,16], %v: f32[2,4,9,16], %pad: bool[2,9]) -> (f32[2,4,9,16]) {
  %m = reshape(%pad) {shape=[2, 1, 1, 9]} : bool[2,1,1,9]
  %y = attention(%q, %k, %v, %m) {causal=true, scale=0.25} : f32[2,4,9,16]
  return %y
}
)");
}

// The heads' transposes folded into one (canonicalize): k's own layout is kept, the
// transpose rewritten without the swap. transpose_b, lt(row, col) and no scale: a .wir
// written by hand.
TEST(FuseAttentionTest, FoldedTransposeTransposeBAndLt) {
  FuseAttentionPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%q: f64[2,5,3], %x: f64[2,3,7], %v: f64[2,7,4]) {
  %kt = transpose(%x) {perm=[0, 2, 1]} : f64[2,7,3]
  %s = matmul(%q, %kt) {transpose_b=true} : f64[2,5,7]
  %p = softmax(%s) {axis=2} : f64[2,5,7]
  %y = matmul(%p, %v) : f64[2,5,4]
  %x2 = transpose(%x) {perm=[2, 0, 1]} : f64[7,2,3]
  %kt2 = transpose(%x2) {perm=[1, 2, 0]} : f64[2,3,7]
  %s2 = matmul(%q, %kt2) : f64[2,5,7]
  %ninf = full() {shape=[1, 1], value=-inf, dtype=f64} : f64[1,1]
  %r = iota() {shape=[5, 7], axis=0} : i64[5,7]
  %c = iota() {shape=[5, 7], axis=1} : i64[5,7]
  %later = lt(%r, %c) : bool[5,7]
  %s3 = select(%later, %ninf, %s2) : f64[2,5,7]
  %p2 = softmax(%s3) {axis=-1} : f64[2,5,7]
  %y2 = matmul(%p2, %v) : f64[2,5,4]
  return %y, %y2
})"),
            R"(graph @f(%q: f64[2,5,3], %x: f64[2,3,7], %v: f64[2,7,4]) -> (f64[2,5,4], f64[2,5,4]) {
  %kt = transpose(%x) {perm=[0, 2, 1]} : f64[2,7,3]
  %y = attention(%q, %kt, %v) {causal=false, scale=1.0} : f64[2,5,4]
  %x2 = transpose(%x) {perm=[2, 0, 1]} : f64[7,2,3]
  %kt2 = transpose(%x2) {perm=[1, 0, 2]} : f64[2,7,3]
  %y2 = attention(%q, %kt2, %v) {causal=true, scale=1.0} : f64[2,5,4]
  return %y, %y2
}
)");
}

// What is not the pattern stays: dropout between softmax and the product, the weights
// also returned, an additive mask, a mask kept as select(keep, s, -inf), a softmax over
// another axis, f16 operands.
TEST(FuseAttentionTest, NoChangeOffThePattern) {
  FuseAttentionPass pass;
  const char* text = R"(graph @f(%q: f32[3,4], %k: f32[3,4], %v: f32[3,4], %keep: f32[3,3], %add: f32[3,3], %ok: bool[3,3], %h: f16[3,4]) {
  %kt = transpose(%k) {perm=[1, 0]} : f32[4,3]
  %s = matmul(%q, %kt) : f32[3,3]
  %p = softmax(%s) {axis=-1} : f32[3,3]
  %d = mul(%p, %keep) : f32[3,3]
  %y = matmul(%d, %v) : f32[3,4]
  %s2 = matmul(%q, %k) {transpose_b=true} : f32[3,3]
  %p2 = softmax(%s2) {axis=-1} : f32[3,3]
  %y2 = matmul(%p2, %v) : f32[3,4]
  %s3 = matmul(%q, %k) {transpose_b=true} : f32[3,3]
  %a3 = add(%s3, %add) : f32[3,3]
  %p3 = softmax(%a3) {axis=-1} : f32[3,3]
  %y3 = matmul(%p3, %v) : f32[3,4]
  %s4 = matmul(%q, %k) {transpose_b=true} : f32[3,3]
  %ninf = full() {shape=[], value=-inf} : f32[]
  %m4 = select(%ok, %s4, %ninf) : f32[3,3]
  %p4 = softmax(%m4) {axis=-1} : f32[3,3]
  %y4 = matmul(%p4, %v) : f32[3,4]
  %s5 = matmul(%q, %k) {transpose_b=true} : f32[3,3]
  %p5 = softmax(%s5) {axis=0} : f32[3,3]
  %y5 = matmul(%p5, %v) : f32[3,4]
  %s6 = matmul(%h, %h) {transpose_b=true} : f16[3,3]
  %p6 = softmax(%s6) {axis=-1} : f16[3,3]
  %y6 = matmul(%p6, %h) : f16[3,4]
  return %y, %y2, %p2, %y3, %y4, %y5, %y6
})";
  const std::string out = run_pass_on_text(pass, text);
  EXPECT_EQ(out.find("attention"), std::string::npos) << out;
  EXPECT_NE(out.find("(no change)"), std::string::npos) << out;
}

TEST(FuseAttentionTest, RequiresTypes) {
  FuseAttentionPass pass;
  EXPECT_EQ(run_pass_on_text(pass, "graph @f(%a: f32[3,3]) {\n  %y = matmul(%a, %a)\n  return %y\n}"),
            "test.wir:2:3: error: fuse-attention: %y has no type; run infer-types first");
}

// Fused and written back (decompose-composites), the module's form computes bit for bit
// what it computes decomposed unfused (the CPU's pipeline): the decomposition is the
// primitives the pass matched, softmax's included.
TEST(FuseAttentionTest, FusedThenDecomposedIsBitwiseTheSame) {
  StatusOr<Graph> before = parse_graph(kModuleForm, "test.wir");
  ASSERT_TRUE(before.ok()) << before.error().to_string();
  Graph after = *before;
  ASSERT_TRUE(FuseAttentionPass().run(after).ok());
  Graph decomposed = after;
  ASSERT_TRUE(DecomposeCompositesPass().run(decomposed).ok());
  Graph unfused = *before;
  ASSERT_TRUE(DecomposeCompositesPass().run(unfused).ok());
  std::mt19937_64 rng(3);
  std::vector<Tensor> inputs;
  for (const Input& in : before->inputs()) {
    Tensor t(before->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      // Key 0 never padded: no row loses every key.
      t.set_double(i, t.dtype() == DType::boolean ? (i % 9 != 0 && i % 4 == 1)
                                                  : std::uniform_real_distribution<double>(-2, 2)(rng));
    }
    inputs.push_back(t);
  }
  auto want = reference::run(*before, inputs);
  auto fused = reference::run(after, inputs);
  auto got = reference::run(decomposed, inputs);
  auto unfused_got = reference::run(unfused, inputs);
  ASSERT_TRUE(want.ok() && fused.ok() && got.ok() && unfused_got.ok());
  EXPECT_EQ(got->outputs[0], unfused_got->outputs[0]);
  std::string why;
  EXPECT_TRUE(all_close(fused->outputs[0], want->outputs[0], 1e-5, &why)) << why;
}

}  // namespace
}  // namespace weft

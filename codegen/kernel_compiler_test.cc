// The kernel compiler's structure: row layouts, the structural cache, the emitted MLIR,
// errors, and multi-output and chained bodies compared with the reference interpreter.
// (kernel_ops_test.cc covers every op × dtype.)

#include "codegen/kernel_compiler.h"

#include <thread>

#include "codegen/kernel_test_util.h"
#include "ir/text.h"

namespace weft::codegen {
namespace {

using testing::expect_random_matches;
using testing::op_body;

Graph parse(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "body.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : Graph();
}

RowLayout layout_of(std::vector<Shape> operands) {
  std::vector<Type> types;
  for (Shape& s : operands) types.push_back({DType::f32, std::move(s)});
  return row_layout(op_body(types.size() == 1 ? Op::Neg : Op::Add, types));
}

TEST(RowLayout, CollapsesContiguousAndBroadcastDimensions) {
  auto expect = [](RowLayout l, int64_t rows, int64_t length) {
    EXPECT_EQ(l.rows, rows);
    EXPECT_EQ(l.row_length, length);
  };
  expect(layout_of({{128, 256}, {256}}), 128, 256);        // Bias along rows.
  expect(layout_of({{8, 16}, {8, 16}}), 1, 128);           // All contiguous: one row.
  expect(layout_of({{2, 3, 4, 5}, {1, 3, 1, 1}}), 6, 20);  // Per-channel: H·W rows.
  expect(layout_of({{4, 1}, {1, 5}}), 4, 5);               // Outer product.
  expect(layout_of({{}}), 1, 1);                           // Rank 0.
  expect(layout_of({{1, 1, 7}, {}}), 1, 7);                // Size-1 dims and a scalar.
  expect(layout_of({{5, 1, 3}, {5, 1, 3}}), 1, 15);
  expect(layout_of({{6, 4, 8}, {6, 1, 8}}), 24, 8);        // Broadcast in the middle.
  expect(layout_of({{6, 4, 8}, {6, 4, 1}}), 24, 8);        // Splat along the row.
}

TEST(KernelKey, IgnoresValueNamesAndSpellsOutDefaults) {
  Graph a = parse(R"(graph @a(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
    %s = add(%x, %b) : f32[4,8]
    %y = gelu(%s) : f32[4,8]
    return %y
  })");
  Graph b = parse(R"(graph @other(%p: f32[4,8], %q: f32[8]) -> (f32[4,8]) {
    %0 = add(%p, %q) : f32[4,8]
    %1 = gelu(%0) {approximate="none"} : f32[4,8]
    return %1
  })");
  EXPECT_EQ(kernel_key(a), kernel_key(b));
  EXPECT_EQ(kernel_key(a),
            "(f32[4,8], f32[8])\n%0 = add(%a0, %a1) : f32[4,8]\n"
            "%1 = gelu(%0) approximate=\"none\" : f32[4,8]\nreturn %1");
  Graph c = parse(R"(graph @c(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {
    %s = add(%x, %b) : f32[4,8]
    %y = gelu(%s) {approximate="tanh"} : f32[4,8]
    return %y
  })");
  EXPECT_NE(kernel_key(a), kernel_key(c));
}

TEST(KernelCompiler, IdenticalBodiesCompileOnce) {
  KernelCompiler jit;
  Graph a = op_body(Op::Tanh, {{DType::f32, {16, 40}}});
  Graph b = parse(R"(graph @renamed(%input: f32[16,40]) -> (f32[16,40]) {
    %t = tanh(%input) : f32[16,40]
    return %t
  })");
  StatusOr<const CompiledKernel*> ka = jit.compile(a);
  StatusOr<const CompiledKernel*> kb = jit.compile(b);
  ASSERT_TRUE(ka.ok()) << ka.error().to_string();
  ASSERT_TRUE(kb.ok()) << kb.error().to_string();
  EXPECT_EQ(*ka, *kb);
  EXPECT_EQ(jit.compilations(), 1);
  EXPECT_EQ(jit.cache_hits(), 1);
  EXPECT_EQ((*ka)->rows, 1);
  EXPECT_EQ((*ka)->row_length, 640);
  ASSERT_TRUE(jit.compile(op_body(Op::Tanh, {{DType::f64, {16, 40}}})).ok());
  EXPECT_EQ(jit.compilations(), 2);
}

TEST(KernelCompiler, ConcurrentCompilesOfOneBodyCompileOnce) {
  KernelCompiler jit;
  Graph body = op_body(Op::Sigmoid, {{DType::f32, {3, 50}}});
  std::vector<std::thread> threads;
  std::vector<const CompiledKernel*> got(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { got[t] = *jit.compile(body); });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(jit.compilations(), 1);
  EXPECT_EQ(jit.cache_hits(), 3);
  for (auto* k : got) EXPECT_EQ(k, got[0]);
}

TEST(KernelCompiler, EmitsVectorCode) {
  KernelCompiler jit;
  StatusOr<std::string> f32 = jit.emit_mlir(op_body(Op::Add, {{DType::f32, {128, 256}}, {DType::f32, {256}}}));
  ASSERT_TRUE(f32.ok()) << f32.error().to_string();
  EXPECT_NE(f32->find("vector<16xf32>"), std::string::npos) << *f32;
  EXPECT_NE(f32->find("arith.addf"), std::string::npos);
  EXPECT_EQ(f32->find("vector.broadcast"), std::string::npos);  // The bias is contiguous.
  StatusOr<std::string> splat = jit.emit_mlir(op_body(Op::Add, {{DType::f32, {4, 37}}, {DType::f32, {}}}));
  ASSERT_TRUE(splat.ok());
  EXPECT_NE(splat->find("vector.broadcast"), std::string::npos) << *splat;  // The scalar is.
  StatusOr<std::string> f64 = jit.emit_mlir(op_body(Op::Exp, {{DType::f64, {37}}}));
  ASSERT_TRUE(f64.ok());
  EXPECT_NE(f64->find("vector<8xf64>"), std::string::npos) << *f64;
  EXPECT_NE(f64->find("math.exp"), std::string::npos);
  EXPECT_NE(f64->find("step %t"), std::string::npos);
}

// The compiler takes a body's form from the kind it is given (GeneratedKernel::kind, the
// fused node's), not from the body: a kind the body does not have is refused.
TEST(KernelCompiler, TakesTheFormFromTheKind) {
  KernelCompiler& jit = KernelCompiler::global();
  auto message = [&](const Graph& body, FusedKind kind) {
    StatusOr<std::string> m = jit.emit_mlir(body, kind);
    return m.ok() ? std::string("ok") : m.error().to_string();
  };
  const Graph sum = parse("graph @k(%x: f32[4,8]) {\n  %s = sum(%x) {axes=[-1]} : f32[4]\n  return %s\n}\n");
  ASSERT_EQ(standalone_kind(sum), FusedKind::reduction);
  EXPECT_EQ(message(sum, FusedKind::reduction), "ok");
  EXPECT_EQ(row_layout(sum, FusedKind::reduction).rows, 4);
  EXPECT_EQ(message(sum, FusedKind::elementwise),
            "body.wir:2:3: error: codegen: sum in kernel body @k is neither elementwise nor the "
            "body's final reduction");
  const Graph neg = op_body(Op::Neg, {{DType::f32, {4, 8}}});
  EXPECT_EQ(message(neg, FusedKind::elementwise), "ok");
  EXPECT_EQ(message(neg, FusedKind::reduction),
            "error: codegen: reduction kernel body @k does not end in its one reduction (its one "
            "output)");
  EXPECT_EQ(message(neg, FusedKind::row), "error: codegen: row kernel body @k has no reduction");
  EXPECT_EQ(message(neg, FusedKind::contraction),
            "error: codegen: kernel body @k is a contraction; its kernel is its epilogue (lower.h)");
}

TEST(KernelCompiler, RejectsWhatItDoesNotImplement) {
  auto supported = [](const Graph& g) { return KernelCompiler::supports(g, g.nodes()[0]); };
  EXPECT_TRUE(supported(op_body(Op::Div, {{DType::f32, {4}}, {DType::f32, {4}}})));
  EXPECT_FALSE(supported(op_body(Op::Div, {{DType::i32, {4}}, {DType::i32, {4}}})));
  EXPECT_FALSE(supported(op_body(Op::Pow, {{DType::i64, {4}}, {DType::i64, {4}}})));
  // f16/bf16 are computed in f32 (kernel_half_test).
  EXPECT_TRUE(supported(op_body(Op::Add, {{DType::f16, {4}}, {DType::f16, {4}}})));
  EXPECT_TRUE(supported(op_body(Op::Exp, {{DType::bf16, {4}}})));
  EXPECT_FALSE(supported(op_body(Op::Exp, {{DType::i32, {4}}})));
  EXPECT_TRUE(supported(op_body(Op::Cast, {{DType::f32, {4}}}, {{"dtype", DType::f16}}, DType::f16)));
  // Reductions: float sum/mean/max/min only (kernel_reduction_test has the rest).
  EXPECT_FALSE(supported(op_body(Op::Sum, {{DType::i32, {4}}}, {}, DType::i32)));
  EXPECT_FALSE(supported(op_body(Op::Transpose, {{DType::f32, {4}}}, {}, DType::f32)));
  EXPECT_TRUE(supported(op_body(Op::Cast, {{DType::f32, {4}}}, {{"dtype", DType::u8}}, DType::u8)));

  KernelCompiler jit;
  StatusOr<const CompiledKernel*> k = jit.compile(op_body(Op::Div, {{DType::i32, {4}}, {DType::i32, {4}}}));
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().message,
            "codegen: div(i32[4], i32[4]) is not supported by the kernel generator; keep it "
            "out of fused kernels (KernelCompiler::supports)");
  Graph two_shapes = parse(R"(graph @k(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[8]) {
    %y = add(%x, %b) : f32[4,8]
    %z = neg(%b) : f32[8]
    return %y, %z
  })");
  k = jit.compile(two_shapes);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().message,
            "codegen: outputs of kernel body @k differ in shape: [4,8] and [8] (%z); a kernel "
            "has one iteration space");
  EXPECT_EQ(jit.compilations(), 0);
}

TEST(KernelCompiler, MultiOutputBodyMatchesReference) {
  Graph body = parse(R"(graph @k(%x: f32[128,256], %b: f32[256]) -> (f32[128,256], f32[128,256], bool[128,256]) {
    %y = add(%x, %b) : f32[128,256]
    %t = tanh(%y) : f32[128,256]
    %e = erf(%y) : f32[128,256]
    %s = add(%t, %e) : f32[128,256]
    %p = gt(%y, %b) : bool[128,256]
    return %s, %y, %p
  })");
  expect_random_matches(body, 1e-6);
}

TEST(KernelCompiler, ChainWithPerChannelBroadcastMatchesReference) {
  // A batch-norm-like chain on NCHW with [1,C,1,1] parameters, H·W = 49 (not a multiple
  // of 16), ending in a select and a cast.
  Graph body = parse(R"(graph @k(%x: f32[2,8,7,7], %m: f32[1,8,1,1], %s: f32[1,8,1,1], %z: f32[]) -> (f32[2,8,7,7], i32[2,8,7,7]) {
    %0 = sub(%x, %m) : f32[2,8,7,7]
    %1 = mul(%0, %s) : f32[2,8,7,7]
    %2 = maximum(%1, %z) : f32[2,8,7,7]
    %3 = sigmoid(%2) : f32[2,8,7,7]
    %4 = gelu(%1) {approximate="tanh"} : f32[2,8,7,7]
    %5 = lt(%3, %s) : bool[2,8,7,7]
    %6 = select(%5, %4, %2) : f32[2,8,7,7]
    %7 = mul(%6, %m) : f32[2,8,7,7]
    %8 = cast(%7) {dtype=i32} : i32[2,8,7,7]
    return %7, %8
  })");
  EXPECT_EQ(row_layout(body).rows, 16);
  EXPECT_EQ(row_layout(body).row_length, 49);
  expect_random_matches(body, 1e-6, -3, 3, 1);
  expect_random_matches(body, 1e-6, -3, 3, 2);
}

TEST(KernelCompiler, MixedDTypesAndScalars) {
  Graph body = parse(R"(graph @k(%x: f64[3,33], %n: i32[33], %c: f64[]) -> (f64[3,33], f32[3,33], f64[]) {
    %0 = cast(%n) {dtype=f64} : f64[33]
    %1 = mul(%x, %0) : f64[3,33]
    %2 = add(%1, %c) : f64[3,33]
    %3 = cast(%2) {dtype=f32} : f32[3,33]
    %4 = exp(%3) : f32[3,33]
    return %2, %4
  })");
  expect_random_matches(body, 1e-6, -3, 3);
  Graph scalar = op_body(Op::Mul, {{DType::f64, {}}, {DType::f64, {}}});
  expect_random_matches(scalar, 0);
}

TEST(KernelCompiler, OperandReturnedAsAResult) {
  Graph body = parse(R"(graph @k(%b: bool[37], %x: i64[37]) -> (bool[37], bool[37], i64[37]) {
    %n = not(%b) : bool[37]
    return %b, %n, %x
  })");
  expect_random_matches(body, 0);
}

}  // namespace
}  // namespace weft::codegen

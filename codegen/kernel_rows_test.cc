// Row bodies (keepdims reductions over the trailing axes whose per-row values other
// nodes consume, emit_rows) compared with the reference interpreter: softmax,
// log-softmax and layer norm forward, and their backward as autodiff's rules write
// them, on rows with and without a scalar tail, several leading dims, two trailing
// axes (with an operand that splits them), size-1 axes, f32 and f64; plus per-row
// outputs and inputs, bool outputs, the layouts, the emitted passes and the errors.

#include <cstdio>
#include <functional>
#include <string>

#include "codegen/kernel_test_util.h"
#include "ir/text.h"

namespace weft::codegen {
namespace {
namespace kernel_rows_test {  // this file's names, apart in its package's unity test

using testing::expect_matches_reference;
using testing::random_tensor;

/// `text` with $T the dtype, $F the full shape, $R the per-row shape, $A the axes and
/// $G the shape of a per-element parameter (gain, bias), parsed.
Graph body(std::string text, DType d, const Shape& full, const Shape& row,
           const std::string& axes, const Shape& gain) {
  auto dims = [](const Shape& s) {
    std::string r = s.to_string();
    return r.substr(1, r.size() - 2);
  };
  const std::vector<std::pair<std::string, std::string>> subst = {
      {"$T", std::string(dtype_name(d))}, {"$F", dims(full)}, {"$R", dims(row)},
      {"$A", axes}, {"$G", dims(gain)}};
  for (const auto& [key, value] : subst) {
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  }
  StatusOr<Graph> g = parse_graph(text, "body.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string() << "\n" << text;
  return g.ok() ? std::move(*g) : Graph();
}

// The message compiling the row body `g` fails with, or "compiled".
std::string compile_error(const Graph& g) {
  StatusOr<const CompiledKernel*> k = KernelCompiler::global().compile(g);
  return k.ok() ? "compiled" : k.error().message;
}

// The passes over each row `g` makes, and its row layout.
void expect_rows(const Graph& g, int passes, int64_t rows, int64_t row_length) {
  EXPECT_EQ(row_passes(g), passes);
  EXPECT_EQ(row_layout(g).rows, rows);
  EXPECT_EQ(row_layout(g).row_length, row_length);
}

const char* kSoftmax = R"(graph @k(%x: $T[$F]) -> ($T[$F]) {
  %m = max(%x) {axes=[$A], keepdims=true} : $T[$R]
  %d = sub(%x, %m) : $T[$F]
  %e = exp(%d) : $T[$F]
  %s = sum(%e) {axes=[$A], keepdims=true} : $T[$R]
  %y = div(%e, %s) : $T[$F]
  return %y
})";

const char* kLogSoftmax = R"(graph @k(%x: $T[$F]) -> ($T[$F]) {
  %m = max(%x) {axes=[$A], keepdims=true} : $T[$R]
  %d = sub(%x, %m) : $T[$F]
  %e = exp(%d) : $T[$F]
  %s = sum(%e) {axes=[$A], keepdims=true} : $T[$R]
  %l = log(%s) : $T[$R]
  %y = sub(%d, %l) : $T[$F]
  return %y
})";

// Layer norm with its per-row rstd as a second output; eps² keeps var + eps positive.
const char* kLayerNorm = R"(graph @k(%x: $T[$F], %eps: $T[], %w: $T[$G], %b: $T[$G]) -> ($T[$F], $T[$R]) {
  %mu = mean(%x) {axes=[$A], keepdims=true} : $T[$R]
  %xc = sub(%x, %mu) : $T[$F]
  %sq = mul(%xc, %xc) : $T[$F]
  %var = mean(%sq) {axes=[$A], keepdims=true} : $T[$R]
  %e2 = mul(%eps, %eps) : $T[]
  %ve = add(%var, %e2) : $T[$R]
  %r = rsqrt(%ve) : $T[$R]
  %xh = mul(%xc, %r) : $T[$F]
  %yw = mul(%xh, %w) : $T[$F]
  %y = add(%yw, %b) : $T[$F]
  return %y, %r
})";

// autodiff/rules_composite.cc: softmax dx = y (g - sum(g y)).
const char* kSoftmaxBackward = R"(graph @k(%g: $T[$F], %y: $T[$F]) -> ($T[$F]) {
  %p = mul(%g, %y) : $T[$F]
  %dot = sum(%p) {axes=[$A], keepdims=true} : $T[$R]
  %c = sub(%g, %dot) : $T[$F]
  %dx = mul(%y, %c) : $T[$F]
  return %dx
})";

// log-softmax dx = g - exp(y) sum(g).
const char* kLogSoftmaxBackward = R"(graph @k(%g: $T[$F], %y: $T[$F]) -> ($T[$F]) {
  %p = exp(%y) : $T[$F]
  %s = sum(%g) {axes=[$A], keepdims=true} : $T[$R]
  %ps = mul(%p, %s) : $T[$F]
  %dx = sub(%g, %ps) : $T[$F]
  return %dx
})";

// layer norm dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)), dx̂ = g γ; x̂ also an output
// (the gain's gradient sums g x̂ over the batch): four passes per row.
const char* kLayerNormBackward = R"(graph @k(%x: $T[$F], %g: $T[$F], %w: $T[$G], %eps: $T[]) -> ($T[$F], $T[$F]) {
  %mu = mean(%x) {axes=[$A], keepdims=true} : $T[$R]
  %xc = sub(%x, %mu) : $T[$F]
  %sq = mul(%xc, %xc) : $T[$F]
  %var = mean(%sq) {axes=[$A], keepdims=true} : $T[$R]
  %e2 = mul(%eps, %eps) : $T[]
  %ve = add(%var, %e2) : $T[$R]
  %r = rsqrt(%ve) : $T[$R]
  %xh = mul(%xc, %r) : $T[$F]
  %dxh = mul(%g, %w) : $T[$F]
  %m1 = mean(%dxh) {axes=[$A], keepdims=true} : $T[$R]
  %pr = mul(%dxh, %xh) : $T[$F]
  %m2 = mean(%pr) {axes=[$A], keepdims=true} : $T[$R]
  %a = sub(%dxh, %m1) : $T[$F]
  %bb = mul(%xh, %m2) : $T[$F]
  %in = sub(%a, %bb) : $T[$F]
  %dx = mul(%r, %in) : $T[$F]
  return %dx, %xh
})";

struct Space {
  Shape full, row;
  std::string axes;
  Shape gain;
};

const std::vector<Space> kSpaces = {
    {{7, 37}, {7, 1}, "-1", {37}},             // A scalar tail after two vectors.
    {{4, 64}, {4, 1}, "1", {64}},              // Whole vectors only.
    {{3, 5, 10}, {3, 5, 1}, "2", {10}},        // Shorter than a vector.
    {{4, 6, 40}, {4, 1, 1}, "1, 2", {6, 40}},  // Two trailing axes, merged.
    {{4, 6, 10}, {4, 1, 1}, "1, 2", {10}},     // The gain splits them: a loop over 6.
    {{2, 3, 1, 9}, {2, 3, 1, 1}, "2, 3", {9}},  // A size-1 axis in the row.
    {{1, 300}, {1, 1}, "-1", {300}},           // One row.
};

const std::vector<std::pair<const char*, const char*>> kBodies = {
    {"softmax", kSoftmax},
    {"log_softmax", kLogSoftmax},
    {"layer_norm", kLayerNorm},
    {"softmax_backward", kSoftmaxBackward},
    {"log_softmax_backward", kLogSoftmaxBackward},
    {"layer_norm_backward", kLayerNormBackward}};

// Every row body of kBodies in dtype `d` on every space of kSpaces, seeds 1 and 2:
// `matches(g, seed)` checks one and returns its distance; prints the largest per body.
void check_row_bodies(DType d, const char* unit,
                      const std::function<double(const Graph&, uint64_t)>& matches) {
  for (const auto& [name, text] : kBodies) {
    double worst = 0;
    for (const Space& s : kSpaces) {
      Graph g = body(text, d, s.full, s.row, s.axes, s.gain);
      ASSERT_TRUE(is_row_body(g)) << name;
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(d)) + " " + s.full.to_string());
      for (uint64_t seed : {1, 2}) worst = std::max(worst, matches(g, seed));
    }
    std::printf("  max %s  %s %s %.3g\n", unit, name, dtype_name(d).data(), worst);
  }
}

TEST(KernelRows, MatchesReference) {
  for (DType d : {DType::f32, DType::f64}) {
    const double tol = d == DType::f32 ? 2e-6 : 1e-12;
    check_row_bodies(d, "|jit - ref| / max(1, |ref|)", [&](const Graph& g, uint64_t seed) {
      return testing::expect_random_matches(g, tol, -3, 3, seed);
    });
  }
}

// f16/bf16 row bodies load and store 16 bits and compute in f32, each node's result
// rounded as the reference rounds it: the same bits on these inputs, but the f32
// approximations of exp and log (and sums added in another order) may round a value
// one unit in the last place the other way.
TEST(KernelRows, HalfPrecisionMatchesReference) {
  for (DType d : {DType::f16, DType::bf16}) {
    check_row_bodies(d, "ulps |jit - ref|", [](const Graph& g, uint64_t seed) {
      return testing::expect_random_half_matches(g, 1, -3, 3, seed);
    });
  }
}

// Per-row inputs are loaded once per row; per-row nodes are computed once per row; a
// bool full-shape output and a per-row output that is a reduction's own value.
TEST(KernelRows, PerRowInputsAndOutputs) {
  Graph g = body(R"(graph @k(%x: $T[$F], %t: $T[$R], %c: $T[]) -> (bool[$F], $T[$R], $T[$F]) {
  %tc = mul(%t, %c) : $T[$R]
  %sx = mul(%x, %tc) : $T[$F]
  %m = max(%sx) {axes=[$A], keepdims=true} : $T[$R]
  %hi = gt(%sx, %m) : bool[$F]
  %n = min(%sx) {axes=[$A], keepdims=true} : $T[$R]
  %lo = sub(%sx, %n) : $T[$F]
  %z = div(%lo, %m) : $T[$F]
  return %hi, %n, %z
})", DType::f32, {5, 3, 33}, {5, 3, 1}, "-1", {});
  ASSERT_TRUE(is_row_body(g));
  testing::expect_random_matches(g, 2e-6, 0.5, 3);
  // max and min read the same row: one pass for both, one for the outputs.
  expect_rows(g, /*passes=*/2, /*rows=*/15, /*row_length=*/33 * 2);
}

TEST(KernelRows, MaxPropagatesNaN) {
  Graph g = body(kSoftmax, DType::f32, {6, 45}, {6, 1}, "-1", {});
  std::mt19937_64 rng(3);
  std::vector<Tensor> in = {random_tensor(g.type(g.inputs()[0].value), rng, -3, 3)};
  in[0].set_double(17, NAN);   // A vector of row 0.
  in[0].set_double(45 + 44, NAN);  // The tail of row 1.
  expect_matches_reference(g, std::move(in), 2e-6);
}

TEST(KernelRows, LayoutsAndPasses) {
  Graph ln = body(kLayerNormBackward, DType::f32, {8, 64, 128}, {8, 64, 1}, "-1", {128});
  // mean(x); var; mean(dx̂) and mean(dx̂ x̂); outputs.
  expect_rows(ln, /*passes=*/4, /*rows=*/512, /*row_length=*/128 * 4);
  Graph sm = body(kSoftmax, DType::f32, {8, 4, 64, 64}, {8, 4, 64, 1}, "-1", {});
  EXPECT_EQ(row_passes(sm), 3);
  EXPECT_EQ(row_layout(sm).rows, 8 * 4 * 64);
  StatusOr<std::string> text = KernelCompiler::global().emit_mlir(sm);
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_NE(text->find("vector<16xf32>"), std::string::npos);
  EXPECT_NE(text->find("vector.reduction <add>"), std::string::npos);
  EXPECT_NE(text->find("math.exp"), std::string::npos);
}

TEST(KernelRows, RejectsReductionsOfOtherAxes) {
  Graph g = body(R"(graph @k(%x: $T[$F]) -> ($T[$F]) {
  %s = sum(%x) {axes=[0], keepdims=true} : $T[1,6]
  %y = sub(%x, %s) : $T[$F]
  return %y
})", DType::f32, {4, 6}, {4, 1}, "-1", {});
  EXPECT_EQ(compile_error(g),
            "codegen: row kernel body @k: sum from [4,6] to [1,6]: the reductions of a row "
            "kernel keep their dims and reduce the same trailing axes of one shape (here [4,6] "
            "to [1,6])");
  Graph out = body(R"(graph @k(%x: $T[$F], %b: $T[6]) -> ($T[6]) {
  %s = sum(%x) {axes=[1], keepdims=true} : $T[$R]
  %y = sub(%x, %s) : $T[$F]
  %z = add(%b, %b) : $T[6]
  return %z
})", DType::f32, {4, 6}, {4, 1}, "1", {});
  EXPECT_EQ(compile_error(out),
            "codegen: row kernel body @k: output %z [6] has neither the full shape [4,6] nor "
            "the per-row shape [4,1]");
  Graph wide = body(R"(graph @k(%x: $T[$F], %b: $T[5]) -> ($T[$F]) {
  %s = sum(%x) {axes=[1], keepdims=true} : $T[$R]
  %y = sub(%x, %s) : $T[$F]
  %z = add(%b, %b) : $T[5]
  return %y
})", DType::f32, {4, 6}, {4, 1}, "1", {});
  EXPECT_EQ(compile_error(wide),
            "codegen: row kernel body @k: %b [5] does not broadcast to the row space [4,6]");
  Graph moved = body(R"(graph @k(%x: $T[$F]) -> ($T[$F]) {
  %s = sum(%x) {axes=[1], keepdims=true} : $T[$R]
  %t = transpose(%x) {perm=[0, 1]} : $T[$F]
  %y = sub(%t, %s) : $T[$F]
  return %y
})", DType::f32, {4, 6}, {4, 1}, "1", {});
  EXPECT_EQ(compile_error(moved),
            "codegen: row kernel body @k: transpose is neither elementwise nor a reduction");
}

}  // namespace kernel_rows_test
}  // namespace
}  // namespace weft::codegen

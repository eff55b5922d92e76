// Fused contractions (a GEMM with a generated epilogue, one `contraction` invocation)
// against the reference interpreter: odd sizes, transposes, batches, extra results,
// epilogue rows that are not the product's rows, f32 and f64, 1 and 2 threads; bf16 products
// widened to f32 in their epilogue.

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "codegen/cpu_backend.h"
#include "codegen/kernel_test_util.h"
#include "ir/text.h"

namespace weft::codegen {
namespace {

struct Case {
  const char* name;
  const char* text;  // `T` stands for the dtype
};

// Each graph's matmul and the elementwise chain after it become one contraction node.
const Case kCases[] = {
    {"linear_relu_nt", R"(graph @f(%x: T[37,29], %w: T[53,29], %b: T[53]) {
  %m = matmul(%x, %w) {transpose_b=true}
  %h = add(%m, %b)
  %y = relu(%h)
  return %y
})"},
    {"tn_gelu_keeps_preactivation", R"(graph @f(%x: T[31,19], %w: T[31,45], %b: T[45]) {
  %m = matmul(%x, %w) {transpose_a=true}
  %h = add(%m, %b)
  %y = gelu(%h) {approximate="tanh"}
  %u = mul(%h, %h)
  return %y, %u
})"},
    {"tt_product_kept", R"(graph @f(%x: T[23,40], %w: T[70,23], %s: T[]) {
  %m = matmul(%x, %w) {transpose_a=true, transpose_b=true}
  %y = mul(%m, %s)
  %z = tanh(%y)
  %t = sum(%m) {axes=[0]}
  return %z, %t
})"},
    {"residual", R"(graph @f(%x: T[41,33], %w: T[33,33], %b: T[33]) {
  %m = matmul(%x, %w)
  %h = add(%m, %b)
  %r = add(%x, %h)
  %y = sigmoid(%r)
  return %y
})"},
    {"batch_folded_into_rows", R"(graph @f(%x: T[3,17,9], %w: T[9,11], %b: T[11]) {
  %m = matmul(%x, %w)
  %h = add(%m, %b)
  %y = erf(%h)
  return %y
})"},
    {"batch_broadcast", R"(graph @f(%x: T[2,5,7], %w: T[1,7,6], %c: T[2,5,6]) {
  %m = matmul(%x, %w)
  %y = sub(%m, %c)
  %z = exp(%y)
  return %z
})"},
    // 130x200 without a broadcast collapses to rows of 2000 elements (10 product rows).
    {"long_rows", R"(graph @f(%x: T[130,64], %w: T[64,200], %c: T[130,200]) {
  %m = matmul(%x, %w)
  %y = add(%m, %c)
  %z = relu(%y)
  return %z
})"},
    // Large enough for the pool to split the rows in two chunks.
    {"linear_two_chunks", R"(graph @f(%x: T[255,96], %w: T[130,96], %b: T[130]) {
  %m = matmul(%x, %w) {transpose_b=true}
  %h = add(%m, %b)
  %y = gelu(%h)
  return %y
})"},
    {"matrix_vector", R"(graph @f(%x: T[9,13], %v: T[13,1], %s: T[]) {
  %m = matmul(%x, %v)
  %y = add(%m, %s)
  %z = tanh(%y)
  return %z
})"},
    // x·Wᵀ with fewer rows than columns: run_gemm's column split, then the epilogue.
    {"nt_wide_columns", R"(graph @f(%x: T[40,96], %w: T[300,96], %b: T[300]) {
  %m = matmul(%x, %w) {transpose_b=true}
  %h = add(%m, %b)
  %y = relu(%h)
  return %y
})"},
    {"one_row", R"(graph @f(%x: T[1,300], %w: T[300,7], %b: T[7]) {
  %m = matmul(%x, %w)
  %y = add(%m, %b)
  return %y
})"},
};

Graph parse_case(const Case& c, const std::string& dtype) {
  std::string text = c.text;
  for (size_t p = text.find("T["); p != std::string::npos; p = text.find("T[", p)) {
    text.replace(p, 1, dtype);
  }
  return testing::parse_typed(text, std::string(c.name) + ".wir");
}

// `g` on the CPU backend with `threads` threads against the reference interpreter, every
// output within `tol` (all_close), on random inputs; and bitwise the same when run again.
void expect_cpu_matches_reference(const Graph& g, int threads, double tol) {
  std::mt19937_64 rng(11);
  const std::vector<Tensor> inputs = testing::random_inputs(g, rng, -1, 1);
  CpuOptions options;
  options.executor.num_threads = threads;
  StatusOr<reference::RunResult> cpu = run_on_cpu(g, inputs, options);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  StatusOr<reference::RunResult> ref = reference::run(g, inputs);
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_EQ(cpu->outputs.size(), ref->outputs.size());
  for (size_t o = 0; o < cpu->outputs.size(); ++o) {
    std::string why;
    EXPECT_TRUE(all_close(cpu->outputs[o], ref->outputs[o], tol, &why)) << "output " << o << ": " << why;
  }
  StatusOr<reference::RunResult> again = run_on_cpu(g, inputs, options);
  ASSERT_TRUE(again.ok());
  for (size_t o = 0; o < cpu->outputs.size(); ++o) EXPECT_EQ(cpu->outputs[o], again->outputs[o]);
}

class ContractionEpilogueTest
    : public ::testing::TestWithParam<std::tuple<Case, const char*, int>> {};

TEST_P(ContractionEpilogueTest, MatchesTheReference) {
  const auto& [c, dtype, threads] = GetParam();
  Graph g = parse_case(c, dtype);
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  int contractions = 0, gemms = 0;
  for (const Invocation& inv : l->program.code) {
    contractions += inv.kind == Invocation::Kind::contraction;
    gemms += inv.node.op == Op::Matmul;
  }
  EXPECT_EQ(contractions, 1) << l->program.to_string();
  EXPECT_EQ(gemms, 1) << l->program.to_string();

  expect_cpu_matches_reference(g, threads, std::string(dtype) == "f32" ? 2e-5 : 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    All, ContractionEpilogueTest,
    ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values("f32", "f64"),
                       ::testing::Values(1, 2)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param) + "_" +
             std::to_string(std::get<2>(info.param)) + "threads";
    });

// A bf16 product widened to f32, computed on in f32 and (or not) rounded back, as
// autodiff sums half cotangents (autodiff/grad.h): one contraction, whose epilogue
// computes what its casts say. Against the interpreter within bf16's rounding (the
// library GEMM and the interpreter may round C's f32 sum differently by one ulp).
const Case kWidenedCases[] = {
    {"widened_sum_rounded", R"(graph @f(%x: bf16[37,29], %w: bf16[29,53], %o: bf16[37,53]) {
  %m = matmul(%x, %w)
  %mw = cast(%m) {dtype=f32}
  %ow = cast(%o) {dtype=f32}
  %s = add(%mw, %ow)
  %r = cast(%s) {dtype=bf16}
  return %r
})"},
    {"widened_bias_gelu_kept_f32", R"(graph @f(%x: bf16[255,96], %w: bf16[130,96], %b: f32[130]) {
  %m = matmul(%x, %w) {transpose_b=true}
  %mw = cast(%m) {dtype=f32}
  %h = add(%mw, %b)
  %y = gelu(%h)
  return %y
})"},
};

class WidenedEpilogueTest : public ::testing::TestWithParam<std::tuple<Case, int>> {};

TEST_P(WidenedEpilogueTest, MatchesTheReferenceInBf16) {
  const auto& [c, threads] = GetParam();
  Graph g = testing::parse_typed(c.text, std::string(c.name) + ".wir");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(l->program.code.size(), 1u) << l->program.to_string();
  EXPECT_EQ(l->program.code[0].kind, Invocation::Kind::contraction) << l->program.to_string();

  expect_cpu_matches_reference(g, threads, 8e-3);
}

INSTANTIATE_TEST_SUITE_P(All, WidenedEpilogueTest,
                         ::testing::Combine(::testing::ValuesIn(kWidenedCases), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "threads";
                         });

// `text` parsed as bad.wir, as written: it must parse (the errors under test come later).
Graph parse_bad(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "bad.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : Graph();
}

// The error lowering `g` gives, or "lowered" when it gives none.
std::string lowering_error(const Graph& g) {
  StatusOr<Lowering> l = lower_to_program(g);
  return l.ok() ? "lowered" : l.error().to_string();
}

// The epilogue's layout must match its body: a hand-written contraction whose body does
// not start with a product of its first two inputs is refused with a message.
TEST(ContractionEpilogueErrors, ABodyThatIsNotLaidOutIsNamed) {
  Graph g = parse_bad(R"(graph @f(%x: f32[4,4], %w: f32[4,4]) {
  %y = fused(%x, %w) {kind="contraction"} : f32[4,4] ({
    ^body(%0: f32[4,4], %1: f32[4,4]):
      %t0 = add(%0, %1) : f32[4,4]
      return %t0
  })
  return %y
})");
  EXPECT_EQ(lowering_error(g),
            "bad.wir:2:3: error: fused {kind=\"contraction\"}: the body must start with a "
            "contraction of its first two inputs (passes/fuse_contraction_epilogue.h)");
}

TEST(ContractionEpilogueErrors, AnEpilogueReadingTheGemmOperandIsNamed) {
  Graph g = parse_bad(R"(graph @f(%x: f32[4,4], %w: f32[4,4]) {
  %y = fused(%x, %w) {kind="contraction"} : f32[4,4] ({
    ^body(%0: f32[4,4], %1: f32[4,4]):
      %t0 = matmul(%0, %1) : f32[4,4]
      %t1 = add(%t0, %0) : f32[4,4]
      return %t1
  })
  return %y
})");
  EXPECT_EQ(lowering_error(g),
            "bad.wir:2:3: error: fused {kind=\"contraction\"}: the epilogue reads the "
            "contraction's operand %0 (give it as an input of its own)");
}

// The runtime has no GEMM for i32: a hand-written contraction of i32 is refused when the
// Program is bound, at the matmul's line.
TEST(ContractionEpilogueErrors, AGemmTheRuntimeLacksIsNamed) {
  Graph g = parse_bad(R"(graph @f(%x: i32[4,4], %w: i32[4,4], %b: i32[4]) {
  %y = fused(%x, %w, %b) {kind="contraction"} : i32[4,4] ({
    ^body(%0: i32[4,4], %1: i32[4,4], %2: i32[4]):
      %t0 = matmul(%0, %1) : i32[4,4]
      %t1 = add(%t0, %2) : i32[4,4]
      return %t1
  })
  return %y
})");
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) inputs.emplace_back(g.type(in.value));
  StatusOr<reference::RunResult> r = run_on_cpu(g, inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "bad.wir:4:7: error: program @f: no CPU kernel runs matmul on i32[4,4] and i32[4,4] "
            "with an epilogue");
}

}  // namespace
}  // namespace weft::codegen

#include "passes/round_at_stores.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

// The header's example: a bias add and GELU in bf16 compute in f32, rounded once.
TEST(RoundAtStoresTest, AnElementwiseChainRoundsOnceAtItsStore) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[8,4], %b: bf16[4]) {
  %y = fused(%x, %b) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: bf16[4]):
      %t0 = add(%0, %1) : bf16[8,4]
      %t1 = gelu(%t0) : bf16[8,4]
      return %t1
  })
  return %y
})"),
            R"(graph @f(%x: bf16[8,4], %b: bf16[4]) -> (bf16[8,4]) {
  %y = fused(%x, %b) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: bf16[4]):
      %2 = cast(%0) {dtype=f32} : f32[8,4]
      %3 = cast(%1) {dtype=f32} : f32[4]
      %t0 = add(%2, %3) : f32[8,4]
      %t1 = gelu(%t0) : f32[8,4]
      %4 = cast(%t1) {dtype=bf16} : bf16[8,4]
      return %4
  })
  return %y
}
)");
}

// Autocast's casts inside a body: the cast to f32 of a value now computed wide is that
// value; the cast of an f32 activation to bf16 still rounds, and its reader widens it; a
// half value that is both an output and read again is stored rounded and read wide.
TEST(RoundAtStoresTest, CastsToF32VanishAndCastsToHalfStillRound) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[8,50], %w: bf16[50], %r: f32[8,50]) {
  %y, %p, %pos = fused(%x, %w, %r) : f32[8,50], bf16[8,50], bool[8,50] ({
    ^body(%0: f32[8,50], %1: bf16[50], %2: f32[8,50]):
      %xh = cast(%0) {dtype=bf16} : bf16[8,50]
      %p = mul(%xh, %1) : bf16[8,50]
      %g = relu(%p) : bf16[8,50]
      %pf = cast(%g) {dtype=f32} : f32[8,50]
      %y = add(%pf, %2) : f32[8,50]
      %pos = gt(%p, %xh) : bool[8,50]
      return %y, %p, %pos
  })
  return %y, %p, %pos
})"),
            R"(graph @f(%x: f32[8,50], %w: bf16[50], %r: f32[8,50]) -> (f32[8,50], bf16[8,50], bool[8,50]) {
  %y, %p, %pos = fused(%x, %w, %r) : f32[8,50], bf16[8,50], bool[8,50] ({
    ^body(%0: f32[8,50], %1: bf16[50], %2: f32[8,50]):
      %xh = cast(%0) {dtype=bf16} : bf16[8,50]
      %3 = cast(%xh) {dtype=f32} : f32[8,50]
      %4 = cast(%1) {dtype=f32} : f32[50]
      %p = mul(%3, %4) : f32[8,50]
      %g = relu(%p) : f32[8,50]
      %y = add(%g, %2) : f32[8,50]
      %pos = gt(%p, %3) : bool[8,50]
      %5 = cast(%p) {dtype=bf16} : bf16[8,50]
      return %y, %5, %pos
  })
  return %y, %p, %pos
}
)");
}

// A GEMM's epilogue: the library's bf16 product stays (rounded once from its f32
// accumulator), the bias add and GELU compute on it widened; both results are stored.
TEST(RoundAtStoresTest, AContractionKeepsItsProductAndItsEpilogueComputesWide) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[16,8], %w: bf16[4,8], %b: bf16[4]) {
  %y, %h = fused(%x, %w, %b) {kind="contraction"} : bf16[16,4], bf16[16,4] ({
    ^body(%0: bf16[16,8], %1: bf16[4,8], %2: bf16[4]):
      %c = matmul(%0, %1) {transpose_b=true} : bf16[16,4]
      %h = add(%c, %2) : bf16[16,4]
      %y = gelu(%h) : bf16[16,4]
      return %y, %h
  })
  return %y, %h
})"),
            R"(graph @f(%x: bf16[16,8], %w: bf16[4,8], %b: bf16[4]) -> (bf16[16,4], bf16[16,4]) {
  %y, %h = fused(%x, %w, %b) {kind="contraction"} : bf16[16,4], bf16[16,4] ({
    ^body(%0: bf16[16,8], %1: bf16[4,8], %2: bf16[4]):
      %c = matmul(%0, %1) {transpose_b=true} : bf16[16,4]
      %3 = cast(%c) {dtype=f32} : f32[16,4]
      %4 = cast(%2) {dtype=f32} : f32[4]
      %h = add(%3, %4) : f32[16,4]
      %y = gelu(%h) : f32[16,4]
      %5 = cast(%y) {dtype=bf16} : bf16[16,4]
      %6 = cast(%h) {dtype=bf16} : bf16[16,4]
      return %5, %6
  })
  return %y, %h
}
)");
}

// A reduction kernel: its chain computes in f32 and is rounded once where the reduction
// reads it; the reduction keeps its dtype (its result is the kernel's store).
TEST(RoundAtStoresTest, AReductionsChainRoundsOnceWhereTheReductionReadsIt) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%g: bf16[64,32], %h: bf16[64,32]) {
  %s = fused(%g, %h) {kind="reduction"} : bf16[32] ({
    ^body(%0: bf16[64,32], %1: bf16[64,32]):
      %t0 = mul(%0, %1) : bf16[64,32]
      %t1 = add(%t0, %1) : bf16[64,32]
      %t2 = sum(%t1) {axes=[0]} : bf16[32]
      return %t2
  })
  return %s
})"),
            R"(graph @f(%g: bf16[64,32], %h: bf16[64,32]) -> (bf16[32]) {
  %s = fused(%g, %h) {kind="reduction"} : bf16[32] ({
    ^body(%0: bf16[64,32], %1: bf16[64,32]):
      %2 = cast(%0) {dtype=f32} : f32[64,32]
      %3 = cast(%1) {dtype=f32} : f32[64,32]
      %t0 = mul(%2, %3) : f32[64,32]
      %t1 = add(%t0, %3) : f32[64,32]
      %4 = cast(%t1) {dtype=bf16} : bf16[64,32]
      %t2 = sum(%4) {axes=[0]} : bf16[32]
      return %t2
  })
  return %s
}
)");
}

// A softmax row in f16: the row max and sum are f32 values read unrounded.
TEST(RoundAtStoresTest, ARowKernelsReductionsAreReadUnrounded) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f16[8,16]) {
  %y = fused(%x) {kind="row"} : f16[8,16] ({
    ^body(%0: f16[8,16]):
      %m = max(%0) {axes=[-1], keepdims=true} : f16[8,1]
      %d = sub(%0, %m) : f16[8,16]
      %e = exp(%d) : f16[8,16]
      %s = sum(%e) {axes=[-1], keepdims=true} : f16[8,1]
      %q = div(%e, %s) : f16[8,16]
      return %q
  })
  return %y
})"),
            R"(graph @f(%x: f16[8,16]) -> (f16[8,16]) {
  %y = fused(%x) {kind="row"} : f16[8,16] ({
    ^body(%0: f16[8,16]):
      %1 = cast(%0) {dtype=f32} : f32[8,16]
      %m = max(%1) {axes=[-1], keepdims=true} : f32[8,1]
      %d = sub(%1, %m) : f32[8,16]
      %e = exp(%d) : f32[8,16]
      %s = sum(%e) {axes=[-1], keepdims=true} : f32[8,1]
      %q = div(%e, %s) : f32[8,16]
      %2 = cast(%q) {dtype=f16} : f16[8,16]
      return %2
  })
  return %y
}
)");
}

// select picks among widened values; a window's slice keeps its dtype.
TEST(RoundAtStoresTest, SelectPicksWideAndAWindowKeepsItsBits) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%c: bool[4,8], %a: bf16[4,16], %b: bf16[4,8]) {
  %y = fused(%c, %a, %b) : bf16[4,8] ({
    ^body(%0: bool[4,8], %1: bf16[4,16], %2: bf16[4,8]):
      %w = slice(%1) {start=[0,8], stop=[4,16]} : bf16[4,8]
      %t0 = mul(%w, %2) : bf16[4,8]
      %t1 = select(%0, %t0, %2) : bf16[4,8]
      %t2 = neg(%t1) : bf16[4,8]
      return %t2
  })
  return %y
})"),
            R"(graph @f(%c: bool[4,8], %a: bf16[4,16], %b: bf16[4,8]) -> (bf16[4,8]) {
  %y = fused(%c, %a, %b) : bf16[4,8] ({
    ^body(%0: bool[4,8], %1: bf16[4,16], %2: bf16[4,8]):
      %w = slice(%1) {start=[0, 8], stop=[4, 16]} : bf16[4,8]
      %3 = cast(%w) {dtype=f32} : f32[4,8]
      %4 = cast(%2) {dtype=f32} : f32[4,8]
      %t0 = mul(%3, %4) : f32[4,8]
      %t1 = select(%0, %t0, %4) : f32[4,8]
      %t2 = neg(%t1) : f32[4,8]
      %5 = cast(%t2) {dtype=bf16} : bf16[4,8]
      return %5
  })
  return %y
}
)");
}

// A half scalar constant its dtype cannot hold (GELU's 1/√(2π): 0.3984375 in bf16),
// read only wide and only by kernels, is made in f32: its rounding is one more that
// the kernels skip (autodiff's rules make such constants in the gradient's dtype). A
// kernel that reads one is rewritten even when it rounds nothing else (%w). A constant
// bf16 holds (0.5), and one that an op outside a kernel reads too (%e), stay.
TEST(RoundAtStoresTest, HalfConstantsReadOnlyWideAreMadeInF32) {
  RoundAtStoresPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: bf16[8,4]) {
  %k = full() {shape=[], value=0.3989422804014327, dtype=bf16} : bf16[]
  %h = full() {shape=[], value=0.5, dtype=bf16} : bf16[]
  %e = full() {shape=[], value=0.1, dtype=bf16} : bf16[]
  %y = fused(%x, %k, %h, %e) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: bf16[], %2: bf16[], %3: bf16[]):
      %t0 = mul(%0, %1) : bf16[8,4]
      %t1 = add(%t0, %2) : bf16[8,4]
      %t2 = mul(%t1, %3) : bf16[8,4]
      return %t2
  })
  %w = fused(%x, %k) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: bf16[]):
      %t0 = mul(%0, %1) : bf16[8,4]
      return %t0
  })
  %z = mul(%x, %e) : bf16[8,4]
  return %y, %w, %z
})"),
            R"(graph @f(%x: bf16[8,4]) -> (bf16[8,4], bf16[8,4], bf16[8,4]) {
  %k = full() {dtype=f32, shape=[], value=0.3989422804014327} : f32[]
  %h = full() {dtype=bf16, shape=[], value=0.5} : bf16[]
  %e = full() {dtype=bf16, shape=[], value=0.1} : bf16[]
  %y = fused(%x, %k, %h, %e) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: f32[], %2: bf16[], %3: bf16[]):
      %4 = cast(%0) {dtype=f32} : f32[8,4]
      %t0 = mul(%4, %1) : f32[8,4]
      %5 = cast(%2) {dtype=f32} : f32[]
      %t1 = add(%t0, %5) : f32[8,4]
      %6 = cast(%3) {dtype=f32} : f32[]
      %t2 = mul(%t1, %6) : f32[8,4]
      %7 = cast(%t2) {dtype=bf16} : bf16[8,4]
      return %7
  })
  %w = fused(%x, %k) : bf16[8,4] ({
    ^body(%0: bf16[8,4], %1: f32[]):
      %2 = cast(%0) {dtype=f32} : f32[8,4]
      %t0 = mul(%2, %1) : f32[8,4]
      %3 = cast(%t0) {dtype=bf16} : bf16[8,4]
      return %3
  })
  %z = mul(%x, %e) : bf16[8,4]
  return %y, %w, %z
}
)");
}

// No change: f32 kernels; a lone bf16 column sum (its one rounding is its store); an
// update that computes in f32 and casts its weight's copy at the store; a single bf16 op
// (its rounding is its store too).
TEST(RoundAtStoresTest, NoChangeWhereNoRoundedHalfValueIsReadAgain) {
  RoundAtStoresPass pass;
  const char* text = R"(graph @f(%x: f32[8,4], %g: bf16[64,32], %w: f32[32], %d: bf16[32], %a: bf16[8,4]) -> (f32[8,4], bf16[32], f32[32], bf16[32], bf16[8,4]) {
  %y = fused(%x) : f32[8,4] ({
    ^body(%0: f32[8,4]):
      %t0 = exp(%0) : f32[8,4]
      %t1 = mul(%t0, %0) : f32[8,4]
      return %t1
  })
  %s = fused(%g) {kind="reduction"} : bf16[32] ({
    ^body(%0: bf16[64,32]):
      %t0 = sum(%0) {axes=[0]} : bf16[32]
      return %t0
  })
  %u, %c = fused(%w, %d) : f32[32], bf16[32] ({
    ^body(%0: f32[32], %1: bf16[32]):
      %t0 = cast(%1) {dtype=f32} : f32[32]
      %t1 = sub(%0, %t0) : f32[32]
      %t2 = cast(%t1) {dtype=bf16} : bf16[32]
      return %t1, %t2
  })
  %r = fused(%a) : bf16[8,4] ({
    ^body(%0: bf16[8,4]):
      %t0 = tanh(%0) : bf16[8,4]
      return %t0
  })
  return %y, %s, %u, %c, %r
}
)";
  EXPECT_EQ(run_pass_on_text(pass, text), std::string(text) + "(no change)\n");
}

}  // namespace
}  // namespace weft

// The autocast pass's rewrites, golden: each rule of passes/autocast.h on a small graph,
// and a graph it leaves alone.
#include "passes/autocast.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {
namespace autocast_test {  // this file's names, apart in its package's unity test

std::string autocast(std::string_view text, DType low = DType::bf16) {
  AutocastPass pass(low);
  return run_pass_on_text(pass, text);
}

TEST(AutocastTest, LinearReluSum) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[8,4], %w: f32[3,4] {param}, %b: f32[3] {param}) {
  %wt = transpose(%w) {perm=[1,0]} : f32[4,3]
  %h = matmul(%x, %wt) : f32[8,3]
  %y = add(%h, %b) : f32[8,3]
  %r = relu(%y) : f32[8,3]
  %s = sum(%r) : f32[]
  return %s
})"),
            R"(graph @f(%x: f32[8,4], %w: f32[3,4] {param}, %b: f32[3] {param}) -> (f32[]) {
  %0 = cast(%x) {dtype=bf16} : bf16[8,4]
  %1 = cast(%w) {dtype=bf16} : bf16[3,4]
  %wt = transpose(%1) {perm=[1, 0]} : bf16[4,3]
  %h = matmul(%0, %wt) : bf16[8,3]
  %2 = cast(%b) {dtype=bf16} : bf16[3]
  %y = add(%h, %2) : bf16[8,3]
  %r = relu(%y) : bf16[8,3]
  %3 = cast(%r) {dtype=f32} : f32[8,3]
  %s = sum(%3) : f32[]
  return %s
}
)");
}

TEST(AutocastTest, WeightUsedTwiceIsCastOnce) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[8,4], %z: f32[8,4], %w: f32[4,4] {param}) {
  %a = matmul(%x, %w) : f32[8,4]
  %b = matmul(%z, %w) : f32[8,4]
  %c = matmul(%a, %w) : f32[8,4]
  %s = add(%b, %c) : f32[8,4]
  return %s
})", DType::f16),
            R"(graph @f(%x: f32[8,4], %z: f32[8,4], %w: f32[4,4] {param}) -> (f32[8,4]) {
  %0 = cast(%x) {dtype=f16} : f16[8,4]
  %1 = cast(%w) {dtype=f16} : f16[4,4]
  %a = matmul(%0, %1) : f16[8,4]
  %c = matmul(%a, %1) : f16[8,4]
  %2 = cast(%z) {dtype=f16} : f16[8,4]
  %b = matmul(%2, %1) : f16[8,4]
  %s = add(%b, %c) : f16[8,4]
  %3 = cast(%s) {dtype=f32} : f32[8,4]
  return %3
}
)");
}

TEST(AutocastTest, ConvolutionBiasRunsInLow) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[2,3,8,8], %w: f32[4,3,3,3] {param}, %b: f32[4] {param}) {
  %y = conv(%x, %w) : f32[2,4,6,6]
  %bb = reshape(%b) {shape=[1,4,1,1]} : f32[1,4,1,1]
  %z = add(%y, %bb) : f32[2,4,6,6]
  %m = mean(%z) : f32[]
  return %m
})"),
            R"(graph @f(%x: f32[2,3,8,8], %w: f32[4,3,3,3] {param}, %b: f32[4] {param}) -> (f32[]) {
  %0 = cast(%x) {dtype=bf16} : bf16[2,3,8,8]
  %1 = cast(%w) {dtype=bf16} : bf16[4,3,3,3]
  %y = conv(%0, %1) : bf16[2,4,6,6]
  %2 = cast(%b) {dtype=bf16} : bf16[4]
  %bb = reshape(%2) {shape=[1, 4, 1, 1]} : bf16[1,4,1,1]
  %z = add(%y, %bb) : bf16[2,4,6,6]
  %3 = cast(%z) {dtype=f32} : f32[2,4,6,6]
  %m = mean(%3) : f32[]
  return %m
}
)");
}

TEST(AutocastTest, ResidualPromotesAndConstantsFollow) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[8,4], %w: f32[4,4] {param}) {
  %h = matmul(%x, %w) : f32[8,4]
  %half = full() {shape=[], value=0.5} : f32[]
  %s = mul(%h, %half) : f32[8,4]
  %r = add(%s, %x) : f32[8,4]
  return %r
})"),
            R"(graph @f(%x: f32[8,4], %w: f32[4,4] {param}) -> (f32[8,4]) {
  %half = full() {shape=[], value=0.5} : f32[]
  %0 = cast(%x) {dtype=bf16} : bf16[8,4]
  %1 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = matmul(%0, %1) : bf16[8,4]
  %2 = cast(%half) {dtype=bf16} : bf16[]
  %s = mul(%h, %2) : bf16[8,4]
  %3 = cast(%s) {dtype=f32} : f32[8,4]
  %r = add(%3, %x) : f32[8,4]
  return %r
}
)");
}

TEST(AutocastTest, StateAndOutputsKeepTheirDtypes) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[8,4], %w: f32[4,4] {param}, %m: f32[8,4] {state}) {
  %h = matmul(%x, %w) : f32[8,4]
  assign(%m, %h)
  %t = tanh(%h) : f32[8,4]
  return %t
})"),
            R"(graph @f(%x: f32[8,4], %w: f32[4,4] {param}, %m: f32[8,4] {state}) -> (f32[8,4]) {
  %0 = cast(%x) {dtype=bf16} : bf16[8,4]
  %1 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = matmul(%0, %1) : bf16[8,4]
  %t = tanh(%h) : bf16[8,4]
  %2 = cast(%h) {dtype=f32} : f32[8,4]
  assign(%m, %2)
  %3 = cast(%t) {dtype=f32} : f32[8,4]
  return %3
}
)");
}

TEST(AutocastTest, F64ContractionsAreLeftAlone) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f64[8,4], %w: f64[4,4]) {
  %h = matmul(%x, %w) : f64[8,4]
  return %h
})"),
            R"(graph @f(%x: f64[8,4], %w: f64[4,4]) -> (f64[8,4]) {
  %h = matmul(%x, %w) : f64[8,4]
  return %h
}
(no change)
)");
}

TEST(AutocastTest, NoChangeWithoutContractions) {
  EXPECT_EQ(autocast(R"(graph @f(%x: f32[8,4], %i: i64[8]) {
  %r = relu(%x) : f32[8,4]
  %s = softmax(%r) : f32[8,4]
  %l = cross_entropy(%s, %i) : f32[]
  return %l
})"),
            R"(graph @f(%x: f32[8,4], %i: i64[8]) -> (f32[]) {
  %r = relu(%x) : f32[8,4]
  %s = softmax(%r) : f32[8,4]
  %l = cross_entropy(%s, %i) : f32[]
  return %l
}
(no change)
)");
}

// A loop body runs the same policy: its parameters and results keep the loop's types (the
// carry h stays f32, cast to bf16 for the product), and the weight, which the body reads
// only through its cast, is cast once before the loop (with the forward's own cast of it)
// and passed in bf16. The bias is a contraction's bias: passed in bf16 too.
TEST(AutocastTest, LoopBodyRunsLowAndItsWeightIsCastOnceOutside) {
  EXPECT_EQ(autocast(R"(graph @f(%w: f32[4,4] {param}, %b: f32[4] {param}, %h0: f32[2,4], %xs: f32[5,2,4]) {
  %p = matmul(%h0, %w) : f32[2,4]
  %h, %ys = scan(%w, %b, %p, %xs) {carries=1, consts=2, length=5} : f32[2,4], f32[5,2,4] ({
    ^cell(%w1: f32[4,4], %b1: f32[4], %h1: f32[2,4], %x1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %mb = add(%m, %b1) : f32[2,4]
      %s = add(%mb, %x1) : f32[2,4]
      %n = tanh(%s) : f32[2,4]
      return %n, %n
  })
  %l = sum(%ys) : f32[]
  return %h, %l
})"),
            R"(graph @f(%w: f32[4,4] {param}, %b: f32[4] {param}, %h0: f32[2,4], %xs: f32[5,2,4]) -> (f32[2,4], f32[]) {
  %0 = cast(%h0) {dtype=bf16} : bf16[2,4]
  %1 = cast(%w) {dtype=bf16} : bf16[4,4]
  %p = matmul(%0, %1) : bf16[2,4]
  %2 = cast(%p) {dtype=f32} : f32[2,4]
  %3 = cast(%b) {dtype=bf16} : bf16[4]
  %h, %ys = scan(%1, %3, %2, %xs) {carries=1, consts=2, length=5} : f32[2,4], f32[5,2,4] ({
    ^cell(%w1: bf16[4,4], %b1: bf16[4], %h1: f32[2,4], %x1: f32[2,4]):
      %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
      %m = matmul(%0, %w1) : bf16[2,4]
      %mb = add(%m, %b1) : bf16[2,4]
      %3 = cast(%mb) {dtype=f32} : f32[2,4]
      %s = add(%3, %x1) : f32[2,4]
      %n = tanh(%s) : f32[2,4]
      return %n, %n
  })
  %l = sum(%ys) : f32[]
  return %h, %l
}
)");
}

// A const the body also reads in f32 (a sum, on the fp32 list) keeps its parameter; its
// bf16 copy is a new const, after the others. Where the const is a transpose made for the
// loop alone, the copy is a cast of the transpose, which keeps its f32 result for the f32
// parameter (the cast is not moved above the transpose as for a single use).
TEST(AutocastTest, LoopConstReadInBothDtypesGetsALowCopy) {
  const std::string loop = R"( {carries=1, consts=1, length=3} : f32[2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %t = sum(%w1) : f32[]
      %n = mul(%m, %t) : f32[2,4]
      return %n
  })
  return %h
})";
  const std::string after = R"( {carries=1, consts=2, length=3} : f32[2,4] ({
    ^cell(%w1: f32[4,4], %1: bf16[4,4], %h1: f32[2,4]):
      %t = sum(%w1) : f32[]
      %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
      %m = matmul(%0, %1) : bf16[2,4]
      %2 = cast(%m) {dtype=f32} : f32[2,4]
      %n = mul(%2, %t) : f32[2,4]
      return %n
  })
  return %h
}
)";
  const std::string header = "graph @f(%w: f32[4,4] {param}, %h0: f32[2,4])";
  EXPECT_EQ(autocast(header + " {\n  %h = scan(%w, %h0)" + loop),
            header + R"( -> (f32[2,4]) {
  %0 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = scan(%w, %0, %h0))" + after);
  EXPECT_EQ(autocast(header + " {\n  %wt = transpose(%w) {perm=[1,0]} : f32[4,4]\n  %h = scan(%wt, %h0)" + loop),
            header + R"( -> (f32[2,4]) {
  %wt = transpose(%w) {perm=[1, 0]} : f32[4,4]
  %0 = cast(%wt) {dtype=bf16} : bf16[4,4]
  %h = scan(%wt, %0, %h0))" + after);
}

// Nested loops: the inner body is autocast, its weight hoisted out of the inner loop and
// then, being an outer const too, out of the outer one.
TEST(AutocastTest, NestedLoopWeightIsCastOnceOutsideBoth) {
  EXPECT_EQ(autocast(R"(graph @f(%w: f32[4,4] {param}, %h0: f32[2,4]) {
  %h = scan(%w, %h0) {carries=1, consts=1, length=3} : f32[2,4] ({
    ^outer(%w1: f32[4,4], %h1: f32[2,4]):
      %g = scan(%w1, %h1) {carries=1, consts=1, length=2} : f32[2,4] ({
        ^inner(%w2: f32[4,4], %h2: f32[2,4]):
          %m = matmul(%h2, %w2) : f32[2,4]
          %n = tanh(%m) : f32[2,4]
          return %n
      })
      return %g
  })
  return %h
})"),
            R"(graph @f(%w: f32[4,4] {param}, %h0: f32[2,4]) -> (f32[2,4]) {
  %0 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = scan(%0, %h0) {carries=1, consts=1, length=3} : f32[2,4] ({
    ^outer(%w1: bf16[4,4], %h1: f32[2,4]):
      %g = scan(%w1, %h1) {carries=1, consts=1, length=2} : f32[2,4] ({
        ^inner(%w2: bf16[4,4], %h2: f32[2,4]):
          %0 = cast(%h2) {dtype=bf16} : bf16[2,4]
          %m = matmul(%0, %w2) : bf16[2,4]
          %n = tanh(%m) : bf16[2,4]
          %2 = cast(%n) {dtype=f32} : f32[2,4]
          return %2
      })
      return %g
  })
  return %h
}
)");
}

// An xs the pass makes low (the input projection x·U, one product before the loop, as
// the GRU and LSTM modules compute it) goes into the loop low: the body's parameter takes
// bf16, the gate's add runs in bf16, nothing is widened to f32 for the loop.
TEST(AutocastTest, LoopXsComputedLowGoesInLow) {
  EXPECT_EQ(autocast(R"(graph @f(%w: f32[4,4] {param}, %u: f32[3,4] {param}, %h0: f32[2,4], %x: f32[5,2,3]) {
  %xu = matmul(%x, %u) : f32[5,2,4]
  %h = scan(%w, %h0, %xu) {carries=1, consts=1, length=5} : f32[2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4], %g1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %a = add(%m, %g1) : f32[2,4]
      %n = sigmoid(%a) : f32[2,4]
      %p = mul(%n, %h1) : f32[2,4]
      return %p
  })
  return %h
})"),
            R"(graph @f(%w: f32[4,4] {param}, %u: f32[3,4] {param}, %h0: f32[2,4], %x: f32[5,2,3]) -> (f32[2,4]) {
  %0 = cast(%x) {dtype=bf16} : bf16[5,2,3]
  %1 = cast(%u) {dtype=bf16} : bf16[3,4]
  %xu = matmul(%0, %1) : bf16[5,2,4]
  %2 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = scan(%2, %h0, %xu) {carries=1, consts=1, length=5} : f32[2,4] ({
    ^cell(%w1: bf16[4,4], %h1: f32[2,4], %g1: bf16[2,4]):
      %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
      %m = matmul(%0, %w1) : bf16[2,4]
      %a = add(%m, %g1) : bf16[2,4]
      %n = sigmoid(%a) : bf16[2,4]
      %2 = cast(%n) {dtype=f32} : f32[2,4]
      %p = mul(%2, %h1) : f32[2,4]
      return %p
  })
  return %h
}
)");
}

// passes/autocast.h's loop example.
TEST(AutocastTest, HeadersLoopExample) {
  EXPECT_EQ(autocast(R"(graph @f(%w: f32[4,4] {param}, %h0: f32[2,4]) {
  %h = scan(%w, %h0) {carries=1, consts=1, length=5} : f32[2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %n = tanh(%m) : f32[2,4]
      return %n
  })
  return %h
})"),
            R"(graph @f(%w: f32[4,4] {param}, %h0: f32[2,4]) -> (f32[2,4]) {
  %0 = cast(%w) {dtype=bf16} : bf16[4,4]
  %h = scan(%0, %h0) {carries=1, consts=1, length=5} : f32[2,4] ({
    ^cell(%w1: bf16[4,4], %h1: f32[2,4]):
      %0 = cast(%h1) {dtype=bf16} : bf16[2,4]
      %m = matmul(%0, %w1) : bf16[2,4]
      %n = tanh(%m) : bf16[2,4]
      %2 = cast(%n) {dtype=f32} : f32[2,4]
      return %2
  })
  return %h
}
)");
}

// A loop with no contraction in its body is left as it is.
TEST(AutocastTest, LoopWithoutContractionsIsLeftAlone) {
  EXPECT_EQ(autocast(R"(graph @f(%h0: f32[2,4]) {
  %h = scan(%h0) {carries=1, length=3} : f32[2,4] ({
    ^cell(%h1: f32[2,4]):
      %n = tanh(%h1) : f32[2,4]
      return %n
  })
  return %h
})"),
            R"(graph @f(%h0: f32[2,4]) -> (f32[2,4]) {
  %h = scan(%h0) {carries=1, length=3} : f32[2,4] ({
    ^cell(%h1: f32[2,4]):
      %n = tanh(%h1) : f32[2,4]
      return %n
  })
  return %h
}
(no change)
)");
}

// The table's classes agree with the op categories where those decide: creation and
// state ops, bools and casts are untouched, contractions that multiply run in low.
TEST(AutocastTest, TableAgreesWithTheOpCategories) {
  for (Op op : all_ops()) {
    const OpInfo& info = op_info(op);
    const AutocastClass c = autocast_class(op);
    if (info.category == OpCategory::Creation || info.category == OpCategory::State ||
        info.math == MathClass::Logical || info.math == MathClass::Cast) {
      EXPECT_EQ(c, AutocastClass::None) << info.name;
    }
    if (info.category == OpCategory::Movement) {
      EXPECT_NE(c, AutocastClass::Low) << info.name;
      EXPECT_NE(c, AutocastClass::F32) << info.name;
    }
    if (c == AutocastClass::Low) {
      EXPECT_EQ(info.category, OpCategory::Contraction) << info.name;
    }
  }
  EXPECT_EQ(autocast_class_name(autocast_class(Op::Matmul)), "low");
  EXPECT_EQ(autocast_class_name(autocast_class(Op::Softmax)), "f32");
}

}  // namespace autocast_test
}  // namespace
}  // namespace weft

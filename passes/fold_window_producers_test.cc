#include "passes/fold_window_producers.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {

// Runs the pass on `text` and checks that every output keeps its values (reference
// interpreter, random inputs); returns whether the pass changed the graph.
bool folds_with_same_values(std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "f.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<Tensor> inputs = testing::random_inputs(*g, /*seed=*/3, -2, 2);
  auto before = reference::run(*g, inputs);
  FoldWindowProducersPass pass;
  StatusOr<bool> changed = pass.run(*g);
  EXPECT_TRUE(changed.ok());
  auto after = reference::run(*g, inputs);
  EXPECT_TRUE(before.ok() && after.ok());
  for (size_t o = 0; o < before->outputs.size(); ++o) {
    std::string why;
    EXPECT_TRUE(all_close(after->outputs[o], before->outputs[o], 1e-6, &why)) << "output " << o << ": " << why;
  }
  return *changed;
}

// A cell's gate pre-activations (a [4,16] sum with a [16] bias and a scalar) read through
// two column windows: the sum is computed in each window from windows of its operands.
constexpr char kCell[] = R"(graph @f(%c: f32[4,16], %b: f32[16], %s: f32[], %h: f32[4,8]) {
  %pre = fused(%c, %b, %s) : f32[4,16] ({
    ^body(%0: f32[4,16], %1: f32[16], %2: f32[]):
      %t0 = add(%0, %1) : f32[4,16]
      %t1 = mul(%t0, %2) : f32[4,16]
      return %t1
  })
  %y = fused(%pre, %h, %pre) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,8], %2: f32[4,16]):
      %3 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %4 = slice(%2) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %t0 = sigmoid(%3) : f32[4,8]
      %t1 = mul(%t0, %1) : f32[4,8]
      %t2 = add(%t1, %4) : f32[4,8]
      return %t2
  })
  return %y
})";

TEST(FoldWindowProducersTest, ASumReadThroughWindowsIsComputedInItsReader) {
  FoldWindowProducersPass pass;
  EXPECT_EQ(run_pass_on_text(pass, kCell), R"(graph @f(%c: f32[4,16], %b: f32[16], %s: f32[], %h: f32[4,8]) -> (f32[4,8]) {
  %y = fused(%c, %b, %s, %h, %c, %b, %s) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[16], %2: f32[], %3: f32[4,8], %4: f32[4,16], %5: f32[16], %6: f32[]):
      %7 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %8 = slice(%1) {start=[0], stop=[8]} : f32[8]
      %9 = add(%7, %8) : f32[4,8]
      %10 = mul(%9, %2) : f32[4,8]
      %11 = slice(%4) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %12 = slice(%5) {start=[8], stop=[16]} : f32[8]
      %13 = add(%11, %12) : f32[4,8]
      %14 = mul(%13, %6) : f32[4,8]
      %t0 = sigmoid(%10) : f32[4,8]
      %t1 = mul(%t0, %3) : f32[4,8]
      %t2 = add(%t1, %14) : f32[4,8]
      return %t2
  })
  return %y
}
)");
  EXPECT_TRUE(folds_with_same_values(kCell));
}

// A contraction's epilogue read through windows: the GEMM stays (a plain matmul whose
// result C the readers read through windows, as the loop's saved C is read whole); the
// epilogue's x·W_ihᵀ operand is itself read through a window of a wider value, whose
// start the readers' windows add to.
constexpr char kGemm[] = R"(graph @f(%h: f32[4,6], %w: f32[16,6], %x: f32[4,20]) {
  %pre, %c = fused(%h, %w, %x) {kind="contraction"} : f32[4,16], f32[4,16] ({
    ^body(%0: f32[4,6], %1: f32[16,6], %2: f32[4,20]):
      %t0 = matmul(%0, %1) {transpose_b=true} : f32[4,16]
      %3 = slice(%2) {start=[0, 4], stop=[4, 20]} : f32[4,16]
      %t1 = add(%t0, %3) : f32[4,16]
      return %t1, %t0
  })
  %y = fused(%pre, %pre) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,16]):
      %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %3 = slice(%1) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %t0 = mul(%2, %3) : f32[4,8]
      return %t0
  })
  return %y, %c
})";

TEST(FoldWindowProducersTest, AContractionsEpilogueMovesIntoItsReaders) {
  FoldWindowProducersPass pass;
  EXPECT_EQ(run_pass_on_text(pass, kGemm), R"(graph @f(%h: f32[4,6], %w: f32[16,6], %x: f32[4,20]) -> (f32[4,8], f32[4,16]) {
  %0 = matmul(%h, %w) {transpose_b=true} : f32[4,16]
  %y = fused(%0, %x, %0, %x) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,20], %2: f32[4,16], %3: f32[4,20]):
      %4 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %5 = slice(%1) {start=[0, 4], stop=[4, 12]} : f32[4,8]
      %6 = add(%4, %5) : f32[4,8]
      %7 = slice(%2) {start=[0, 8], stop=[4, 16]} : f32[4,8]
      %8 = slice(%3) {start=[0, 12], stop=[4, 20]} : f32[4,8]
      %9 = add(%7, %8) : f32[4,8]
      %t0 = mul(%6, %9) : f32[4,8]
      return %t0
  })
  return %y, %0
}
)");
  EXPECT_TRUE(folds_with_same_values(kGemm));
}

// The reader's body of kCell with other windows: one window read twice (two inputs over
// the same columns), overlapping windows, K read whole beside a window, a window
// broadcast in its reader (a [4,1] column of K scaling a [4,8] value: K's element
// computed 8 times).
TEST(FoldWindowProducersTest, NotFoldedWhenAnElementWouldBeComputedTwice) {
  constexpr char kProducer[] = R"(graph @f(%c: f32[4,16], %b: f32[16], %h: f32[4,8]) {
  %pre = fused(%c, %b) : f32[4,16] ({
    ^body(%0: f32[4,16], %1: f32[16]):
      %t0 = add(%0, %1) : f32[4,16]
      return %t0
  })
)";
  for (const char* reader : {
           R"(  %y = fused(%pre, %pre) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,16]):
      %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %3 = slice(%1) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %t0 = mul(%2, %3) : f32[4,8]
      return %t0
  })
  return %y
})",
           R"(  %y = fused(%pre, %pre) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,16]):
      %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %3 = slice(%1) {start=[0, 4], stop=[4, 12]} : f32[4,8]
      %t0 = mul(%2, %3) : f32[4,8]
      return %t0
  })
  return %y
})",
           R"(  %y = fused(%pre, %h) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,8]):
      %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %t0 = mul(%2, %1) : f32[4,8]
      return %t0
  })
  %s = fused(%pre) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,16]):
      %t0 = sum(%0) : f32[]
      return %t0
  })
  return %y, %s
})",
           R"(  %y = fused(%pre, %h) : f32[4,8] ({
    ^body(%0: f32[4,16], %1: f32[4,8]):
      %2 = slice(%0) {start=[0, 3], stop=[4, 4]} : f32[4,1]
      %t0 = mul(%2, %1) : f32[4,8]
      return %t0
  })
  return %y
})"}) {
    const std::string text = std::string(kProducer) + reader;
    SCOPED_TRACE(text);
    FoldWindowProducersPass pass;
    const std::string out = run_pass_on_text(pass, text);
    EXPECT_NE(out.find("(no change)"), std::string::npos) << out;
  }
}

// K stored (a graph output: a loop body's ys, saved for the backward) and read through
// two windows that tile it: computed in its reader, which also returns K's two windows;
// their concat is the output. A reduction reading K whole after the reader reads the
// concat.
TEST(FoldWindowProducersTest, AStoredValueIsComputedInItsReaderWhichStoresItsWindows) {
  auto ending = [](const char* tail) {
    std::string text = kCell;
    return text.replace(text.find("  return %y\n"), 12, tail);
  };
  const std::string stored = ending("  return %y, %pre\n");
  FoldWindowProducersPass pass;
  // The reader's body is kCell's folded one (above), returning K's windows too.
  const std::string folded = run_pass_on_text(pass, stored);
  for (const char* line : {"  %y, %0, %1 = fused(%c, %b, %s, %h, %c, %b, %s) : f32[4,8], f32[4,8], f32[4,8] ({\n",
                           "      %t2 = add(%t1, %14) : f32[4,8]\n      return %t2, %10, %14\n  })\n"
                           "  %2 = concat(%0, %1) {axis=1} : f32[4,16]\n  return %y, %2\n}\n"}) {
    EXPECT_NE(folded.find(line), std::string::npos) << line << "\nnot in\n" << folded;
  }
  EXPECT_TRUE(folds_with_same_values(stored));
  const std::string read_after = ending(R"(  %total = fused(%pre) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,16]):
      %t0 = sum(%0) : f32[]
      return %t0
  })
  return %y, %total
)");
  const std::string out = run_pass_on_text(pass, read_after);
  EXPECT_NE(out.find("  %2 = concat(%0, %1) {axis=1} : f32[4,16]\n  %total = fused(%2)"), std::string::npos) << out;
  EXPECT_TRUE(folds_with_same_values(read_after));
  // Read whole before the window reader: the concat, after the reader, would come too late.
  std::string read_before = ending("  return %y, %total\n");
  read_before.insert(read_before.find("  %y = fused"), R"(  %total = fused(%pre) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,16]):
      %t0 = sum(%0) : f32[]
      return %t0
  })
)");
  const std::string kept = run_pass_on_text(pass, read_before);
  EXPECT_NE(kept.find("(no change)"), std::string::npos) << kept;
}

// K needed whole where its windows leave a gap (a graph output read through one window
// of two), or a carry's next value (an assign reads it: the concat would be a copy).
TEST(FoldWindowProducersTest, NotFoldedWhenAStoredValueIsNotTiledByItsWindows) {
  for (const char* tail : {"  return %y, %pre\n}", "  assign(%st, %pre)\n  return %y\n}"}) {
    const std::string text = std::string(R"(graph @f(%c: f32[4,16], %b: f32[16], %st: f32[4,16] {state}) {
  %pre = fused(%c, %b) : f32[4,16] ({
    ^body(%0: f32[4,16], %1: f32[16]):
      %t0 = add(%0, %1) : f32[4,16]
      return %t0
  })
  %y = fused(%pre) : f32[4,8] ({
    ^body(%0: f32[4,16]):
      %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
      %t0 = neg(%2) : f32[4,8]
      return %t0
  })
)") + tail;
    SCOPED_TRACE(text);
    FoldWindowProducersPass pass;
    const std::string out = run_pass_on_text(pass, text);
    EXPECT_NE(out.find("(no change)"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace weft

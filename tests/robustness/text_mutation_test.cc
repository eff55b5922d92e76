// Malformed `.wir` text never crashes weft: thousands of seeded mutants of valid graphs
// (every truncation, every number replaced by a nasty one, every op swapped for every
// other, random byte and token edits) go through parse_graph, the default pipeline up
// to infer-types, the verifier and, when small, the reference interpreter. Each ends in
// success or one error with a message and, for parse errors, a FILE:LINE:COL inside the
// text. A failure prints the mutant as a C++ literal; a crash prints it from a signal
// handler (mutator.h, CrashContext).
#include <gtest/gtest.h>

#include <string>

#include "ir/op.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/reference/interpreter.h"
#include "tests/robustness/graph_checks.h"
#include "tests/robustness/mutator.h"
#include "tests/robustness/seed_graphs.h"

namespace weft::robustness {
namespace {
namespace text_mutation_test {  // this file's names, apart in its package's unity test

constexpr int kRandomMutantsPerSeed = 2500;

// Words a mutant may gain: every op (wrong arity, missing attributes), dtypes, keywords,
// attribute names, undefined values, broken strings and bytes no lexer expects.
std::vector<std::string> wir_dictionary() {
  std::vector<std::string> words;
  for (Op op : all_ops()) words.emplace_back(op_name(op));
  for (DType d : kAllDTypes) words.emplace_back(dtype_name(d));
  for (const char* w :
       {"graph", "return", "loc", "unknown", "param", "state", "data", "true", "false", "axis",
        "axes", "shape", "perm", "kernel", "stride", "padding", "dtype", "depth", "keepdims",
        "%undefined", "%x", "%", "@", "@g", "%\"\"", "\"", "\"unterminated", "\"\\q\"", "->",
        "f32[]", "f32[-1]", "f32[99999999999999999999]", "i64[1000000000000,1000000000000]",
        "[]", "[1,]", "{}", "{axis=}", ":", "::", "()",
        "\xff\xfe", "\xc3\x28", "\xe2\x82", "\xf0\x9f\x98\x80", "\r", "\t", "#", "\\"}) {
    words.emplace_back(w);
  }
  words.emplace_back(std::string(1, '\0'));
  return words;
}

void check_text(Tally& tally, const std::string& label, const std::string& text,
                std::string_view filename) {
  ++tally.inputs;
  CrashContext context(label, text);
  try {
    StatusOr<Graph> g = parse_graph(text, filename);
    if (!g.ok()) {
      tally.check_parse_error(label, text, g.error(), filename, /*need_position=*/true);
      return;
    }
    tally.check_graph(label, text, std::move(*g));
  } catch (const std::exception& e) {
    tally.fail(label, text, std::string("exception escaped from parse_graph: ") + e.what());
  }
}

TEST(TextMutationTest, SeedsAreValid) {
  Tally tally("seeds");
  for (const SeedGraph& seed : seed_graphs()) {
    StatusOr<Graph> g = parse_graph(seed.text, seed.name);
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    tally.check_graph(seed.name, seed.text, std::move(*g));
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

TEST(TextMutationTest, EveryTruncation) {
  Tally tally("truncations");
  for (const SeedGraph& seed : seed_graphs()) {
    for (size_t n = 0; n < seed.text.size(); ++n) {
      check_text(tally, std::string(seed.name) + " truncated to " + std::to_string(n) + " bytes",
                 std::string(seed.text.substr(0, n)), seed.name);
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

// Each number in a seed (dims, attribute values, line numbers) replaced by each nasty
// number in turn: huge, negative, -1, int64 limits, float specials.
TEST(TextMutationTest, EveryNumberReplaced) {
  Tally tally("numbers replaced");
  for (const SeedGraph& seed : seed_graphs()) {
    std::string text(seed.text);
    for (size_t i = 0; i < text.size(); ++i) {
      bool starts = (text[i] >= '0' && text[i] <= '9') &&
                    (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                                 text[i - 1] == '_' || text[i - 1] == '.' || text[i - 1] == '-'));
      if (!starts) continue;
      size_t end = i;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                   text[end] == '.' || text[end] == '-')) {
        ++end;
      }
      for (const std::string& n : nasty_numbers()) {
        std::string mutant = text.substr(0, i) + n + text.substr(end);
        check_text(tally, std::string(seed.name) + " number at byte " + std::to_string(i) +
                              " -> " + n, mutant, seed.name);
      }
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

// Each statement's op replaced by every other op: wrong arity, missing or unknown
// attributes, results where none are allowed.
TEST(TextMutationTest, EveryOpReplaced) {
  Tally tally("ops replaced");
  for (const SeedGraph& seed : seed_graphs()) {
    std::string text(seed.text);
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if (!(std::isalpha(static_cast<unsigned char>(text[i])) && (i == 0 || text[i - 1] == ' '))) continue;
      size_t end = i;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      if (end >= text.size() || text[end] != '(' || !parse_op(text.substr(i, end - i))) continue;
      for (Op op : all_ops()) {
        std::string mutant = text.substr(0, i) + std::string(op_name(op)) + text.substr(end);
        check_text(tally, std::string(seed.name) + " op at byte " + std::to_string(i) + " -> " +
                              std::string(op_name(op)), mutant, seed.name);
      }
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

TEST(TextMutationTest, RandomMutations) {
  Tally tally("random mutations");
  for (size_t s = 0; s < seed_graphs().size(); ++s) {
    const SeedGraph& seed = seed_graphs()[s];
    Mutator mutator(/*seed=*/static_cast<uint32_t>(1000 + s), wir_dictionary());
    for (int i = 0; i < kRandomMutantsPerSeed; ++i) {
      check_text(tally, std::string(seed.name) + " mutant " + std::to_string(i) + " (seed " +
                            std::to_string(1000 + s) + ")",
                 mutator.mutate(seed.text), seed.name);
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

// Inputs no mutation of a seed reaches in a few edits.
TEST(TextMutationTest, PathologicalInputs) {
  Tally tally("pathological");
  const std::string head = "graph @g(%x: f32[2]) {\n  %y = ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"only NUL", std::string(1, '\0')},
      {"NUL in the middle", "graph @g(%x: f32[2])" + std::string(1, '\0') + " { return %x }"},
      {"non-UTF-8", "graph @\xff\xfe(%x: f32[2]) { return %x }"},
      {"BOM", "\xef\xbb\xbfgraph @g(%x: f32[2]) { return %x }"},
      {"deep brackets", head + "full() {shape=" + std::string(200000, '[') + "}\n  return %y\n}\n"},
      {"deep parens", head + std::string(200000, '(') + "\n}\n"},
      {"deep braces", head + "neg(%x) " + std::string(200000, '{') + "\n}\n"},
      {"long name", "graph @g(%" + std::string(1 << 20, 'a') + ": f32[2]) { return %x }"},
      {"long string", head + "neg(%x) loc(\"" + std::string(1 << 20, 's') + "\":1:1)\n  return %y\n}\n"},
      {"many dims", "graph @g(%x: f32[" + [] {
         std::string dims = "1";
         for (int i = 0; i < 100000; ++i) dims += ",1";
         return dims;
       }() + "]) {\n  %y = neg(%x)\n  return %y\n}\n"},
      {"dims overflowing numel",
       "graph @g(%x: f32[4294967296,4294967296,4]) {\n  %y = neg(%x)\n  return %y\n}\n"},
      {"numel wraps to a small value",
       "graph @g() {\n  %y = full() {shape=[4294967296,4294967296,1], value=1.0}\n  return %y\n}\n"},
      {"huge reshape", head + "reshape(%x) {shape=[-1,4611686018427387904,4]}\n  return %y\n}\n"},
      {"huge pad", head + "pad(%x) {low=[9223372036854775807], high=[9223372036854775807]}\n  return %y\n}\n"},
      {"huge slice", head + "slice(%x) {start=[-9223372036854775808], stop=[9223372036854775807], step=[9223372036854775807]}\n  return %y\n}\n"},
      {"huge axis", head + "sum(%x) {axes=[-9223372036854775808]}\n  return %y\n}\n"},
      {"huge one_hot", "graph @g(%i: i64[4294967296]) {\n  %y = one_hot(%i) {depth=4294967296}\n  return %y\n}\n"},
      {"huge conv stride",
       "graph @g(%x: f32[1,1,4,4], %w: f32[1,1,2,2]) {\n  %y = conv(%x, %w) {stride=[9223372036854775807,9223372036854775807], padding=[4611686018427387903,4611686018427387903], dilation=[9223372036854775807,1]}\n  return %y\n}\n"},
      {"huge pool",
       "graph @g(%x: f32[1,1,4,4]) {\n  %y = max_pool2d(%x) {kernel=[9223372036854775807,9223372036854775807], padding=[4611686018427387903,4611686018427387903]}\n  return %y\n}\n"},
      {"huge broadcast_to", head + "broadcast_to(%x) {shape=[9223372036854775807,9223372036854775807,2]}\n  return %y\n}\n"},
      {"huge iota", "graph @g() {\n  %y = iota() {shape=[3037000500,3037000500], axis=0}\n  return %y\n}\n"},
      {"many statements", [] {
         std::string s = "graph @g(%x: f32[2]) {\n";
         std::string prev = "%x";
         for (int i = 0; i < 20000; ++i) {
           s += "  %v" + std::to_string(i) + " = neg(" + prev + ")\n";
           prev = "%v" + std::to_string(i);
         }
         return s + "  return " + prev + "\n}\n";
       }()},
      {"many operands", [] {
         std::string s = "graph @g(%x: f32[2]) {\n  %y = concat(%x";
         for (int i = 0; i < 20000; ++i) s += ", %x";
         return s + ") {axis=0}\n  return %y\n}\n";
       }()},
  };
  for (const auto& [label, text] : cases) check_text(tally, label, text, "p.wir");
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

// A type that fits in int64 but not in memory: `weftc run` must report it, not abort on
// std::bad_alloc. (ASan refuses such allocations by aborting, by design, so the check
// only runs in normal builds.)
TEST(TextMutationTest, HugeTensorIsAnErrorNotAnAbort) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "ASan aborts on allocations beyond its maximum size";
#endif
  StatusOr<Graph> g = parse_graph(
      "graph @g() {\n  %y = full() {shape=[1000000000000], value=1.0}\n  return %y\n}\n", "h.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  try {
    StatusOr<reference::RunResult> r = reference::run(*g, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(),
              "h.wir:2:3: error: full: cannot allocate its result f32[1000000000000] "
              "(4000000000000 bytes)");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "exception escaped from reference::run: " << e.what();
  }
}

// #28: the same for a loop's stacked ys (2^40 slots of f32[4]: 16 TiB), which the
// interpreter allocated without the check and aborted on.
TEST(TextMutationTest, AHugeLoopOutputIsAnErrorNotAnAbort) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "ASan aborts on allocations beyond its maximum size";
#endif
  StatusOr<Graph> g = parse_graph(
      "graph @g(%h0: f32[4]) {\n  %h, %ys = scan(%h0) {carries=1, length=1099511627776} : f32[4], "
      "f32[1099511627776,4] ({\n    ^c(%c: f32[4]):\n      %n = neg(%c) : f32[4]\n      return %n, %n\n  })\n"
      "  return %ys\n}\n",
      "h.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  try {
    StatusOr<reference::RunResult> r = reference::run(*g, {Tensor(Type{DType::f32, Shape({4})})});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(),
              "h.wir:2:3: error: scan: cannot allocate its result f32[1099511627776,4] (17592186044416 bytes)");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "exception escaped from reference::run: " << e.what();
  }
}

// Sizes beyond int64 are a user error of infer-types, not a wrapped Shape::numel.
TEST(TextMutationTest, SizeOverflowIsAnError) {
  StatusOr<Graph> g = parse_graph(
      "graph @g(%x: f32[4294967296,4294967296,4]) {\n  %y = neg(%x)\n  return %y\n}\n", "o.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  StatusOr<bool> typed = default_pipeline().run_until(*g, "infer-types");
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().to_string(),
            "o.wir:1:10: error: graph input %x has type f32[4294967296,4294967296,4], whose "
            "size in bytes does not fit in 64 bits; check its dims");

  g = parse_graph("graph @g(%i: i64[3]) {\n  %y = one_hot(%i) {depth=4611686018427387904}\n"
                  "  return %y\n}\n", "o.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  typed = default_pipeline().run_until(*g, "infer-types");
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().to_string(),
            "o.wir:2:3: error: one_hot: result %y has type f32[3,4611686018427387904], whose "
            "size in bytes does not fit in 64 bits; check its dims");
}

// A huge slice step once overflowed `(len + step - 1) / step` into a dim of -1.
TEST(TextMutationTest, HugeSliceStep) {
  StatusOr<Graph> g = parse_graph(
      "graph @g(%x: f32[2]) {\n  %y = slice(%x) {start=[-9223372036854775808], "
      "stop=[9223372036854775807], step=[9223372036854775807]}\n  return %y\n}\n", "s.wir");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*g, "infer-types").ok());
  EXPECT_EQ(g->type(g->outputs()[0]).to_string(), "f32[1]");
  // The slice kernel once computed the same overflowing expression.
  StatusOr<reference::RunResult> r =
      reference::run(*g, {Tensor::from_vector<float>({2}, {5, 6})});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[0].type().to_string(), "f32[1]");
  EXPECT_EQ(r->outputs[0].data<float>()[0], 5);
}

/// The first error of parsing `text` and running the pipeline up to infer-types.
std::string infer_error(std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "h.wir");
  if (!g.ok()) return "parse " + g.error().to_string();
  StatusOr<bool> typed = default_pipeline().run_until(*g, "infer-types");
  return typed.ok() ? "ok" : typed.error().to_string();
}

// Overflows that UBSan found in the shape rules, each now a user error naming the op,
// the attribute and its value.
TEST(TextMutationTest, HugeAttributesAreErrors) {
  // pad once wrapped 2 + 2 * (2^63 - 1) to 0 and typed this f32[0].
  EXPECT_EQ(infer_error("graph @g(%x: f32[2]) {\n  %y = pad(%x) {low=[9223372036854775807], "
                        "high=[9223372036854775807]}\n  return %y\n}\n"),
            "h.wir:2:3: error: pad: low [9223372036854775807] and high [9223372036854775807] "
            "overflow int64 on axis 0 of operand f32[2] (low + 2 + high); check the padding");
  EXPECT_EQ(infer_error("graph @g(%x: f32[1,1,4,4]) {\n  %y = max_pool2d(%x) {kernel=[2, 2], "
                        "padding=[9223372036854775807, 0]}\n  return %y\n}\n"),
            "h.wir:2:3: error: max_pool2d: padding [9223372036854775807, 0] must be at most "
            "half of kernel [2, 2]");
  EXPECT_EQ(infer_error("graph @g(%x: f32[1,1,8,8], %w: f32[1,1,3,3]) {\n  %y = conv(%x, %w) "
                        "{dilation=[1, 9223372036854775807]}\n  return %y\n}\n"),
            "h.wir:2:3: error: conv: the window of kernel [3, 3] with dilation [1, "
            "9223372036854775807] spans more than int64 can hold on spatial axis 1 (dilation * "
            "(kernel - 1) + 1 overflows); check dilation and the kernel size");
  EXPECT_EQ(infer_error("graph @g(%x: f32[2]) {\n  %y = reshape(%x) {shape=[4294967296, "
                        "4294967296, 0]}\n  return %y\n}\n"),
            "h.wir:2:3: error: reshape: shape [4294967296, 4294967296, 0] is too large: its "
            "element count overflows int64");
  EXPECT_EQ(infer_error("graph @g() {\n  %y = iota() {shape=[0, 4294967296, 4294967296], "
                        "axis=0}\n  return %y\n}\n"),
            "h.wir:2:3: error: iota: shape [0, 4294967296, 4294967296] is too large: its "
            "element count overflows int64");
}

}  // namespace text_mutation_test
}  // namespace
}  // namespace weft::robustness

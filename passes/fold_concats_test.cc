#include "passes/fold_concats.h"

#include <gtest/gtest.h>

#include "passes/memory_plan.h"
#include "passes/pass_testing.h"

namespace weft {
namespace {
namespace fold_concats_test {  // this file's names, apart in its package's unity test

Graph parse(std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : Graph("empty");
}

// Two gate gradients written side by side: column windows [0,0] and [0,8] of %c, the
// first kernel's second result (read elsewhere) left as it is.
constexpr char kGates[] = R"(graph @f(%x: f32[4,8], %y: f32[4,8]) {
  %a, %s = fused(%x) : f32[4,8], f32[4,8] ({
    ^body(%0: f32[4,8]):
      %t0 = tanh(%0) : f32[4,8]
      %t1 = neg(%0) : f32[4,8]
      return %t0, %t1
  })
  %b = fused(%y, %s) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %d = exp(%c) : f32[4,16]
  return %d
})";

TEST(FoldConcatsTest, PartsOfElementwiseKernelsAreStored) {
  const Graph g = parse(kGates);
  const std::vector<StoredConcat> stored = stored_concats(g);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(g.value(stored[0].result).name, "c");
  ASSERT_EQ(stored[0].parts.size(), 2u);
  EXPECT_EQ(g.value(stored[0].parts[0]).name, "a");
  EXPECT_EQ(g.value(stored[0].parts[1]).name, "b");
  EXPECT_EQ(stored[0].first_writer, 0);
  const Node& concat = g.node(g.value(stored[0].result).node);
  EXPECT_EQ(part_start(g, concat, 0), (IntList{0, 0}));
  EXPECT_EQ(part_start(g, concat, 1), (IntList{0, 8}));
}

// Operands read elsewhere too (%a by an add, %d a graph output) are stored as well, by
// their kernels writing them twice, and are no parts; %b, read by two stored concats
// alone, is a part of the second (no buffer of its own) and a window of the first. The
// first writer is %a's kernel.
TEST(FoldConcatsTest, OperandsReadElsewhereAreStoredTooButAreNoParts) {
  const Graph g = parse(R"(graph @f(%x: f32[4,8]) {
  %a = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = tanh(%0) : f32[4,8]  return %t0 })
  %b = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = neg(%0) : f32[4,8]  return %t0 })
  %d = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = exp(%0) : f32[4,8]  return %t0 })
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %e = add(%a, %a) : f32[4,8]
  %c2 = concat(%b, %d) {axis=0} : f32[8,8]
  return %c, %e, %c2, %d
})");
  const std::vector<StoredConcat> stored = stored_concats(g);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_TRUE(stored[0].parts.empty());
  EXPECT_EQ(stored[0].first_writer, 0);
  ASSERT_EQ(stored[1].parts.size(), 1u);
  EXPECT_EQ(g.value(stored[1].parts[0]).name, "b");
  EXPECT_EQ(stored[1].first_writer, 1);
  PlanOptions options;
  options.stored_concats = stored;
  StatusOr<MemoryPlan> plan = plan_memory(g, options);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_TRUE(verify_plan(g, *plan).ok()) << verify_plan(g, *plan).to_string();
}

// A GRU's backward step: %r and %z (its r and z gradients) are read by two concats alone,
// the gates' gradient for dh·W_hh (%dg, also read by the matmul) and the one stacked for
// the weight gradients (%st): each is a part of %st, the later one, and a window of %dg,
// so its kernel stores it only in windows; the two concats' buffers differ and are both
// live from that kernel on. With %st not stored (its third operand %x is an input), they
// are no parts: stored in their buffers and in %dg's windows.
TEST(FoldConcatsTest, AnOperandOfSeveralStoredConcatsIsAPartOfTheLast) {
  constexpr char kGru[] = R"(graph @f(%x: f32[4,8], %w: f32[24,8]) {
  %r, %z, %n, %m = fused(%x) : f32[4,8], f32[4,8], f32[4,8], f32[4,8] ({
    ^body(%0: f32[4,8]):
      %t0 = tanh(%0) : f32[4,8]
      %t1 = neg(%0) : f32[4,8]
      %t2 = exp(%0) : f32[4,8]
      %t3 = mul(%0, %0) : f32[4,8]
      return %t0, %t1, %t2, %t3
  })
  %dg = concat(%r, %z, %n) {axis=1} : f32[4,24]
  %dh = matmul(%dg, %w) : f32[4,8]
  %st = concat(%r, %z, %m) {axis=1} : f32[4,24]
  return %dh, %st
})";
  const Graph g = parse(kGru);
  const auto names = [&](const std::vector<ValueId>& values) {
    std::vector<std::string> out;
    for (ValueId v : values) out.push_back(g.value(v).name);
    return out;
  };
  const std::vector<StoredConcat> stored = stored_concats(g);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(names(stored[0].parts), (std::vector<std::string>{"n"}));
  EXPECT_EQ(names(stored[1].parts), (std::vector<std::string>{"r", "z", "m"}));
  PlanOptions options;
  options.stored_concats = stored;
  StatusOr<MemoryPlan> plan = plan_memory(g, options);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_TRUE(verify_plan(g, *plan).ok()) << verify_plan(g, *plan).to_string();
  const ValueId dg = g.node(1).result(), st = g.node(3).result();
  EXPECT_EQ(plan->offset[stored[1].parts[0]], plan->offset[st]);
  EXPECT_TRUE(plan->offset[dg] >= plan->offset[st] + 384 || plan->offset[dg] + 384 <= plan->offset[st]);

  std::string text = kGru;
  text.replace(text.find("concat(%r, %z, %m)"), 18, "concat(%r, %z, %x)");
  const Graph kept = parse(text);
  const std::vector<StoredConcat> one = stored_concats(kept);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(kept.value(one[0].parts[0]).name, "n");
  EXPECT_EQ(one[0].parts.size(), 1u);
}

// Kernels that store through no windows (merge-updates' members, by node index) make
// their concats plain copies.
TEST(FoldConcatsTest, UnstorableKernelsKeepTheirConcats) {
  const Graph g = parse(kGates);
  EXPECT_TRUE(stored_concats(g, {false, true}).empty());
  EXPECT_EQ(stored_concats(g, {false, false, false}).size(), 1u);
}

// Not stored: an operand of a reduction kernel, a concat assigned to an input, a column
// [4,1] of a [4,2] concat (stride 2 along the kernel's innermost loop), an operand passed
// through a body from its input.
TEST(FoldConcatsTest, OnlyElementwiseResultsStoredWithStrideOne) {
  for (const char* text : {
           R"(graph @f(%x: f32[4,8]) {
  %a = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = tanh(%0) : f32[4,8]  return %t0 })
  %b = fused(%x) {kind="reduction"} : f32[8] ({ ^body(%0: f32[4,8]): %t0 = sum(%0) {axes=[0]} : f32[8]  return %t0 })
  %r = reshape(%b) {shape=[1,8]} : f32[1,8]
  %c = concat(%a, %r) {axis=0} : f32[5,8]
  return %c
})",
           R"(graph @f(%x: f32[4,8], %p: f32[8,8] {state}) {
  %a = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = tanh(%0) : f32[4,8]  return %t0 })
  %b = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = neg(%0) : f32[4,8]  return %t0 })
  %c = concat(%a, %b) {axis=0} : f32[8,8]
  assign(%p, %c)
  return %x
})",
           R"(graph @f(%x: f32[4,1]) {
  %a = fused(%x) : f32[4,1] ({ ^body(%0: f32[4,1]): %t0 = tanh(%0) : f32[4,1]  return %t0 })
  %b = fused(%x) : f32[4,1] ({ ^body(%0: f32[4,1]): %t0 = neg(%0) : f32[4,1]  return %t0 })
  %c = concat(%a, %b) {axis=1} : f32[4,2]
  return %c
})",
           R"(graph @f(%x: f32[4,8]) {
  %a, %p = fused(%x) : f32[4,8], f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = tanh(%0) : f32[4,8]  return %t0, %0 })
  %b = fused(%x) : f32[4,8] ({ ^body(%0: f32[4,8]): %t0 = neg(%0) : f32[4,8]  return %t0 })
  %c = concat(%p, %b) {axis=1} : f32[4,16]
  return %c, %a
})"}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(stored_concats(parse(text)).empty());
  }
}

// The same column window of a 16-wide row in f32[4,16]: stored, its window rows of 8.
TEST(FoldConcatsTest, RowsOfTheConcatAreWindowsToo) {
  const Graph g = parse(R"(graph @f(%x: f32[2,8]) {
  %a = fused(%x) : f32[2,8] ({ ^body(%0: f32[2,8]): %t0 = tanh(%0) : f32[2,8]  return %t0 })
  %b = fused(%x) : f32[2,8] ({ ^body(%0: f32[2,8]): %t0 = neg(%0) : f32[2,8]  return %t0 })
  %c = concat(%a, %b) {axis=0} : f32[4,8]
  return %c
})");
  const std::vector<StoredConcat> stored = stored_concats(g);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(part_start(g, g.node(g.value(stored[0].result).node), 1), (IntList{2, 0}));
}

TEST(FoldConcatsTest, StoreWindowsArePadsIntoTheDestination) {
  const Graph g = parse(kGates);
  const Graph& body = *g.node(0).body;
  const Graph stored = with_store_windows(body, {{0, Type{DType::f32, Shape({4, 16})}, {0, 8}}});
  EXPECT_EQ(print_graph(stored, PrintOptions{.locations = false}),
            R"(graph @body(%0: f32[4,8]) -> (f32[4,16], f32[4,8]) {
  %t0 = tanh(%0) : f32[4,8]
  %t1 = neg(%0) : f32[4,8]
  %1 = pad(%t0) {high=[0, 0], low=[0, 8]} : f32[4,16]
  return %1, %t1
}
)");
  // Stored too, in its own buffer and two windows: extra outputs in the windows' order.
  const Type rows{DType::f32, Shape({8, 8})};
  const Graph twice = with_store_windows(body, {{1, rows, {4, 0}, /*also=*/true}, {1, rows, {0, 0}, /*also=*/true}});
  EXPECT_EQ(print_graph(twice, PrintOptions{.locations = false}),
            R"(graph @body(%0: f32[4,8]) -> (f32[4,8], f32[4,8], f32[8,8], f32[8,8]) {
  %t0 = tanh(%0) : f32[4,8]
  %t1 = neg(%0) : f32[4,8]
  %1 = pad(%t1) {high=[0, 0], low=[4, 0]} : f32[8,8]
  %2 = pad(%t1) {high=[4, 0], low=[0, 0]} : f32[8,8]
  return %t0, %t1, %1, %2
}
)");
}

// The parts lie at the concat's offset, in one buffer of its size live from the first
// part's kernel; nothing else is placed there meanwhile; verify_plan agrees.
TEST(FoldConcatsTest, MemoryPlanGivesThePartsTheConcatsBuffer) {
  const Graph g = parse(kGates);
  PlanOptions options;
  options.stored_concats = stored_concats(g);
  StatusOr<MemoryPlan> plan = plan_memory(g, options);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  const auto value = [&](const char* name) {
    for (ValueId v = 0; v < g.num_values(); ++v) {
      if (g.value(v).name == name) return v;
    }
    return kNoValue;
  };
  const int64_t c = plan->offset[value("c")];
  EXPECT_EQ(plan->offset[value("a")], c);
  EXPECT_EQ(plan->offset[value("b")], c);
  // %s (live while %a is) lies outside the concat's 256 bytes.
  const int64_t s = plan->offset[value("s")];
  EXPECT_TRUE(s >= c + 256 || s + 128 <= c) << s << " in the concat at " << c;
  EXPECT_TRUE(verify_plan(g, *plan).ok()) << verify_plan(g, *plan).to_string();

  // Moved into the concat's bytes while %a is live: an overlap verify_plan reports.
  MemoryPlan broken = *plan;
  broken.offset[value("s")] = c + 128;
  EXPECT_FALSE(verify_plan(g, broken).ok());
  // A part away from its concat's offset.
  broken = *plan;
  broken.offset[value("b")] = c + 64;
  EXPECT_EQ(verify_plan(g, broken).to_string(),
            "error: verify_plan: %b is not at the offset of the concat %c it is stored in");
}

TEST(FoldConcatsTest, PlanRefusesAPartReadAfterItsConcat) {
  const Graph g = parse(kGates);
  PlanOptions options;
  options.stored_concats = {{stored_concats(g)[0].result, {stored_concats(g)[0].parts[0], g.inputs()[0].value}, 0}};
  StatusOr<MemoryPlan> plan = plan_memory(g, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().to_string(),
            "error: memory planning: stored concat %c: a part is not a node result in the arena read last by it, or "
            "is a part twice");
}

}  // namespace fold_concats_test
}  // namespace
}  // namespace weft

#include "passes/schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "passes/pass_testing.h"

namespace weft {
namespace {
namespace schedule_test {  // this file's names, apart in its package's unity test

// Three 1 KiB values computed before any of them is reduced: 3 KiB live at once.
constexpr const char* kWide = R"(graph @f(%x: f32[256]) {
  %a = exp(%x) : f32[256]
  %b = neg(%x) : f32[256]
  %c = tanh(%x) : f32[256]
  %ra = sum(%a) : f32[]
  %rb = sum(%b) : f32[]
  %rc = sum(%c) : f32[]
  %s = add(%ra, %rb) : f32[]
  %t = add(%s, %rc) : f32[]
  return %t
}
)";

Graph parse(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return std::move(g).value();
}

TEST(ScheduleMemoryTest, ReducesEachWideValueBeforeComputingTheNext) {
  ScheduleMemoryPass pass;
  EXPECT_EQ(run_pass_on_text(pass, kWide), R"(graph @f(%x: f32[256]) -> (f32[]) {
  %a = exp(%x) : f32[256]
  %ra = sum(%a) : f32[]
  %b = neg(%x) : f32[256]
  %rb = sum(%b) : f32[]
  %s = add(%ra, %rb) : f32[]
  %c = tanh(%x) : f32[256]
  %rc = sum(%c) : f32[]
  %t = add(%s, %rc) : f32[]
  return %t
}
)");
}

TEST(ScheduleMemoryTest, LowersThePeak) {
  Graph g = parse(kWide);
  EXPECT_EQ(*peak_live_bytes(g), 3 * 1024 + 4);  // %a %b %c, then %ra with them
  ScheduleMemoryPass pass;
  ASSERT_TRUE(*pass.run(g));
  EXPECT_EQ(*peak_live_bytes(g), 1024 + 8);  // one wide value and two scalars
}

TEST(ScheduleMemoryTest, AssignStaysAfterItsValue) {
  ScheduleMemoryPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[256], %w: f32[256] {param}) {
  %a = exp(%x) : f32[256]
  %b = neg(%x) : f32[256]
  %u = mul(%w, %x) : f32[256]
  assign(%w, %u)
  %ra = sum(%a) : f32[]
  %rb = sum(%b) : f32[]
  %t = add(%ra, %rb) : f32[]
  return %t
}
)"),
            R"(graph @f(%x: f32[256], %w: f32[256] {param}) -> (f32[]) {
  %a = exp(%x) : f32[256]
  %ra = sum(%a) : f32[]
  %b = neg(%x) : f32[256]
  %rb = sum(%b) : f32[]
  %t = add(%ra, %rb) : f32[]
  %u = mul(%w, %x) : f32[256]
  assign(%w, %u)
  return %t
}
)");
}

TEST(ScheduleMemoryTest, NoChangeWhenTheOrderIsAlreadyGood) {
  ScheduleMemoryPass pass;
  const char* good = R"(graph @f(%x: f32[256]) -> (f32[]) {
  %a = exp(%x) : f32[256]
  %ra = sum(%a) : f32[]
  %b = neg(%x) : f32[256]
  %rb = sum(%b) : f32[]
  %t = add(%ra, %rb) : f32[]
  return %t
}
)";
  EXPECT_EQ(run_pass_on_text(pass, good), std::string(good) + "(no change)\n");
}

TEST(ScheduleMemoryTest, NoChangeOnAChain) {
  // A chain has a single topological order.
  ScheduleMemoryPass pass;
  const char* chain = R"(graph @f(%x: f32[64]) -> (f32[64]) {
  %a = exp(%x) : f32[64]
  %b = neg(%a) : f32[64]
  %c = tanh(%b) : f32[64]
  return %c
}
)";
  EXPECT_EQ(run_pass_on_text(pass, chain), std::string(chain) + "(no change)\n");
}

// A data-parallel step appends the all_reduce of each gradient after every gradient:
// each moves up to right after its producer (the last layer's gradient first), so its
// bucket can start during the rest of the backward pass.
TEST(ScheduleMemoryTest, AllReducesFollowTheirGradients) {
  ScheduleMemoryPass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[256], %w1: f32[256] {param}, %w2: f32[256] {param}) {
  %g2 = mul(%x, %w1) : f32[256]
  %g1 = mul(%g2, %w2) : f32[256]
  %r1 = all_reduce(%g1) {reduction="mean"} : f32[256]
  %r2 = all_reduce(%g2) {reduction="mean"} : f32[256]
  %u1 = sub(%w1, %r1) : f32[256]
  %u2 = sub(%w2, %r2) : f32[256]
  assign(%w1, %u1)
  assign(%w2, %u2)
  return %g2
}
)"),
            R"(graph @f(%x: f32[256], %w1: f32[256] {param}, %w2: f32[256] {param}) -> (f32[256]) {
  %g2 = mul(%x, %w1) : f32[256]
  %r2 = all_reduce(%g2) {reduction="mean"} : f32[256]
  %g1 = mul(%g2, %w2) : f32[256]
  %r1 = all_reduce(%g1) {reduction="mean"} : f32[256]
  %u1 = sub(%w1, %r1) : f32[256]
  %u2 = sub(%w2, %r2) : f32[256]
  assign(%w1, %u1)
  assign(%w2, %u2)
  return %g2
}
)");
}

// Gradient accumulation's all_reduce reads a predicate too: it moves up to right after
// the later of its operands' producers, never above one (issue 32).
TEST(ScheduleMemoryTest, APredicatedAllReduceFollowsItsLastOperand) {
  ScheduleMemoryPass pass;
  const std::string out = run_pass_on_text(pass, R"(graph @f(%x: f32[256], %w1: f32[256] {param}) {
  %g = mul(%x, %w1) : f32[256]
  %m = sum(%g) : f32[]
  %p = eq(%m, %m) : bool[]
  %r = all_reduce(%g, %p) {reduction="mean"} : f32[256]
  %u = sub(%w1, %r) : f32[256]
  assign(%w1, %u)
  return %m
}
)");
  ASSERT_NE(out.find("%r = all_reduce(%g, %p)"), std::string::npos) << out;
  EXPECT_LT(out.find("%p = eq"), out.find("%r = all_reduce")) << out;
  EXPECT_LT(out.find("%r = all_reduce"), out.find("%u = sub")) << out;
}

// A layer's backward as reverse mode emits it: the input gradient %dh before the weight
// gradient %dw (of %t, which only it reads), which the update reads through an all_reduce
// (data parallelism) or directly.
std::string layer_backward(bool all_reduce) {
  return std::string(R"(graph @f(%x: f32[256], %w1: f32[256] {param}, %w2: f32[256] {param}) {
  %g = mul(%x, %w2) : f32[256]
  %dh = mul(%g, %w1) : f32[256]
  %t = neg(%x) : f32[256]
  %dw = mul(%t, %g) : f32[256]
)") + (all_reduce ? "  %r = all_reduce(%dw) {reduction=\"mean\"} : f32[256]\n  %u = sub(%w1, %r) : f32[256]\n"
                  : "  %u = sub(%w1, %dw) : f32[256]\n") +
         R"(  assign(%w1, %u)
  return %dh
}
)";
}

// The weight gradient, with %t, moves up above the input gradient, so its all_reduce
// starts before %dh computes (issue 32: the first bucket closes early); %t does not move
// above %g, the latest producer of the moved nodes' other operands.
TEST(ScheduleMemoryTest, AWeightGradientMovesAboveTheInputGradient) {
  ScheduleMemoryPass pass;
  const std::string out = run_pass_on_text(pass, layer_backward(/*all_reduce=*/true));
  ASSERT_NE(out.find("%r = all_reduce(%dw)"), std::string::npos) << out;
  EXPECT_LT(out.find("%g = mul"), out.find("%t = neg")) << out;
  EXPECT_LT(out.find("%t = neg"), out.find("%dw = mul")) << out;
  EXPECT_LT(out.find("%r = all_reduce"), out.find("%dh = mul")) << out;
}

// Without all_reduce ops the same graph keeps its order: the input gradient first.
TEST(ScheduleMemoryTest, NoAllReduceNoGradientMoves) {
  ScheduleMemoryPass pass;
  const std::string out = run_pass_on_text(pass, layer_backward(/*all_reduce=*/false));
  EXPECT_LT(out.find("%dh = mul"), out.find("%dw = mul")) << out;
}

TEST(ScheduleMemoryTest, UnknownTypesAreAnError) {
  ScheduleMemoryPass pass;
  EXPECT_NE(run_pass_on_text(pass, R"(graph @f(%x: f32[4]) {
  %a = exp(%x)
  return %a
}
)").find("no type"), std::string::npos);
}

}  // namespace schedule_test
}  // namespace
}  // namespace weft

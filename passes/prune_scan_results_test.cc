// prune-scan-results: unread ys leave the loop with what computed them alone, ys of the
// same body value are stacked once, values are unchanged (a loop's gradient included).
#include "passes/prune_scan_results.h"

#include <gtest/gtest.h>

#include "autodiff/grad.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {
namespace prune_scan_results_test {  // this file's names, apart in its package's unity test

Graph parse(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "prune_scan_results_test.cc");
  WEFT_CHECK(g.ok(), g.ok() ? "" : g.error().to_string());
  return std::move(*g);
}

const Node& only_loop(const Graph& g) {
  const Node* loop = nullptr;
  for (const Node& n : g.nodes()) loop = n.op == Op::Scan ? &n : loop;
  WEFT_CHECK(loop != nullptr, "no loop");
  return *loop;
}

size_t loops_results(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes()) n += node.op == Op::Scan ? node.results.size() : 0;
  return n;
}

void expect_same_values(const Graph& before, const Graph& after) {
  const auto inputs = testing::random_inputs(before, 5);
  auto a = reference::run(before, inputs), b = reference::run(after, inputs);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->outputs.size(), b->outputs.size());
  for (size_t k = 0; k < a->outputs.size(); ++k) {
    EXPECT_EQ(a->outputs[k].to_doubles(), b->outputs[k].to_doubles()) << "output " << k;
  }
}

// The header's example: %a and %b stack the same value, %c is never read.
constexpr const char* kCell = R"(graph @cell(%w: f32[4,4], %h0: f32[2,4], %xs: f32[5,2,4]) -> (f32[2,4], f32[5,2,4], f32[5,2,4]) {
  %h, %a, %b, %c = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,4], f32[5,2,4], f32[5,2,4], f32[5,2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4], %x1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %s = add(%m, %x1) : f32[2,4]
      %n = tanh(%s) : f32[2,4]
      %d = mul(%n, %n) : f32[2,4]
      return %n, %n, %n, %d
  })
  %e = exp(%b) : f32[5,2,4]
  return %h, %a, %e
}
)";

TEST(PruneScanResults, DropsUnreadYsAndStacksEachBodyValueOnce) {
  Graph g = parse(kCell);
  const Graph before = g;
  auto changed = PruneScanResultsPass().run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  const Node& loop = only_loop(g);
  ASSERT_EQ(loop.results.size(), 2u);  // the carry, and %n stacked once
  EXPECT_EQ(loop.body->outputs().size(), 2u);
  EXPECT_EQ(loop.body->nodes().size(), 3u);  // the square that only %c read is gone
  expect_same_values(before, g);
  auto again = PruneScanResultsPass().run(g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(PruneScanResults, LeavesCarriesAndReadYsAlone) {
  Graph g = parse(R"(graph @f(%w: f32[4,4], %h0: f32[2,4]) -> (f32[2,4], f32[3,2,4]) {
  %h, %ys = scan(%w, %h0) {carries=1, consts=1, length=3} : f32[2,4], f32[3,2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %n = sin(%m) : f32[2,4]
      return %n, %m
  })
  return %h, %ys
}
)");
  auto changed = PruneScanResultsPass().run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(PruneScanResults, PrunesInsideBodiesFirst) {
  Graph g = parse(R"(graph @f(%w: f32[4,4], %h0: f32[2,4], %xs: f32[3,2,4]) -> (f32[2,4]) {
  %h = scan(%w, %h0, %xs) {carries=1, consts=1, length=3} : f32[2,4] ({
    ^outer(%ow: f32[4,4], %oh: f32[2,4], %ox: f32[2,4]):
      %i, %unread = scan(%ow, %oh) {carries=1, consts=1, length=2} : f32[2,4], f32[2,2,4] ({
        ^inner(%iw: f32[4,4], %ih: f32[2,4]):
          %im = matmul(%ih, %iw) : f32[2,4]
          %it = tanh(%im) : f32[2,4]
          %ic = cos(%im) : f32[2,4]
          return %it, %ic
      })
      %s = add(%i, %ox) : f32[2,4]
      return %s
  })
  return %h
}
)");
  const Graph before = g;
  auto changed = PruneScanResultsPass().run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  const Node& inner = only_loop(*only_loop(g).body);
  EXPECT_EQ(inner.results.size(), 1u);
  EXPECT_EQ(inner.body->nodes().size(), 2u);  // the cosine went with %unread
  expect_same_values(before, g);
}

// A loop's gradient stacks one per-iteration value for several terms; after pruning the
// gradient graph has fewer loop results and the same values.
TEST(PruneScanResults, AGradientLoopStacksEachValueOnce) {
  auto grad = gradient_graph(parse(R"(graph @f(%w: f32[4,4], %b: f32[4], %h0: f32[2,4], %xs: f32[5,2,4]) -> (f32[]) {
  %h, %ys = scan(%w, %b, %h0, %xs) {carries=1, consts=2, length=5} : f32[2,4], f32[5,2,4] ({
    ^cell(%w1: f32[4,4], %b1: f32[4], %h1: f32[2,4], %x1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %mb = add(%m, %b1) : f32[2,4]
      %s = add(%mb, %x1) : f32[2,4]
      %n = tanh(%s) : f32[2,4]
      return %n, %n
  })
  %q = mul(%ys, %ys) : f32[5,2,4]
  %t = sum(%q) : f32[]
  return %t
}
)"), 0, {"w", "b", "h0", "xs"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  Graph g = *grad;
  const size_t results_before = loops_results(g);
  auto changed = PruneScanResultsPass().run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).ok()) << verify(g).to_string();
  EXPECT_LT(loops_results(g), results_before);
  expect_same_values(*grad, g);
}

}  // namespace prune_scan_results_test
}  // namespace
}  // namespace weft

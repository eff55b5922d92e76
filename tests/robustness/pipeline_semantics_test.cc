// The optimization pipeline must not change what a graph computes: each seed graph
// (together they use every op) is run by the reference interpreter as written and after
// default_pipeline() on the same random inputs, and every output and every assigned
// value must be bitwise equal. (A canonicalization that dropped a square matrix's
// transpose once slipped past narrower tests.)
#include <gtest/gtest.h>

#include <random>

#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/reference/interpreter.h"
#include "tests/robustness/seed_graphs.h"

namespace weft {
namespace {

/// Random inputs of the graph's types: floats in [-2, 2] (away from nothing in
/// particular), integer indices small and non-negative, bools random.
std::vector<Tensor> random_inputs(const Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) {
    Tensor t(g.type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v;
      if (is_floating(t.dtype())) {
        v = std::uniform_real_distribution<double>(-2, 2)(rng);
      } else if (t.dtype() == DType::boolean) {
        v = rng() % 2;
      } else {
        v = rng() % 2;  // indices stay in range for the seed graphs' small dims
      }
      t.set_double(i, v);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Graphs full of what canonicalize and fold-constants rewrite, including the traps:
/// square transposes, -0.0, x·1 with broadcasting, constant selects.
const robustness::SeedGraph kRewriteTargets[] = {
    {"square.wir", R"(graph @square(%w: f32[4,4], %x: f32[2,4], %b: f32[4]) {
  %t = transpose(%w) {perm=[1, 0]}
  %tt = transpose(%t) {perm=[1, 0]}
  %one = full() {shape=[], value=1.0}
  %m = mul(%tt, %one)
  %y = matmul(%x, %t)
  %z = matmul(%x, %m)
  %r = reshape(%y) {shape=[8]}
  %r2 = reshape(%r) {shape=[2, 4]}
  %nz = full() {shape=[], value=-0.0}
  %s = add(%r2, %nz)
  %ob = mul(%one, %b)
  %u = add(%s, %ob)
  %c = full() {shape=[], value=1.0, dtype=bool}
  %sel = select(%c, %u, %z)
  %two = full() {shape=[], value=2.0}
  %three = add(%two, %one)
  %v = mul(%sel, %three)
  %nn = neg(%v)
  %n2 = neg(%nn)
  return %n2, %y
})"},
};

TEST(PipelineSemantics, OptimizedGraphsComputeTheSameBits) {
  int compared = 0;
  std::vector<robustness::SeedGraph> graphs = robustness::seed_graphs();
  graphs.insert(graphs.end(), std::begin(kRewriteTargets), std::end(kRewriteTargets));
  for (const robustness::SeedGraph& seed : graphs) {
    auto parsed = parse_graph(seed.text, seed.name);
    ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
    Graph original = *parsed;
    ASSERT_TRUE(default_pipeline().run_until(original, "infer-types").ok());
    Graph optimized = original;
    auto changed = default_pipeline().run(optimized);
    ASSERT_TRUE(changed.ok()) << seed.name << ": " << changed.error().to_string();
    for (unsigned trial = 0; trial < 3; ++trial) {
      std::vector<Tensor> inputs = random_inputs(original, trial);
      auto a = reference::run(original, inputs);
      auto b = reference::run(optimized, inputs);
      if (!a.ok()) continue;  // e.g. an index out of range for these random inputs
      ASSERT_TRUE(b.ok()) << seed.name << ": " << b.error().to_string();
      ASSERT_EQ(a->outputs.size(), b->outputs.size());
      for (size_t k = 0; k < a->outputs.size(); ++k) {
        EXPECT_TRUE(a->outputs[k] == b->outputs[k]) << seed.name << " output " << k;
      }
      ASSERT_EQ(a->updated.size(), b->updated.size());
      for (size_t k = 0; k < a->updated.size(); ++k) {
        EXPECT_TRUE(a->updated[k].second == b->updated[k].second)
            << seed.name << " assigned " << a->updated[k].first;
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace weft

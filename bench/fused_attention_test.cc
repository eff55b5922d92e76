// The suite with fused attention (#31, `bench:suite --fuse-attention`), on the host: the
// models the option applies to are the ones whose step fuse-attention changes, and the
// transformer trains on the CPU with it as without it (the CPU lowering writes attention
// and attention_grad back into primitives, so the forward is the unfused one). The JIT
// worker's refusal is bench/aot_worker_test's.
// bench/aot_cuda_attention_test checks the GPU side's libraries.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>

#include "bench/models.h"
#include "bench/step_stats.h"
#include "bench/suite_options.h"
#include "bench/timed_run.h"
#include "frontend/training.h"

namespace weft::bench {
namespace {

/// The step's GEMMs as the products they compute, whichever way round ([m, n, k] and
/// [n, m, k] are C = A·B and Cᵀ = Bᵀ·Aᵀ, the same multiply-adds): counts summed per
/// product.
std::map<std::array<int64_t, 3>, int64_t> products(const StepStats& st) {
  std::map<std::array<int64_t, 3>, int64_t> out;
  for (const std::array<int64_t, 4>& s : st.gemm_shapes) {
    out[{std::min(s[0], s[1]), std::max(s[0], s[1]), s[2]}] += s[3];
  }
  return out;
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

StatusOr<Trainer> compile(const BenchModel& m, const std::string& backend, bool fuse_attention) {
  return Trainer::compile(m.net, m.inputs, m.loss, OptimizerSpec::adam(m.lr),
                          {.seed = 7, .backend = backend, .fuse_attention = fuse_attention});
}

// suite_attention_models() is the suite's list (suite_options has no compiler to ask):
// it must be exactly the models whose step fuse-attention finds attention in, each
// attention block one attention node and one attention_grad.
TEST(FusedAttention, TheSuitesListIsWhatFuseAttentionFinds) {
  const std::vector<std::string>& listed = suite_attention_models();
  for (const std::string& name : bench_model_names()) {
    SCOPED_TRACE(name);
    StatusOr<BenchModel> m = make_bench_model(name, Preset::cpu);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    StatusOr<Trainer> t = compile(*m, "reference", /*fuse_attention=*/true);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    const int attention = count(t->step_graph(), Op::Attention);
    const bool has = std::find(listed.begin(), listed.end(), name) != listed.end();
    EXPECT_EQ(attention > 0, has) << attention << " attention nodes";
    EXPECT_EQ(count(t->step_graph(), Op::AttentionGrad), attention);
  }
}

// The transformer (cpu preset, the suite's batch) on the CPU backend, fused and not, from
// the same seed and batch. The first loss is equal bit for bit (tolerance 0): the CPU
// lowering writes attention back into exactly the primitives fuse-attention matched, in
// their order (passes/fuse_attention.h's guarantee), so the forward is the unfused one op
// for op — stricter than the suite's 1e-4·(1 + |loss|) against PyTorch. The gradients are
// attention_grad's decomposition (dq, dk, dv from the probabilities recomputed), equal to
// float rounding: the next two Adam steps' losses within 1e-6 relative (bit-equal today;
// a changed kernel grouping may round differently, while a wrong gradient moves them by
// far more: each step lowers the loss by ~6e-3 relative here).
TEST(FusedAttention, TheTransformerTrainsOnTheCpuWithTheUnfusedLosses) {
  StatusOr<BenchModel> m = make_bench_model("transformer", Preset::cpu);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  StatusOr<Trainer> plain = compile(*m, "cpu", /*fuse_attention=*/false);
  StatusOr<Trainer> fused = compile(*m, "cpu", /*fuse_attention=*/true);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  ASSERT_TRUE(fused.ok()) << fused.error().to_string();
  EXPECT_EQ(count(fused->step_graph(), Op::Attention), 4);  // one per encoder layer
  EXPECT_EQ(count(plain->step_graph(), Op::Attention), 0);
  // The suite's roofline counts the matmuls the CPU writes attention back as: the unfused
  // step's six products per layer, two forward and four backward (dk as dsᵀ·q where the
  // unfused gradient computes qᵀ·ds, its transpose).
  const StepStats a = step_stats(*plain), b = step_stats(*fused);
  EXPECT_EQ(b.matmul_flops, a.matmul_flops);
  EXPECT_EQ(products(b), products(a));
  std::mt19937_64 rng(11);
  const std::vector<Tensor> batch = {random_tensor(m->inputs[0].type, m->token_range, rng),
                                     random_tensor(m->target, m->token_range, rng)};
  for (int step = 0; step < 3; ++step) {
    StatusOr<double> a = plain->step(batch);
    StatusOr<double> b = fused->step(batch);
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_TRUE(std::isfinite(*b));
    if (step == 0) {
      EXPECT_EQ(*b, *a) << "the first loss";
    } else {
      EXPECT_NEAR(*b, *a, 1e-6 * std::fabs(*a)) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace weft::bench

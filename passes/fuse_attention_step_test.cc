// fuse-attention in a training step (TrainOptions::fuse_attention): the transformer
// block's attention is found before autodiff, the step holds one attention and three
// attention_grad nodes, computes what the unfused step computes (to float rounding), and
// the CPU and CUDA lowerings write both back into primitives (no backend has the kernel
// yet).
#include <gtest/gtest.h>

#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/step_testing.h"

namespace weft {
namespace {

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

StatusOr<Trainer> block(bool fuse) {
  auto net = FlowBuilder::from(Identity())
                 .also(MultiheadAttention(16, 2, {.causal = true}))
                 .through(LayerNorm(16))
                 .build();
  if (!net.ok()) return net.error();
  return Trainer::compile(*net, {{"x", Type{DType::f32, {2, 7, 16}}}}, LossSpec::mse(),
                          OptimizerSpec::sgd(0.1), {.backend = "reference", .fuse_attention = fuse});
}

TEST(FuseAttentionStepTest, TheStepHoldsAttentionAndItsGradients) {
  StatusOr<Trainer> fused = block(true);
  StatusOr<Trainer> plain = block(false);
  ASSERT_TRUE(fused.ok()) << fused.error().to_string();
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  const Graph& f = fused->step_graph();
  EXPECT_EQ(count(f, Op::Attention), 1) << print_graph(f);
  EXPECT_EQ(count(f, Op::AttentionGrad), 3);
  EXPECT_EQ(count(f, Op::Softmax), 0);
  EXPECT_EQ(count(plain->step_graph(), Op::Attention), 0);
  EXPECT_EQ(count(plain->step_graph(), Op::Softmax), 1);

  const std::vector<Tensor> inputs = random_step_inputs(plain->step_graph());
  auto want = reference::run(plain->step_graph(), inputs);
  auto got = reference::run(f, inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  std::string why;
  EXPECT_TRUE(all_close(got->outputs[0], want->outputs[0], 1e-5, &why)) << why;
  ASSERT_EQ(got->updated.size(), want->updated.size());
  for (size_t i = 0; i < got->updated.size(); ++i) {
    EXPECT_TRUE(all_close(got->updated[i].second, want->updated[i].second, 1e-5, &why))
        << got->updated[i].first << ": " << why;
  }
}

// Both lowerings decompose the composites (no backend has an attention kernel yet).
TEST(FuseAttentionStepTest, TheLoweringsWriteItBack) {
  StatusOr<Trainer> fused = block(true);
  ASSERT_TRUE(fused.ok()) << fused.error().to_string();
  for (const codegen::LowerOptions& options : {codegen::LowerOptions{}, codegen::cuda_lower_options()}) {
    StatusOr<codegen::Lowering> l = codegen::lower_to_program(fused->step_graph(), options);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    EXPECT_EQ(count(l->graph, Op::Attention), 0);
    EXPECT_EQ(count(l->graph, Op::AttentionGrad), 0);
  }
}

}  // namespace
}  // namespace weft

// fuse-attention in a training step (TrainOptions::fuse_attention): the transformer
// block's attention is found before autodiff, the step holds one attention and one
// attention_grad node (three results: dq, dk, dv) and computes what the unfused step computes (to float rounding);
// the CPU lowering writes both back into primitives, the CUDA lowering keeps the forward
// (the op table's composite columns, ir/kernel_support.h: keep_library_composites). Here
// in codegen/ because it compiles a step (frontend/) and lowers it (codegen/).
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
  EXPECT_EQ(count(f, Op::AttentionGrad), 1);  // one node giving dq, dk and dv
  for (const Node& n : f.nodes()) {
    if (n.op == Op::AttentionGrad) EXPECT_EQ(n.results.size(), 3u);
  }
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

// The CPU lowering writes both back into primitives; the CUDA lowering keeps the f32
// forward for its kernel (runtime/cuda/attention_kernels.h) and decomposes the gradients.
TEST(FuseAttentionStepTest, TheCpuWritesItBackTheGpuKeepsTheForward) {
  StatusOr<Trainer> fused = block(true);
  ASSERT_TRUE(fused.ok()) << fused.error().to_string();
  StatusOr<codegen::Lowering> cpu = codegen::lower_to_program(fused->step_graph());
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  EXPECT_EQ(count(cpu->graph, Op::Attention), 0);
  EXPECT_EQ(count(cpu->graph, Op::AttentionGrad), 0);
  StatusOr<codegen::Lowering> gpu =
      codegen::lower_to_program(fused->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(count(gpu->graph, Op::Attention), 1);
  EXPECT_EQ(count(gpu->graph, Op::AttentionGrad), 0);
  int kernels = 0;
  for (const Invocation& inv : gpu->program.code) kernels += inv.node.op == Op::Attention;
  EXPECT_EQ(kernels, 1);
  // Without fuse-attention the GPU step holds none.
  StatusOr<Trainer> plain = block(false);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  StatusOr<codegen::Lowering> unfused =
      codegen::lower_to_program(plain->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(unfused.ok()) << unfused.error().to_string();
  EXPECT_EQ(count(unfused->graph, Op::Attention), 0);
}

}  // namespace
}  // namespace weft

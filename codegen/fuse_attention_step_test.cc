// fuse-attention in a training step (TrainOptions::fuse_attention): the transformer
// block's attention is found before autodiff, the step holds one attention and one
// attention_grad node (three results: dq, dk, dv) and computes what the unfused step computes (to float rounding);
// the CPU lowering writes both back into primitives, the CUDA lowering keeps both for
// its kernels (the op table's composite columns, ir/kernel_support.h: keep_library_composites). Here
// in codegen/ because it compiles a step (frontend/) and lowers it (codegen/).
#include <gtest/gtest.h>

#include <cstdlib>

#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/step_testing.h"
#include "runtime/cuda/library.h"

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
    if (n.op == Op::AttentionGrad) {
      EXPECT_EQ(n.results.size(), 3u);
    }
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
// forward and attention_grad for their kernels (runtime/cuda/attention_kernels.h):
// attention_grad one library invocation with three results (dq, dk, dv).
TEST(FuseAttentionStepTest, TheCpuWritesItBackTheGpuKeepsBoth) {
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
  EXPECT_EQ(count(gpu->graph, Op::AttentionGrad), 1);
  int forward = 0, backward = 0;
  for (const Invocation& inv : gpu->program.code) {
    forward += inv.node.op == Op::Attention;
    if (inv.node.op != Op::AttentionGrad) continue;
    ++backward;
    EXPECT_EQ(inv.kind, Invocation::Kind::library);
    ASSERT_EQ(inv.results.size(), 3u);  // dq, dk, dv
    EXPECT_EQ(inv.operands.size(), 5u);  // q, k, v, y, dy (causal: no mask operand)
    std::vector<Type> types;
    for (const BufferRef& r : inv.operands) types.push_back(r.type);
    EXPECT_EQ(cuda::library_kind(inv.node, types, inv.results[0].type),
              cuda::LibraryKind::attention_grad);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(inv.results[k].type, types[k]) << k;
  }
  EXPECT_EQ(forward, 1);
  EXPECT_EQ(backward, 1);
  EXPECT_TRUE(cuda::check_device_only(gpu->program).ok());
  // Without fuse-attention the GPU step holds none.
  StatusOr<Trainer> plain = block(false);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  StatusOr<codegen::Lowering> unfused =
      codegen::lower_to_program(plain->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(unfused.ok()) << unfused.error().to_string();
  EXPECT_EQ(count(unfused->graph, Op::Attention), 0);
  EXPECT_EQ(count(unfused->graph, Op::AttentionGrad), 0);
}

// The A/B switch WEFT_ATTENTION_GRAD_KERNEL=0 (runtime/cuda/library.h) decomposes
// attention_grad into primitives and leaves the forward on its kernel; a head dim above
// kAttentionMaxDim decomposes both.
TEST(FuseAttentionStepTest, TheSwitchOrAWideHeadDecomposesTheGradients) {
  StatusOr<Trainer> fused = block(true);
  ASSERT_TRUE(fused.ok()) << fused.error().to_string();
  setenv(cuda::kAttentionGradSwitch, "0", /*overwrite=*/1);
  StatusOr<codegen::Lowering> off =
      codegen::lower_to_program(fused->step_graph(), codegen::cuda_lower_options());
  unsetenv(cuda::kAttentionGradSwitch);
  ASSERT_TRUE(off.ok()) << off.error().to_string();
  EXPECT_EQ(count(off->graph, Op::Attention), 1);
  EXPECT_EQ(count(off->graph, Op::AttentionGrad), 0);
  EXPECT_TRUE(cuda::check_device_only(off->program).ok());

  // Two heads of 130: wider than both kernels take.
  auto net = FlowBuilder::from(Identity())
                 .also(MultiheadAttention(260, 2, {.causal = true}))
                 .through(LayerNorm(260))
                 .build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  StatusOr<Trainer> wide = Trainer::compile(*net, {{"x", Type{DType::f32, {2, 3, 260}}}},
                                            LossSpec::mse(), OptimizerSpec::sgd(0.1),
                                            {.backend = "reference", .fuse_attention = true});
  ASSERT_TRUE(wide.ok()) << wide.error().to_string();
  EXPECT_EQ(count(wide->step_graph(), Op::AttentionGrad), 1);
  StatusOr<codegen::Lowering> gpu =
      codegen::lower_to_program(wide->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(count(gpu->graph, Op::Attention), 0);
  EXPECT_EQ(count(gpu->graph, Op::AttentionGrad), 0);
  EXPECT_TRUE(cuda::check_device_only(gpu->program).ok());
}

}  // namespace
}  // namespace weft

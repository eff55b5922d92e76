// passes/rematerialize.h on a whole training step (issue #31, conv_autoenc's device
// memory): convolutions with batch norm and ReLU, lowered for the GPU and the CPU. ReLU's
// gradient reads its input (the norm's output) in the backward; recomputed there from the
// norm's centred values, which the backward keeps anyway, it no longer lives from the
// forward to the backward: the arena shrinks, no invocation is added (the
// recomputation runs inside the backward's kernel), and the step computes what the
// reference interpreter does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "codegen/cuda_program.h"
#include "codegen/gpu_host_test_util.h"
#include "codegen/kernel_test_util.h"
#include "codegen/lower.h"
#include "codegen/target_test_util.h"
#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft::codegen {
namespace {

Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }

// Two [Conv k4 s2 p1, BatchNorm, ReLU] blocks and a transposed convolution back, MSE, Adam:
// conv_autoenc in small.
Graph conv_bn_relu_step() {
  const ConvOptions down{.kernel = 4, .stride = 2, .padding = 1};
  auto net = FlowBuilder::from(Conv2d(3, 8, down))
                 .through(BatchNorm2d(8))
                 .through(ReLU())
                 .through(Conv2d(8, 16, down))
                 .through(BatchNorm2d(16))
                 .through(ReLU())
                 .through(ConvTranspose2d(16, 3, down))
                 .build();
  EXPECT_TRUE(net.ok()) << net.error().to_string();
  auto trainer = Trainer::compile(*net, {{"x", f32({4, 3, 16, 16})}}, LossSpec::mse(), OptimizerSpec::adam(),
                                  {.backend = "reference"});
  EXPECT_TRUE(trainer.ok()) << trainer.error().to_string();
  return trainer->step_graph();
}

struct Figures {
  int64_t arena = 0;
  size_t invocations = 0;
};

// `step` lowered with `options`, rematerialize on or off ($WEFT_REMATERIALIZE, as
// add_lowering_passes reads it).
Figures lowered(const Graph& step, const LowerOptions& options, bool on) {
  if (on) unsetenv("WEFT_REMATERIALIZE");
  else setenv("WEFT_REMATERIALIZE", "0", 1);
  StatusOr<Lowering> l = lower_to_program(step, options);
  unsetenv("WEFT_REMATERIALIZE");
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return l.ok() ? Figures{l->program.arena_bytes, l->program.code.size()} : Figures{};
}

TEST(RematerializeStepTest, TheArenaShrinksWithNoInvocationMoreOnBothLowerings) {
  const Graph step = conv_bn_relu_step();
  for (const auto& [what, options] : {std::pair<std::string, LowerOptions>{"GPU", cuda_lower_options()},
                                      std::pair<std::string, LowerOptions>{"CPU", LowerOptions{}}}) {
    const Figures off = lowered(step, options, false), on = lowered(step, options, true);
    SCOPED_TRACE(what + " lowering: arena " + std::to_string(off.arena) + " -> " + std::to_string(on.arena));
    // No kernel more: the recomputation runs inside the backward's kernels (here the GPU
    // lowering even runs two fewer).
    EXPECT_LE(on.invocations, off.invocations);
    // The first block's ReLU input, f32[4,8,8,8] (8 KiB), and the second's, f32[4,16,4,4]
    // (4 KiB), no longer wait for the backward.
    EXPECT_LE(on.arena, off.arena - 8192);
  }
}

TEST(RematerializeStepTest, TheStepMatchesTheInterpreterOnTheCpu) {
  expect_target_matches_reference("cpu", conv_bn_relu_step(), 5);
}

// The GPU lowering's generated kernels, the backward's with the recomputed norm output
// among them, as GPU code run on the host (one row per GPU thread) against the
// interpreter on their bodies.
TEST(RematerializeStepTest, TheGpuKernelsMatchTheInterpreterOnTheHost) {
  StatusOr<Lowering> l = lower_to_program(conv_bn_relu_step(), cuda_lower_options());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  Jit jit;
  int elementwise = 0;
  for (const GeneratedKernel& k : l->program.kernels) {
    if (k.kind != FusedKind::elementwise) continue;
    ++elementwise;
    SCOPED_TRACE(k.key);
    std::vector<Tensor> inputs = testing::random_body_inputs(k.body, -3, 3, 5);
    StatusOr<std::vector<Tensor>> ran = testing::run_gpu_kernel_on_host(jit, k.body, inputs);
    ASSERT_TRUE(ran.ok()) << ran.error().to_string();
    StatusOr<reference::RunResult> want = reference::run(k.body, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    for (size_t o = 0; o < ran->size(); ++o) {
      std::string why;
      EXPECT_TRUE(all_close((*ran)[o], want->outputs[o], 1e-5, &why)) << "output " << o << ": " << why;
    }
  }
  EXPECT_GT(elementwise, 0);
}

TEST(RematerializeStepTest, TheStepCompilesForTheGpu) {
  StatusOr<CudaProgram> p = compile_cuda_program(conv_bn_relu_step());
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_FALSE(p->ptx.empty());
}

}  // namespace
}  // namespace weft::codegen

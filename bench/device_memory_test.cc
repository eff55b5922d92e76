#include "bench/device_memory.h"

#include <gtest/gtest.h>

#include "bench/models.h"
#include "codegen/cuda_program.h"

namespace weft::bench {
namespace {

Graph step_of(const std::string& name) {
  StatusOr<BenchModel> m = make_bench_model(name, Preset::cpu);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  TrainOptions reference;
  reference.backend = "reference";
  StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), reference);
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t->step_graph();
}

// The estimate adds up what the executor allocates for the lowered Program: checked
// here against the Program itself.
TEST(DeviceMemoryTest, TheEstimateIsTheProgramsBlocksAndCublasWorkspace) {
  const Graph step = step_of("lstm_seq");
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(step, codegen::cuda_lower_options());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  StatusOr<StepMemory> m = step_memory(step, codegen::cuda_lower_options(), 3);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const cuda::DeviceMemory& d = m->device;
  EXPECT_EQ(d.arena, l->program.arena_bytes);
  EXPECT_EQ(d.inputs, l->program.inputs_bytes);
  // Two layers, each a forward loop and its gradient loop, every body bound once.
  EXPECT_EQ(d.loops, 4);
  int64_t bodies = 0;
  for (const Invocation& inv : l->program.code) {
    if (inv.kind != Invocation::Kind::loop) continue;
    const Program& body = l->program.bodies[static_cast<size_t>(inv.body)];
    bodies += body.arena_bytes + body.inputs_bytes + cuda::staged_carry_bytes(body, inv);
  }
  EXPECT_EQ(d.loop_bodies, bodies);
  EXPECT_GT(d.constants, 0);  // the zero initial carries
  EXPECT_EQ(d.convolutions, 0);
  EXPECT_EQ(d.cublas_workspace, 4 << 20);
  EXPECT_EQ(d.known(), d.arena + d.inputs + d.loop_bodies + d.snapshots + d.constants + d.cublas_workspace);
  EXPECT_EQ(m->lower_bound, l->plan.lower_bound_bytes);
  ASSERT_EQ(m->peak.size(), 3u);  // the rows asked for, largest first
  EXPECT_GE(m->peak[0].bytes, m->peak[1].bytes);
  EXPECT_GE(m->peak[1].bytes, m->peak[2].bytes);
}

// A convolutional step names its convolutions, whose cuDNN workspace is the device's
// choice, and the printout says so.
TEST(DeviceMemoryTest, ConvolutionsAreCountedAndNamedAsNotEstimated) {
  StatusOr<StepMemory> m = step_memory(step_of("conv_autoenc"), codegen::cuda_lower_options(), 4);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->device.loops, 0);
  EXPECT_GT(m->device.convolutions, 0);
  const std::string text = format_step_memory(*m);
  EXPECT_NE(text.find("+ the cuDNN workspaces of " + std::to_string(m->device.convolutions) + " convolutions"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("arena peak: " + std::to_string(m->lower_bound) + " bytes"), std::string::npos) << text;
}

}  // namespace
}  // namespace weft::bench

// One set of bind options from the front ends to both backends' executors (issue #29,
// runtime/backend.h's BindOptions). What a training binary's flags say
// (driver::model_options) is, field for field, what a CompiledModel binds its Programs
// with: the generated factory passes ModelOptions::bind on as it is, and CompiledModel adds
// only its table's accumulation window. A test backend, "recording", binds through the cpu
// backend and keeps what it was given; each backend's own conversion of it
// (runtime/cpu/backend.h, runtime/cuda/backend.h: host-only code, no GPU needed) then
// carries every field it takes into its executor's options. The JIT Trainer takes the same
// struct (TrainOptions::bind): its compiled cpu step runs on the threads asked for, and
// the memory limit refuses a step that needs more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/aot/mlp.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "runtime/cpu/backend.h"
#include "runtime/cuda/backend.h"
#include "training/aot/compiled_model.h"
#include "training/driver/driver.h"
#include "training/driver/flags.h"

namespace weft::aot {
namespace {

std::vector<BindOptions> bound;  ///< What "recording" was bound with, in order.

const bool registered = register_backend({
    .name = "recording",
    .bind = [](Program program, DeviceCode code, const BindOptions& options) {
      bound.push_back(options);
      return (*find_backend("cpu"))->bind(std::move(program), std::move(code), options);
    },
});

/// The model options of a training binary's command line that sets every bind flag.
driver::ModelOptions from_flags(std::shared_ptr<collective::Communicator> world) {
  StatusOr<driver::DriverConfig> config =
      driver::parse_flags({"--seed=4", "--threads=3", "--max-memory=256M", "--tf32", "--data-parallel",
                           "--bucket-mb=0.5", "--first-bucket-mb=0.25"});
  EXPECT_TRUE(config.ok()) << config.error().to_string();
  return driver::model_options(*config, std::move(world));
}

TEST(BindOptions, TheFlagsReachBothBackendsExecutorsThroughACompiledModel) {
  ASSERT_TRUE(registered);
  std::shared_ptr<collective::Communicator> world = collective::single_process();
  const driver::ModelOptions made = from_flags(world);
  ModelTable table = weft_aot::Mlp::table();
  table.backend = "recording";
  table.accumulate_steps = 4;  // the table's window, which CompiledModel adds
  bound.clear();
  StatusOr<std::unique_ptr<CompiledModel>> m = CompiledModel::create(table, made.seed, made.bind);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(bound.size(), 2u);  // the step, then the eval forward

  const BindOptions& step = bound[0];
  EXPECT_EQ(step.num_threads, 3);
  EXPECT_EQ(step.max_memory, int64_t{256} << 20);
  EXPECT_TRUE(step.tf32);
  EXPECT_EQ(step.communicator, world);
  EXPECT_EQ(step.all_reduce_bucket_bytes, int64_t{1} << 19);
  EXPECT_EQ(step.first_all_reduce_bucket_bytes, int64_t{1} << 18);
  EXPECT_EQ(step.accumulate_steps, 4);
  EXPECT_EQ(step.step_input, "weft.step");
  EXPECT_EQ(bound[1].communicator, nullptr);  // the eval forward runs no collectives
  EXPECT_EQ(bound[1].num_threads, 3);

  const cpu::ExecutorOptions host = cpu::executor_options(step);
  EXPECT_EQ(host.num_threads, 3);
  EXPECT_EQ(host.max_memory, int64_t{256} << 20);
  EXPECT_EQ(host.communicator, world);
  EXPECT_EQ(host.all_reduce_bucket_bytes, int64_t{1} << 19);
  EXPECT_EQ(host.first_all_reduce_bucket_bytes, int64_t{1} << 18);

  const Program& program = (*m)->step_executor()->program();
  StatusOr<cuda::ExecutorOptions> gpu = cuda::executor_options(step, program);
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(gpu->max_memory, int64_t{256} << 20);
  EXPECT_TRUE(gpu->tf32);
  EXPECT_EQ(gpu->nccl, nullptr);  // one rank: no NCCL
  EXPECT_EQ(gpu->all_reduce_bucket_bytes, int64_t{1} << 19);
  EXPECT_EQ(gpu->first_all_reduce_bucket_bytes, int64_t{1} << 18);
  EXPECT_EQ(gpu->accumulation.steps, 4);
  ASSERT_GE(gpu->accumulation.step_input, 0);
  EXPECT_EQ(program.inputs[static_cast<size_t>(gpu->accumulation.step_input)].name, "weft.step");
}

TEST(BindOptions, TheJitTrainerBindsWithTheSameStruct) {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(4, 8)).through(ReLU()).through(Linear(8, 3)).build();
  ASSERT_TRUE(net.ok());
  const std::vector<InputSpec> inputs = {{"x", Type{DType::f32, {8, 4}}}};
  TrainOptions options{.bind = from_flags(collective::single_process()).bind};
  StatusOr<Trainer> t = Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(), options);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  auto* step = dynamic_cast<cpu::Executor*>(t->compiled_step());
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->pool().num_threads(), 3);

  options.bind.max_memory = 1024;
  StatusOr<Trainer> refused =
      Trainer::compile(*net, inputs, LossSpec::cross_entropy(), OptimizerSpec::adam(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("are available (the memory limit"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace weft::aot

// The compiler's backend registry: lookup and its error, the features each target takes
// from its runtime backend, the messages callers report, and the same graph run on every
// target this machine can run (the cpu and the interpreter; cuda where there is a GPU).
#include "codegen/targets.h"

#include <gtest/gtest.h>

#include "codegen/kernel_test_util.h"
#include "runtime/collective/fake_ranks.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/plan.h"

namespace weft::codegen {
namespace {

TEST(Targets, FoundByNameAndAnUnknownOneListsThemAll) {
  ASSERT_EQ(targets().size(), 3u);
  for (const char* name : {"cpu", "cuda", "reference"}) {
    StatusOr<const Target*> t = find_target(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ((*t)->name, name);
  }
  StatusOr<const Target*> tpu = find_target("tpu");
  ASSERT_FALSE(tpu.ok());
  EXPECT_EQ(tpu.error().to_string(), "error: unknown backend 'tpu'; backends: cpu, cuda, reference");
}

TEST(Targets, FeaturesComeFromTheRuntimeBackends) {
  const Target& cpu = **find_target("cpu");
  const Target& cuda = **find_target("cuda");
  const Target& reference = **find_target("reference");
  EXPECT_TRUE(cpu.compiled() && cuda.compiled());
  EXPECT_FALSE(reference.compiled());
  EXPECT_EQ(cpu.runtime()->name, "cpu");
  EXPECT_EQ(cuda.runtime()->name, "cuda");
  EXPECT_EQ(reference.runtime(), nullptr);
  EXPECT_TRUE(cpu.has_check_numerics());
  EXPECT_FALSE(cuda.has_check_numerics());
  EXPECT_TRUE(reference.has_check_numerics());
  EXPECT_TRUE(cpu.has_multi_rank());
  EXPECT_TRUE(cuda.has_multi_rank());  // NCCL
  EXPECT_FALSE(reference.has_multi_rank());
  EXPECT_TRUE(cpu.has_profiler());
  EXPECT_FALSE(cuda.has_profiler() || reference.has_profiler());
  EXPECT_TRUE(cpu.plans_memory());
  EXPECT_FALSE(reference.plans_memory());
  EXPECT_EQ(target_names([](const Target& t) { return t.compiled(); }), "cpu, cuda");
}

// What the AOT generator, weftc and the build ask a target instead of its name; each
// form comes with what it needs (devices.bzl's `object` must agree with aot_code).
TEST(Targets, SayHowTheirKernelsTravelAheadOfTime) {
  for (const Target& t : targets()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.compiled(), t.aot_code != AotCode::none);
    EXPECT_EQ(t.aot_code == AotCode::object, t.compile_object != nullptr);
    EXPECT_EQ(t.aot_code == AotCode::module, !t.module_format.empty() && !t.module_description.empty());
    EXPECT_EQ(t.compiled(), !t.device.empty() && !t.title.empty());
  }
  EXPECT_EQ((*find_target("cpu"))->aot_code, AotCode::object);
  EXPECT_EQ((*find_target("cuda"))->aot_code, AotCode::module);
  EXPECT_EQ((*find_target("cuda"))->module_format, "ptx");
  EXPECT_TRUE((*find_target("cuda"))->has_device_check());
  EXPECT_FALSE((*find_target("cpu"))->has_device_check() || (*find_target("reference"))->has_device_check());
}

TEST(Targets, MessagesNameWhatHasTheFeature) {
  EXPECT_EQ((*find_target("cuda"))->check_numerics_unsupported("--check-numerics").to_string(),
            "error: --check-numerics runs on the cpu and reference backends, not yet on cuda");
  EXPECT_EQ((*find_target("reference"))->profiler_unsupported("--profile").to_string(),
            "error: --profile runs on the cpu backend, not on reference");
  EXPECT_EQ((*find_target("reference"))->one_process(4).to_string(),
            "error: data parallelism over 4 ranks needs the cpu or cuda backend; the reference interpreter "
            "runs one process");
}

TEST(Targets, PipelinesEndWhereEachTargetLowers) {
  EXPECT_EQ((*find_target("cpu"))->pipeline({}).pass_names().back(), "schedule-memory");
  EXPECT_EQ((*find_target("reference"))->pipeline({}).pass_names().back(), "cse");
}

TEST(Targets, EveryTargetRunsTheSameGraph) {
  Graph g = testing::parse_typed(R"(graph @f(%x: f32[2,3], %w: f32[3,2] {param}) {
  %h = matmul(%x, %w)
  %y = relu(%h)
  %s = sum(%y)
  %w1 = mul(%w, %w)
  assign(%w, %w1)
  return %s
})");
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({2, 3}, {1, -2, 3, 0.5f, 1, -1}),
                                Tensor::from_vector<float>({3, 2}, {0.5f, -1, 2, 1, -0.5f, 3})};
  StatusOr<reference::RunResult> expected = (*find_target("reference"))->run(g, inputs);
  ASSERT_TRUE(expected.ok()) << expected.error().to_string();
  for (const Target& t : targets()) {
    if (t.runtime() != nullptr && t.runtime()->unavailable_reason != nullptr &&
        !t.runtime()->unavailable_reason().empty()) {
      continue;  // no GPU here
    }
    StatusOr<reference::RunResult> r = t.run(g, inputs);
    ASSERT_TRUE(r.ok()) << t.name << ": " << r.error().to_string();
    EXPECT_TRUE(all_close(r->outputs[0], expected->outputs[0], 1e-6)) << t.name;
    ASSERT_EQ(r->updated.size(), 1u) << t.name;
    EXPECT_EQ(r->updated[0].first, "w");
    EXPECT_TRUE(all_close(r->updated[0].second, expected->updated[0].second, 1e-6)) << t.name;
  }
}

// TF32 (TrainOptions::bind.tf32, --tf32) is an option of the cuda executor, off by default:
// CompileOptions::bind.tf32 reaches it and makes its f32 GEMMs' math TF32 (checked on the host,
// as runtime/cuda's plan tests are); the cpu ignores it, computing the same bits. On a
// GPU the TF32 GEMM stays within TF32's rounding (a 10-bit mantissa) of the reference.
// The cuda target binds with the same conversion as the cuda Backend's bind
// (runtime/cuda/backend.h): a JIT Trainer's communicator, bucket sizes and accumulation
// window reach the executor as an AOT model's do. Before, the JIT path dropped the
// communicator (each rank of a --backend=cuda --data-parallel run would have trained
// alone, with all_reduce a copy); a communicator of more ranks that is not NCCL's is now
// refused, before any GPU is asked for.
TEST(Targets, TheCudaTargetBindsWithTheCudaBackendsOptions) {
  Program program;
  program.inputs = {{"x", Type{DType::f32, Shape{2}}, InputKind::data},
                    {"weft.step", Type{DType::i64, Shape{}}, InputKind::data}};
  CompileOptions options{.bind = {.all_reduce_bucket_bytes = 1 << 22, .first_all_reduce_bucket_bytes = 1 << 16,
                                  .accumulate_steps = 4, .step_input = "weft.step"},
                         .capture_graph = false};
  StatusOr<cuda::ExecutorOptions> gpu = cuda_executor_options(options, program);
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(gpu->all_reduce_bucket_bytes, 1 << 22);
  EXPECT_EQ(gpu->first_all_reduce_bucket_bytes, 1 << 16);
  EXPECT_EQ(gpu->accumulation.steps, 4);
  EXPECT_EQ(gpu->accumulation.step_input, 1);
  EXPECT_FALSE(gpu->cuda_graph);
  EXPECT_EQ(gpu->nccl, nullptr);

  auto two = std::make_shared<collective::FakeRanks>(2);
  options.bind.communicator = two;
  const std::string refused = "error: the cuda backend reduces the gradients of 2 ranks with NCCL, but was given " +
                              two->describe() + ": ask the backend for it (Backend::communicator_for, runtime/backend.h)";
  StatusOr<cuda::ExecutorOptions> mpi = cuda_executor_options(options, program);
  ASSERT_FALSE(mpi.ok());
  EXPECT_EQ(mpi.error().to_string(), refused);
  Graph g = testing::parse_typed(R"(graph @f(%x: f32[2]) {
  %y = neg(%x)
  return %y
})");
  StatusOr<std::unique_ptr<ProgramExecutor>> compiled = (*find_target("cuda"))->compile(g, options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error().to_string(), refused);
}

TEST(Targets, Tf32ReachesTheCudaExecutorAndTheCpuIgnoresIt) {
  EXPECT_FALSE(cuda_executor_options({}, Program{})->tf32);
  const cuda::ExecutorOptions on = *cuda_executor_options({.bind = {.max_memory = 1 << 20, .tf32 = true}}, Program{});
  EXPECT_TRUE(on.tf32);
  EXPECT_EQ(on.max_memory, 1 << 20);
  EXPECT_EQ(cuda::contraction_math(DType::f32, on.tf32), cuda::ContractionMath::tf32);

  Graph g = testing::parse_typed(R"(graph @f(%x: f32[2,3], %w: f32[3,2]) {
  %h = matmul(%x, %w)
  return %h
})");
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({2, 3}, {1.1f, -2, 3, 0.5f, 1, -1}),
                                Tensor::from_vector<float>({3, 2}, {0.5f, -1.3f, 2, 1, -0.5f, 3})};
  const Target& cpu = **find_target("cpu");
  StatusOr<reference::RunResult> off = cpu.run(g, inputs, {});
  StatusOr<reference::RunResult> tf32 = cpu.run(g, inputs, {.bind = {.tf32 = true}});
  ASSERT_TRUE(off.ok() && tf32.ok());
  EXPECT_TRUE(tf32->outputs[0] == off->outputs[0]);

  const Target& gpu = **find_target("cuda");
  if (!gpu.runtime()->unavailable_reason().empty()) return;  // no GPU here
  StatusOr<reference::RunResult> on_gpu = gpu.run(g, inputs, {.bind = {.tf32 = true}});
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.error().to_string();
  EXPECT_TRUE(all_close(on_gpu->outputs[0], off->outputs[0], 1e-2));
}

TEST(Targets, CheckNumericsStopsAtTheFirstInfinityWhereTheTargetHasIt) {
  Graph g = testing::parse_typed(R"(graph @f(%x: f32[2]) {
  %y = exp(%x)
  %s = sum(%y)
  return %s
})");
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({2}, {1, 1000})};
  for (const char* name : {"cpu", "reference"}) {
    StatusOr<reference::RunResult> r = (*find_target(name))->run(g, inputs, {.check_numerics = true});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().to_string().find("exp"), std::string::npos) << name << ": " << r.error().to_string();
  }
  StatusOr<reference::RunResult> cuda = (*find_target("cuda"))->run(g, inputs, {.check_numerics = true});
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.error().to_string(),
            "error: check_numerics runs on the cpu and reference backends, not yet on cuda");
}

}  // namespace
}  // namespace weft::codegen

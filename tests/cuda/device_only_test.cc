// Every op of every training step weft ships runs on the GPU: the ten suite models
// (bench/models.h, paper sizes) and the Fashion-MNIST examples' MLP and CNN (with batch
// norm and dropout), each lowered for CUDA (codegen/cuda_program.h) and asked which
// invocations would run on the host (runtime/cuda/library.h). A property of the lowered
// Program, so it needs no GPU: CI runs it.

#include <gtest/gtest.h>

#include "bench/models.h"
#include "codegen/cuda_program.h"
#include "examples/fashion_mnist/cnn_model.h"
#include "frontend/modules.h"
#include "runtime/cuda/library.h"

namespace weft {
namespace {

// The step graph's host invocations, one line each ("" when none), at `precision`
// (TrainOptions::precision: the autocast pass puts contractions in bf16/f16).
std::string host_ops(const FlowPtr& net, const std::vector<InputSpec>& inputs, LossSpec loss,
                     OptimizerSpec opt, DType precision = DType::f32) {
  StatusOr<Trainer> t = Trainer::compile(
      net, inputs, loss, opt, {.seed = 1, .backend = "reference", .precision = precision});
  if (!t.ok()) return "compile: " + t.error().to_string();
  StatusOr<codegen::Lowering> l =
      codegen::lower_to_program(t->step_graph(), codegen::cuda_lower_options());
  if (!l.ok()) return "lower: " + l.error().to_string();
  std::string out;
  for (int i : cuda::host_invocations(l->program)) {
    out += cuda::describe_host_invocation(l->program.code[i]) + "\n";
  }
  return out;
}

TEST(CudaDeviceOnly, EverySuiteModelsStepRunsOnTheGpu) {
  for (const std::string& name : bench::bench_model_names()) {
    StatusOr<bench::BenchModel> m = bench::make_bench_model(name, bench::Preset::paper);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    EXPECT_EQ(host_ops(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr)), "") << name;
  }
}

TEST(CudaDeviceOnly, TheFashionMnistExamplesRunOnTheGpu) {
  for (bool bn : {false, true}) {
    StatusOr<FlowPtr> cnn = examples::fashion_mnist_cnn(bn);
    ASSERT_TRUE(cnn.ok()) << cnn.error().to_string();
    EXPECT_EQ(host_ops(*cnn, {{"x", f32({64, 1, 28, 28})}}, LossSpec::cross_entropy(),
                       OptimizerSpec::adam(1e-3)),
              "")
        << (bn ? "CNN with batch norm" : "CNN");
  }
  StatusOr<FlowPtr> mlp = FlowBuilder::from(Linear(784, 256)).through(ReLU())
                              .through(Linear(256, 256)).through(ReLU())
                              .through(Linear(256, 10)).build();
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(host_ops(*mlp, {{"x", f32({128, 784})}}, LossSpec::cross_entropy(),
                     OptimizerSpec::adam(1e-3)),
            "");
}

// [Mixed precision]: the same steps in bf16 and f16 (contractions on tensor cores, casts
// and the epilogues generated in half, the rest f32 as autocast leaves it).
TEST(CudaDeviceOnly, MixedPrecisionStepsRunOnTheGpu) {
  for (DType precision : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(std::string(dtype_name(precision)));
    for (const std::string& name : bench::bench_model_names()) {
      StatusOr<bench::BenchModel> m = bench::make_bench_model(name, bench::Preset::paper);
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      EXPECT_EQ(host_ops(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr), precision), "")
          << name;
    }
    for (bool bn : {false, true}) {
      StatusOr<FlowPtr> cnn = examples::fashion_mnist_cnn(bn);
      ASSERT_TRUE(cnn.ok()) << cnn.error().to_string();
      EXPECT_EQ(host_ops(*cnn, {{"x", f32({64, 1, 28, 28})}}, LossSpec::cross_entropy(),
                         OptimizerSpec::adam(1e-3), precision),
                "")
          << (bn ? "CNN with batch norm" : "CNN");
    }
  }
}

}  // namespace
}  // namespace weft

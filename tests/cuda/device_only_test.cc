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
#include "training/derived_state.h"

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

// [Mixed precision] #30: a bf16 step keeps its weight copies as state
// (passes/weight_copies.h); lowered for the GPU, each copy is written in place by a
// generated kernel (the merged update, which reads each weight once), never copied by
// the host after the step.
TEST(CudaDeviceOnly, Bf16WeightCopiesAreWrittenByTheUpdateKernels) {
  StatusOr<bench::BenchModel> m = bench::make_bench_model("mlp", bench::Preset::paper);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                         {.seed = 1, .backend = "reference", .precision = DType::bf16});
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  StatusOr<codegen::Lowering> l =
      codegen::lower_to_program(t->step_graph(), codegen::cuda_lower_options());
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const Program& p = l->program;
  // Input i lies in a generated kernel's result (a merged update's names its first
  // member's input and spans the others': passes/merge_updates.h).
  auto written = [&](size_t i) {
    const int64_t from = p.input_offsets[i], to = from + static_cast<int64_t>(p.inputs[i].type.bytes());
    for (const Invocation& inv : p.code) {
      if (inv.kind != Invocation::Kind::generated) continue;
      for (const BufferRef& r : inv.results) {
        if (r.space != Space::input) continue;
        const int64_t start = p.input_offsets[static_cast<size_t>(r.input)];
        if (from >= start && to <= start + static_cast<int64_t>(r.type.bytes())) return true;
      }
    }
    return false;
  };
  for (const Update& u : p.updates) {
    EXPECT_FALSE(weight_copy_source(p.inputs[static_cast<size_t>(u.input)].name).has_value())
        << p.inputs[static_cast<size_t>(u.input)].name << " is copied after the step";
  }
  int copies = 0;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (!weight_copy_source(p.inputs[i].name)) continue;
    ++copies;
    EXPECT_EQ(p.inputs[i].type.dtype, DType::bf16) << p.inputs[i].name;
    EXPECT_TRUE(written(i)) << p.inputs[i].name << " is not written by a generated kernel";
  }
  EXPECT_EQ(copies, 10);  // five linear layers' weights and biases
}

}  // namespace
}  // namespace weft

// CompiledModel on a backend whose buffers are not host memory and that lacks the
// optional features — what the cuda backend is — tested without a GPU: a test backend,
// "hostless", binds through the cpu backend but registers none of its hooks. The same
// table (//bench/aot:mlp) on "cpu" and on "hostless" must train identically: step() and
// the typed-buffer path (host staging uploaded by run_step), evaluation, values and
// checkpoints; and the cpu-only features are the registry's pinned errors.
#include <gtest/gtest.h>

#include <cstring>

#include "bench/aot/mlp.h"
#include "training/aot/compiled_model.h"
#include "runtime/backend.h"
#include "runtime/collective/fake_ranks.h"
#include "tools/aot/batches.h"

namespace weft::aot {
namespace {

const bool registered = register_backend({
    .name = "hostless",
    .bind = [](Program program, DeviceCode code, const BindOptions& options) {
      return (*find_backend("cpu"))->bind(std::move(program), std::move(code), options);
    },
});

ModelTable hostless_table() {
  ModelTable t = weft_aot::Mlp::table();
  t.backend = "hostless";
  return t;
}

std::unique_ptr<CompiledModel> make(const ModelTable& table) {
  StatusOr<std::unique_ptr<CompiledModel>> m = CompiledModel::create(table, /*seed=*/3, {.num_threads = 1});
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(DeviceBackend, TrainsLikeCpuThroughStagingBuffers) {
  ASSERT_TRUE(registered);
  const ModelTable hostless = hostless_table();
  std::unique_ptr<CompiledModel> cpu = make(weft_aot::Mlp::table()), dev = make(hostless);
  ASSERT_TRUE(cpu && dev);
  EXPECT_EQ(dev->backend().name, "hostless");
  const int64_t classes = cpu->eval_outputs()[0].type.shape.dims.back();
  for (uint64_t i = 0; i < 6; ++i) {
    const std::vector<Tensor> batch = random_batch(cpu->step_inputs(), 0, classes, i);
    StatusOr<double> a = cpu->step(batch);
    StatusOr<double> b = Error{""};
    if (i % 2 == 0) {
      b = dev->step(batch);
    } else {  // the typed accessors' path: write the staging buffers, then run_step()
      for (size_t k = 0; k < batch.size(); ++k) {
        std::memcpy(dev->step_input_data(static_cast<int>(k)), batch[k].raw_data(), batch[k].bytes());
      }
      b = dev->run_step();
    }
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().to_string() : a.error().to_string());
    EXPECT_EQ(*a, *b) << "step " << i;
  }
  // A step() after the staging path was used takes its own batch, not the staged one.
  const std::vector<Tensor> last = random_batch(cpu->step_inputs(), 0, classes, 99);
  EXPECT_EQ(*cpu->step(last), *dev->step(last));
  EXPECT_EQ(cpu->values(), dev->values());
  std::vector<Tensor> x;
  for (const driver::TensorSpec& s : cpu->eval_inputs()) x.push_back(random_batch({s, {"t", Type{DType::i64, {1}}}}, 0, classes, 5)[0]);
  StatusOr<std::vector<Tensor>> ea = cpu->evaluate(x), eb = dev->evaluate(x);
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(*ea, *eb);
  for (size_t k = 0; k < x.size(); ++k) {
    std::memcpy(dev->eval_input_data(static_cast<int>(k)), x[k].raw_data(), x[k].bytes());
  }
  ASSERT_TRUE(dev->run_eval().ok());
  EXPECT_EQ(dev->eval_output(0), (*ea)[0]);
}

TEST(DeviceBackend, CpuOnlyFeaturesArePinnedErrors) {
  const ModelTable hostless = hostless_table();
  std::unique_ptr<CompiledModel> dev = make(hostless);
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->set_check_numerics(true).error().message,
            "--check-numerics is not available on the hostless backend, which this model was "
            "compiled for (backends in this binary that have it: cpu)");
  EXPECT_EQ(dev->set_profiling(true).error().message,
            "--profile is not available on the hostless backend, which this model was compiled "
            "for (backends in this binary that have it: cpu)");
  EXPECT_EQ(dev->profile_report(), "");
  StatusOr<std::unique_ptr<CompiledModel>> ranks =
      CompiledModel::create(hostless, 0, {.communicator = std::make_shared<collective::FakeRanks>(2)});
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.error().message,
            "--data-parallel is not available on the hostless backend, which this model was "
            "compiled for (backends in this binary that have it: cpu)");
}

TEST(DeviceBackend, UnknownBackendNamesTheLinkedOnes) {
  ModelTable t = weft_aot::Mlp::table();
  t.backend = "tpu";
  StatusOr<std::unique_ptr<CompiledModel>> m = CompiledModel::create(t, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "unknown backend 'tpu'; this binary links: cpu, hostless (a backend is linked by its "
            "//runtime/<name>:backend library)");
}

}  // namespace
}  // namespace weft::aot

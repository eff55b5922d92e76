// The backend registry with both backends linked: each name binds its own executor (the
// cuda one says why not on a machine without a GPU), and the pinned errors.
#include "runtime/backend.h"

#include <gtest/gtest.h>

#include "runtime/collective/fake_ranks.h"
#include "runtime/cpu/executor.h"
#include "runtime/cuda/executor.h"

namespace weft {
namespace {

// y = x: one input, returned as the output; no invocations, no kernels.
Program identity_program() {
  Program p;
  p.name = "identity";
  const Type t{DType::f32, Shape({4})};
  p.inputs.push_back({"x", t, InputKind::data});
  BufferRef x;
  x.space = Space::input;
  x.input = 0;
  x.type = t;
  p.outputs.push_back(x);
  lay_out_inputs_in_order(p);
  return p;
}

TEST(Backend, LinkedBackendsAreRegistered) {
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(Backend, UnknownNameListsTheLinkedOnes) {
  StatusOr<const Backend*> b = find_backend("tpu");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message,
            "unknown backend 'tpu'; this binary links: cpu, cuda (a backend is linked by its "
            "//runtime/<name>:backend library)");
}

TEST(Backend, CpuBindsTheCpuExecutor) {
  StatusOr<const Backend*> b = find_backend("cpu");
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  StatusOr<std::unique_ptr<ProgramExecutor>> ex = (*b)->bind(identity_program(), {}, {.num_threads = 1});
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_NE(dynamic_cast<cpu::Executor*>(ex->get()), nullptr);
  Tensor x = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  ASSERT_TRUE((*ex)->set_input("x", x).ok());
  ASSERT_TRUE((*ex)->run().ok());
  EXPECT_EQ((*ex)->output(0), x);
  // Every optional feature, on the executor it bound.
  ASSERT_NE((*b)->host_input_data, nullptr);
  EXPECT_EQ(static_cast<float*>((*b)->host_input_data(**ex, 0))[2], 3.0f);
  EXPECT_NE((*b)->set_check_numerics, nullptr);
  EXPECT_NE((*b)->set_profiling, nullptr);
  EXPECT_TRUE((*b)->multi_rank);
  for (Feature f : {Feature::check_numerics, Feature::profiler, Feature::multi_rank}) {
    EXPECT_TRUE((*b)->has(f)) << feature_flag(f);
  }
  EXPECT_EQ((*b)->unavailable_reason, nullptr);
}

TEST(Backend, CudaBindsTheCudaExecutorOrSaysWhyNot) {
  StatusOr<const Backend*> b = find_backend("cuda");
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_NE((*b)->unavailable_reason, nullptr);
  EXPECT_EQ((*b)->unavailable_reason(), cuda::unavailable_reason());
  StatusOr<std::unique_ptr<ProgramExecutor>> ex = (*b)->bind(identity_program(), {}, {});
  if (!cuda::available()) {
    ASSERT_FALSE(ex.ok());
    EXPECT_EQ(ex.error().message, "no CUDA device: " + cuda::unavailable_reason());
    return;
  }
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_NE(dynamic_cast<cuda::Executor*>(ex->get()), nullptr);
  Tensor x = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  ASSERT_TRUE((*ex)->set_input("x", x).ok());
  ASSERT_TRUE((*ex)->run().ok());
  EXPECT_EQ((*ex)->output(0), x);
}

TEST(Backend, CudaLacksTheCpuOnlyFeaturesAndSaysSo) {
  const Backend* cuda = *find_backend("cuda");
  EXPECT_EQ(cuda->host_input_data, nullptr);
  EXPECT_EQ(cuda->set_check_numerics, nullptr);
  EXPECT_EQ(cuda->set_profiling, nullptr);
  EXPECT_TRUE(cuda->multi_rank && cuda->has(Feature::multi_rank));  // through NCCL
  EXPECT_FALSE(cuda->has(Feature::check_numerics) || cuda->has(Feature::profiler));
  EXPECT_EQ(cuda->unsupported(Feature::check_numerics).message,
            "--check-numerics is not available on the cuda backend, which this model was "
            "compiled for (backends in this binary that have it: cpu)");
  EXPECT_EQ(cuda->unsupported(Feature::profiler).message,
            "--profile is not available on the cuda backend, which this model was compiled "
            "for (backends in this binary that have it: cpu)");
  // Refused before any device is asked for.
  StatusOr<std::unique_ptr<ProgramExecutor>> ex =
      cuda->bind(identity_program(), {}, {.communicator = std::make_shared<collective::FakeRanks>(2)});
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message,
            "the cuda backend reduces the gradients of 2 ranks with NCCL, but was given rank 0 of 2 (a "
            "test's fake): ask the backend for it (Backend::communicator_for, runtime/backend.h)");
}

// Data parallelism: the communicator a backend's steps reduce with, from the launch's.
// cpu reduces with the launch's own; cuda starts NCCL over it on the local rank's GPU,
// which this machine may lack (then every rank gets the pinned error).
TEST(Backend, CommunicatorForDataParallelismIsTheBackendsChoice) {
  const Backend* cpu = *find_backend("cpu");
  const Backend* cuda = *find_backend("cuda");
  std::shared_ptr<collective::Communicator> world = collective::single_process();
  EXPECT_EQ(cpu->rank_communicator, nullptr);
  StatusOr<std::shared_ptr<collective::Communicator>> same = cpu->communicator_for(world, 0, std::chrono::seconds(5));
  ASSERT_TRUE(same.ok()) << same.error().to_string();
  EXPECT_EQ(*same, world);
  StatusOr<std::shared_ptr<collective::Communicator>> none = cuda->communicator_for(nullptr, 0, std::chrono::seconds(5));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  ASSERT_NE(cuda->rank_communicator, nullptr);
  StatusOr<std::shared_ptr<collective::Communicator>> nccl = cuda->communicator_for(world, 0, std::chrono::seconds(5));
  if (!cuda::available()) {
    ASSERT_FALSE(nccl.ok());
    EXPECT_EQ(nccl.error().message, "no CUDA device: " + cuda::unavailable_reason());
    return;
  }
  ASSERT_TRUE(nccl.ok()) << nccl.error().to_string();
  EXPECT_EQ((*nccl)->world_size(), 1);
  EXPECT_NE((*nccl)->describe().find("NCCL"), std::string::npos) << (*nccl)->describe();
  // An NCCL communicator is kept as it is.
  StatusOr<std::shared_ptr<collective::Communicator>> again = cuda->communicator_for(*nccl, 0, std::chrono::seconds(5));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *nccl);
}

// step_communicator: the backend's communicator_for by name, or the launch's world as it
// is for a backend this binary does not link (the reference interpreter is none).
TEST(Backend, StepCommunicatorAsksTheNamedBackend) {
  std::shared_ptr<collective::Communicator> world = collective::single_process();
  for (const std::string name : {"cpu", "reference", "no_such_backend"}) {
    StatusOr<std::shared_ptr<collective::Communicator>> comm =
        step_communicator(name, world, 0, std::chrono::seconds(5));
    ASSERT_TRUE(comm.ok()) << name << ": " << comm.error().to_string();
    EXPECT_EQ(*comm, world) << name;
  }
  StatusOr<std::shared_ptr<collective::Communicator>> nccl =
      step_communicator("cuda", world, 0, std::chrono::seconds(5));
  if (!cuda::available()) {
    ASSERT_FALSE(nccl.ok());
    EXPECT_EQ(nccl.error().message, "no CUDA device: " + cuda::unavailable_reason());
  } else {
    ASSERT_TRUE(nccl.ok()) << nccl.error().to_string();
    EXPECT_NE((*nccl)->describe().find("NCCL"), std::string::npos) << (*nccl)->describe();
  }
}

TEST(Backend, CudaChecksThatEveryOpRunsOnTheDevice) {
  const Backend* cuda = *find_backend("cuda");
  ASSERT_NE(cuda->check_program, nullptr);
  EXPECT_TRUE(cuda->check_program(identity_program()).ok());
}

}  // namespace
}  // namespace weft

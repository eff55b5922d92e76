// NCCL on a GPU with one rank (NCCL refuses two ranks on one GPU, and one GPU is lent):
// the MLP step with its gradients' all_reduce ops (cases.h, mlp784_adam_all_reduce_step)
// bound with an NcclCommunicator — its buckets staged, reduced by ncclAllReduce on the
// communication stream and joined back, all inside the step's one CUDA graph — gives
// parameters and optimizer state bitwise equal to the same step bound without NCCL
// (all_reduce a copy) after several steps, with one bucket or many; launch by launch
// too. Also, on the GPU, the refusal of a second rank's device. The communicator is
// started from single_process(), or from LOCAL_RANK/WORLD_SIZE=1 as torchrun sets them.
// Without a GPU every test skips. tests/cuda/nccl_check.sh runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/collective/bucket_plan.h"
#include "runtime/collective/communicator.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/nccl_communicator.h"
#include "tests/cuda/case_inputs.h"
#include "tests/cuda/cases.h"

namespace weft::cuda {
namespace {

using cuda_cases::Case;

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << "no GPU: " << unavailable_reason()

const Case& named_case(const std::string& name) {
  for (const Case& c : cuda_cases::all_cases()) {
    if (c.name == name) return c;
  }
  WEFT_CHECK(false, "nccl_step_test: no " + name + " among the cases");
  return cuda_cases::all_cases()[0];
}

const Case& all_reduce_case() { return named_case("mlp784_adam_all_reduce_step"); }

// The same step accumulating gradients over 2 micro-batches (gen_cases_main.cc).
const Case& accumulate_case() { return named_case("mlp784_adam_accumulate2_all_reduce_step"); }

// The GPU of this rank: LOCAL_RANK as torchrun sets it (0 when unset). One rank only: a
// WORLD_SIZE above 1 is a launch this test does not make.
int local_rank() {
  const char* world = std::getenv("WORLD_SIZE");
  WEFT_CHECK(world == nullptr || std::atoi(world) == 1, "nccl_step_test runs one rank (WORLD_SIZE=1)");
  const char* v = std::getenv("LOCAL_RANK");
  return v != nullptr ? std::atoi(v) : 0;
}

// The suite's fixture: one rank's NCCL, made by the first test that asks for it
// (ncclCommInitRank per test would be slow) and destroyed in TearDownTestSuite, while
// CUDA is still up — a communicator kept in a static until the process exits is torn down
// after CUDA's own atexit handlers, where NCCL's teardown can hang.
class NcclStep : public testing::Test {
 protected:
  static std::shared_ptr<NcclCommunicator> nccl() {
    if (comm_ == nullptr) {
      StatusOr<std::shared_ptr<NcclCommunicator>> c = NcclCommunicator::create(collective::single_process(), local_rank());
      WEFT_CHECK(c.ok(), c.ok() ? "" : c.error().to_string());
      comm_ = *c;
    }
    return comm_;
  }
  static void TearDownTestSuite() { comm_.reset(); }

 private:
  static std::shared_ptr<NcclCommunicator> comm_;
};

std::shared_ptr<NcclCommunicator> NcclStep::comm_;

std::unique_ptr<Executor> bind(const Case& c, ExecutorOptions options) {
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(c.program(), c.ptx, c.symbols, options);
  WEFT_CHECK(ex.ok(), ex.ok() ? "" : ex.error().to_string());
  return std::move(*ex);
}

// Every input of `a` and `b` (parameters and optimizer state) after `steps` steps of
// case `c` from the same seeded inputs, compared byte for byte; the outputs (the loss)
// of the last.
void expect_bitwise_equal_steps(Executor& a, Executor& b, int steps, const Case& c = all_reduce_case()) {
  const Graph g = cuda_cases::parse_case(c);
  std::vector<Tensor> inputs = cuda_cases::make_inputs(g, 32);
  for (int step = 0; step < steps; ++step) {
    cuda_cases::set_step(g, inputs, step);
    for (Executor* ex : {&a, &b}) {
      if (step == 0) {
        for (size_t i = 0; i < inputs.size(); ++i) ASSERT_TRUE(ex->set_input(static_cast<int>(i), inputs[i]).ok());
      } else if (const int s = ex->find_input("weft.step"); s >= 0) {
        ASSERT_TRUE(ex->set_input(s, inputs[s]).ok());
      }
      const Status run = ex->run();
      ASSERT_TRUE(run.ok()) << run.to_string();
    }
  }
  for (int i = 0; i < a.num_outputs(); ++i) EXPECT_EQ(a.output(i), b.output(i)) << "output " << i;
  int compared = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (g.inputs()[i].kind == InputKind::data) continue;
    EXPECT_EQ(a.input(static_cast<int>(i)), b.input(static_cast<int>(i))) << g.value(g.inputs()[i].value).name;
    ++compared;
  }
  EXPECT_GT(compared, 6);
}

TEST_F(NcclStep, OneRankEqualsTheSingleGpuStepBitwiseInsideTheCudaGraph) {
  SKIP_WITHOUT_GPU();
  const Case& c = all_reduce_case();
  std::unique_ptr<Executor> single = bind(c, {.device = local_rank()});
  std::unique_ptr<Executor> one_bucket_per_kind = bind(c, {.device = local_rank(), .nccl = nccl()});
  EXPECT_TRUE(single->uses_cuda_graph());
  EXPECT_TRUE(one_bucket_per_kind->uses_cuda_graph());
  const std::string described = one_bucket_per_kind->describe();
  EXPECT_NE(described.find("stage into bucket 0"), std::string::npos) << described;
  EXPECT_NE(described.find("NCCL"), std::string::npos) << described;
  std::printf("%s", described.c_str());
  expect_bitwise_equal_steps(*single, *one_bucket_per_kind, 10);
}

TEST_F(NcclStep, ManySmallBucketsOverlappingTheBackwardPassToo) {
  SKIP_WITHOUT_GPU();
  const Case& c = all_reduce_case();
  std::unique_ptr<Executor> single = bind(c, {.device = local_rank()});
  std::unique_ptr<Executor> small = bind(c, {.device = local_rank(), .nccl = nccl(), .all_reduce_bucket_bytes = 4096});
  std::unique_ptr<Executor> launches =
      bind(c, {.device = local_rank(), .cuda_graph = false, .nccl = nccl(), .all_reduce_bucket_bytes = 4096});
  EXPECT_TRUE(small->uses_cuda_graph());
  EXPECT_FALSE(launches->uses_cuda_graph());
  expect_bitwise_equal_steps(*single, *small, 10);
  std::unique_ptr<Executor> single_again = bind(c, {.device = local_rank()});
  expect_bitwise_equal_steps(*single_again, *launches, 4);
}

// No GPU needed: the lowered step's schedule (the one the executor walks with NCCL), with
// buckets of 64 KiB then 256 KiB (nccl_step_test binds them at 4 KiB), starts its first
// bucket while gradients are still being produced, and other invocations run while it
// is in flight. (With DDP's 1 MiB first bucket this 1.07 MB step has a single bucket,
// which starts after the last gradient: printed, not asserted.)
TEST_F(NcclStep, TheLoweredStepsFirstBucketStartsDuringTheBackwardPass) {
  const Case& c = all_reduce_case();
  const Program program = c.program();
  StatusOr<collective::BucketPlan> ddp = collective::plan_buckets(program, {});
  ASSERT_TRUE(ddp.ok()) << ddp.error().to_string();
  std::printf("DDP's sizes:\n%s", collective::describe(*ddp).c_str());
  StatusOr<collective::BucketPlan> plan =
      collective::plan_buckets(program, {.first_bucket_bytes = 64 << 10, .bucket_bytes = 256 << 10});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  std::printf("64 KiB, then 256 KiB:\n%s", collective::describe(*plan).c_str());
  ASSERT_GE(plan->buckets.size(), 2u);
  const std::vector<StepAction> actions = schedule_step(program, *plan);
  const auto at = [&](StepAction a) { return std::find(actions.begin(), actions.end(), a) - actions.begin(); };
  // The first bucket starts before the last gradient is staged.
  EXPECT_LT(at({StepAction::Kind::start_bucket, 0}), at({StepAction::Kind::invoke, plan->buckets.back().start_after}));
  size_t invocations_meanwhile = 0;
  for (auto i = at({StepAction::Kind::start_bucket, 0}); i < static_cast<long>(actions.size()); ++i) {
    invocations_meanwhile += actions[i].kind == StepAction::Kind::invoke && plan->bucket_of[actions[i].index] < 0;
    if (actions[i] == StepAction{StepAction::Kind::wait_bucket, 0}) break;
  }
  std::printf("invocations overlapping bucket 0: %zu\n", invocations_meanwhile);
  EXPECT_GT(invocations_meanwhile, 0u);
}

// Gradient accumulation over 2 micro-batches with NCCL: two captured graphs over one
// arena, the host replaying the accumulating one on a window's first micro-batch and the
// reducing one on its last; after 6 micro-batches (3 updates) parameters and optimizer
// state are bitwise those of the same step on one GPU without NCCL.
TEST_F(NcclStep, AccumulationOnOneRankEqualsTheSingleGpuStepBitwise) {
  SKIP_WITHOUT_GPU();
  const Case& c = accumulate_case();
  std::unique_ptr<Executor> single = bind(c, {.device = local_rank()});
  const int step_input = single->find_input("weft.step");
  ASSERT_GE(step_input, 0);
  std::unique_ptr<Executor> two_graphs =
      bind(c, {.device = local_rank(), .nccl = nccl(), .accumulation = {.step_input = step_input, .steps = 2}});
  EXPECT_TRUE(two_graphs->uses_cuda_graph());
  const std::string described = two_graphs->describe();
  std::printf("%s", described.c_str());
  EXPECT_NE(described.find("gradient accumulation over 2 micro-batches: two captured steps"), std::string::npos)
      << described;
  EXPECT_NE(described.find("elements: accumulating)"), std::string::npos) << described;
  for (const int64_t step : {1, 2, 3}) {
    ASSERT_TRUE(two_graphs->set_input(step_input, Tensor::scalar(DType::i64, static_cast<double>(step))).ok());
    EXPECT_EQ(two_graphs->next_variant(), step % 2 == 0 ? StepVariant::reduce : StepVariant::accumulate) << step;
  }
  expect_bitwise_equal_steps(*single, *two_graphs, 6, c);
  // Launch by launch, the host picks the same schedules.
  std::unique_ptr<Executor> single_again = bind(c, {.device = local_rank()});
  std::unique_ptr<Executor> launches = bind(c, {.device = local_rank(), .cuda_graph = false, .nccl = nccl(),
                                                .accumulation = {.step_input = step_input, .steps = 2}});
  expect_bitwise_equal_steps(*single_again, *launches, 4, c);
}

// Accumulation needs the step number's input to choose a graph: a binding without it
// (or naming another input) is refused, naming the option.
TEST_F(NcclStep, AccumulationWithoutTheStepInputIsRefused) {
  SKIP_WITHOUT_GPU();
  const Case& c = accumulate_case();
  StatusOr<std::unique_ptr<Executor>> ex =
      Executor::create(c.program(), c.ptx, c.symbols,
                       {.device = local_rank(), .nccl = nccl(), .accumulation = {.step_input = -1, .steps = 2}});
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.error().message,
            "cuda::Executor: gradient accumulation over 2 micro-batches needs the step number's input "
            "(ExecutorOptions::accumulation.step_input, an i64[]), but input -1 of program @" +
                c.program().name + " is not one");
}

// No GPU needed: the lowered accumulating step's gradients share predicated buckets,
// and the schedule replayed on a window's first micro-batch reduces none of them — only
// the loss (one element), which is reduced every micro-batch.
TEST_F(NcclStep, TheAccumulatingScheduleReducesOnlyTheLoss) {
  const Program program = accumulate_case().program();
  StatusOr<collective::BucketPlan> plan = collective::plan_buckets(program, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  std::printf("%s", collective::describe(*plan).c_str());
  ASSERT_TRUE(has_predicated_bucket(*plan));
  int64_t reduced_while_accumulating = 0, reduced_on_the_last = 0;
  for (const StepAction& a : schedule_step(program, *plan, StepVariant::accumulate)) {
    const collective::Bucket& b = plan->buckets[a.index];
    EXPECT_FALSE(a.kind == StepAction::Kind::start_bucket && b.predicate) << "bucket " << a.index;
    if (a.kind == StepAction::Kind::start_bucket) reduced_while_accumulating += b.count;
    if (a.kind == StepAction::Kind::start_bucket_unpredicated) reduced_while_accumulating += b.always_count;
  }
  for (const StepAction& a : schedule_step(program, *plan, StepVariant::reduce)) {
    if (a.kind == StepAction::Kind::start_bucket) reduced_on_the_last += plan->buckets[a.index].count;
  }
  EXPECT_EQ(reduced_while_accumulating, 1);  // the loss
  EXPECT_EQ(reduced_on_the_last, 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10 + 1);
}

// On a machine with one GPU, a second rank there (local rank 1) is refused before NCCL
// is asked (one rank of a world of one: the check is this rank's own).
TEST_F(NcclStep, ALocalRankWithoutItsGpuIsRefused) {
  SKIP_WITHOUT_GPU();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  StatusOr<std::shared_ptr<NcclCommunicator>> c = NcclCommunicator::create(collective::single_process(), count);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("needs CUDA device " + std::to_string(count) + ", but host"), std::string::npos)
      << c.error().message;
}

}  // namespace
}  // namespace weft::cuda

// Issue 32, the overlap goal's plan: in the 2-rank CPU MLP step of bench/ddp_overlap.sh
// (16-512-512-4, ReLU, Adam, cross-entropy, global batch 256: 128 rows per rank), what
// the backward pass computes while each bucket's reduction is in flight: with the 512×512
// weight gradient computed in 2 row blocks, each reduced on its own
// (TrainOptions::split_gradient_bytes = 1 MiB, passes/split_gradients.h), and without the
// split (the default). Compiled with
// a communicator that claims 2 ranks holding the same values (IdenticalRanks), so no
// launcher is needed: the Program and its bucket plan are what every rank of
// `mpirun -np 2` runs.
//
// The static figures of bench/RESULTS.md come from here (printed by the test) and from
// `train_mlp --describe`, whose bucket lines end with the same figure.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "runtime/collective/bucket_plan.h"
#include "runtime/collective/fake_ranks.h"
#include "runtime/cpu/cost.h"

namespace weft {
namespace {

// collective::FakeRanks whose peers hold what this rank holds: a sum is world_size times
// the value, a mean the value (the Trainer's check that every rank compiled the same step
// sums a fingerprint and its square).
class IdenticalRanks : public collective::FakeRanks {
 public:
  IdenticalRanks() : FakeRanks(2) {}
  Status all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction) override {
    if (reduction != collective::Reduction::sum) return Status();
    if (dtype != DType::f64) return Error{"IdenticalRanks sums f64 only"};
    auto* x = static_cast<double*>(data);
    for (int64_t i = 0; i < count; ++i) x[i] *= world_size();
    return Status();
  }
};

constexpr int64_t kRows = 128;  // per rank: the global batch of 256 over 2 ranks
constexpr int64_t kHidden = 512;

// split_bytes: TrainOptions::split_gradient_bytes.
StatusOr<Trainer> mlp_step(int64_t split_bytes) {
  auto net = FlowBuilder::from(Linear(16, kHidden))
                 .through(ReLU())
                 .through(Linear(kHidden, kHidden))
                 .through(ReLU())
                 .through(Linear(kHidden, 4))
                 .build();
  if (!net.ok()) return net.error();
  TrainOptions options;
  options.seed = 7;
  options.bind.communicator = std::make_shared<IdenticalRanks>();
  options.split_gradient_bytes = split_bytes;
  return Trainer::compile(*net, {{"x", Type{DType::f32, {kRows, 16}}}}, LossSpec::cross_entropy(),
                          OptimizerSpec::adam(/*lr=*/1e-2), options);
}

// GEMMs of a 128×512×512 product's flops or more: the forward pass's, the weight
// gradient's and the data gradient's (the last).
constexpr double kLargeGemm = 2.0 * kRows * kHidden * kHidden;
int large_gemms(const Program& program) {
  int n = 0;
  for (const Invocation& inv : program.code) n += cpu::invocation_cost(program, inv).flops >= kLargeGemm;
  return n;
}
// The invocations computing flops `flops` exactly, in program order.
std::vector<size_t> invocations_of(const Program& program, double flops) {
  std::vector<size_t> found;
  for (size_t i = 0; i < program.code.size(); ++i) {
    if (cpu::invocation_cost(program, program.code[i]).flops == flops) found.push_back(i);
  }
  return found;
}
size_t last_large_gemm(const Program& program) {
  size_t last = 0;
  for (size_t i = 0; i < program.code.size(); ++i) {
    if (cpu::invocation_cost(program, program.code[i]).flops >= kLargeGemm) last = i;
  }
  return last;
}

// The bucket holding the 512×512 weight gradient.
const collective::Bucket& large_bucket(const collective::BucketPlan& plan) {
  for (const collective::Bucket& b : plan.buckets) {
    for (const collective::BucketMember& m : b.members) {
      if (m.count == kHidden * kHidden) return b;
    }
  }
  return plan.buckets.front();
}

// The buckets whose last member (the one that starts it) has `count` elements, in the
// order they start.
std::vector<const collective::Bucket*> buckets_closed_by(const collective::BucketPlan& plan, int64_t count) {
  std::vector<const collective::Bucket*> found;
  for (const collective::Bucket& b : plan.buckets) {
    if (b.members.back().count == count) found.push_back(&b);
  }
  return found;
}

// One line per bucket: where it starts and is waited for, and the flops in between.
void print_plan(const Program& program, const collective::BucketPlan& plan, const std::string& title) {
  const double step = cpu::flops_between(program, 0, program.code.size());
  std::printf("%s:\n", title.c_str());
  for (size_t k = 0; k < plan.buckets.size(); ++k) {
    const collective::Bucket& b = plan.buckets[k];
    const double in_flight = cpu::flops_between(program, b.start_after + 1, b.wait_before);
    std::printf("  bucket %zu: %lld elements, starts after invocation %zu, waited for before %zu: "
                "%.1f of the step's %.1f MFLOP in between (%.0f%%)\n",
                k, static_cast<long long>(b.count), b.start_after, b.wait_before, in_flight / 1e6, step / 1e6,
                100 * in_flight / step);
  }
}

// The split plan (1 MiB): the 512×512 weight gradient is computed as 2 row blocks of 256×512
// (2 GEMMs of 128×256×512, half the flops of the whole one), and each block's all_reduce
// closes its bucket right after its GEMM. The first block's reduction is in flight over
// the second block's GEMM and the middle layer's data gradient (a 128×512×512 GEMM), the
// second block's over the data gradient. Without the split (the block GEMMs absent, or
// the blocks sharing a bucket that starts after both) this fails.
TEST(OverlapPlan, TheSplitGradientsFirstBlockIsReducedWhileTheSecondIsComputed) {
  StatusOr<Trainer> trainer = mlp_step(/*split_bytes=*/int64_t{1} << 20);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  ASSERT_NE(trainer->compiled_step(), nullptr);
  const Program& program = trainer->compiled_step()->program();
  const std::string listing = trainer->compiled_step()->describe();
  StatusOr<collective::BucketPlan> plan = collective::plan_buckets(program, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();

  const std::vector<size_t> block_gemms = invocations_of(program, kLargeGemm / 2);
  ASSERT_EQ(block_gemms.size(), 2u) << listing;
  ASSERT_EQ(large_gemms(program), 2) << "the forward's and the data gradient's alone\n" << listing;
  const size_t data_gradient = last_large_gemm(program);
  const std::vector<const collective::Bucket*> blocks = buckets_closed_by(*plan, kHidden * kHidden / 2);
  ASSERT_EQ(blocks.size(), 2u) << collective::describe(*plan);
  const collective::Bucket& first = *blocks[0];
  const collective::Bucket& second = *blocks[1];

  EXPECT_EQ(first.start_after, block_gemms[0] + 1) << "the block's GEMM, then its all_reduce\n" << listing;
  EXPECT_LT(first.start_after, block_gemms[1]) << listing;
  EXPECT_EQ(second.start_after, block_gemms[1] + 1) << listing;
  EXPECT_LT(second.start_after, data_gradient) << listing;
  EXPECT_GT(first.wait_before, data_gradient) << listing;
  EXPECT_GT(second.wait_before, data_gradient) << listing;
  EXPECT_GE(cpu::flops_between(program, first.start_after + 1, first.wait_before), kLargeGemm / 2 + kLargeGemm);
  EXPECT_GE(cpu::flops_between(program, second.start_after + 1, second.wait_before), kLargeGemm);
  print_plan(program, *plan, "1 MiB first bucket, the 512x512 gradient in 2 row blocks");
}

// Without the split (split_gradient_bytes 0, the default): the bucket holding the 512×512 weight
// gradient (the last member to close it) starts right after the GEMM producing it, and
// the middle layer's data gradient (a 128×512×512 GEMM, 2·128·512·512 flops, the only
// GEMM of that size after the forward pass's and the weight gradient's) runs while its
// reduction is in flight.
TEST(OverlapPlan, WithoutTheSplitTheLargeBucketStartsBeforeTheDataGradientGemm) {
  StatusOr<Trainer> trainer = mlp_step(/*split_bytes=*/0);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  ASSERT_NE(trainer->compiled_step(), nullptr);
  const Program& program = trainer->compiled_step()->program();
  StatusOr<collective::BucketPlan> plan = collective::plan_buckets(program, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  ASSERT_EQ(plan->buckets.size(), 2u) << collective::describe(*plan);

  ASSERT_EQ(large_gemms(program), 3) << trainer->compiled_step()->describe();
  const size_t data_gradient = last_large_gemm(program);

  const collective::Bucket& large = plan->buckets[0];
  EXPECT_EQ(large.members.back().count, kHidden * kHidden) << collective::describe(*plan);
  EXPECT_GE(cpu::invocation_cost(program, program.code[large.start_after - 1]).flops, kLargeGemm)
      << "the weight gradient's GEMM right before its all_reduce\n" << trainer->compiled_step()->describe();
  EXPECT_LT(large.start_after, data_gradient) << trainer->compiled_step()->describe();
  EXPECT_GT(large.wait_before, data_gradient) << trainer->compiled_step()->describe();

  EXPECT_GE(cpu::flops_between(program, large.start_after + 1, large.wait_before), kLargeGemm);
  print_plan(program, *plan, "default: 1 MiB first bucket, no split");
}

// Smaller first buckets, without the split (bench/RESULTS.md): with 64 KiB the plan is the default's (the
// loss and the small gradients before the 512×512 one hold 10 KB, so that one still
// closes the first bucket); with 8 KiB the first bucket closes at the last layer's weight
// gradient and the 512×512 one joins the first layer's in a 25 MiB bucket that starts
// after the data-gradient GEMM, with nothing to hide it.
TEST(OverlapPlan, SmallerFirstBucketsStartTheLargeGradientNoEarlier) {
  StatusOr<Trainer> trainer = mlp_step(/*split_bytes=*/0);
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  const Program& program = trainer->compiled_step()->program();
  StatusOr<collective::BucketPlan> default_plan = collective::plan_buckets(program, {});
  StatusOr<collective::BucketPlan> small = collective::plan_buckets(program, {.first_bucket_bytes = 64 << 10});
  StatusOr<collective::BucketPlan> tiny = collective::plan_buckets(program, {.first_bucket_bytes = 8 << 10});
  ASSERT_TRUE(default_plan.ok() && small.ok() && tiny.ok());
  EXPECT_EQ(collective::describe(*small), collective::describe(*default_plan));
  EXPECT_GT(large_bucket(*tiny).start_after, last_large_gemm(program)) << collective::describe(*tiny);
  print_plan(program, *small, "65536-byte first bucket");
  print_plan(program, *tiny, "8192-byte first bucket");
}

}  // namespace
}  // namespace weft

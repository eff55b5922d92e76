// The two-stream schedule of a data-parallel step, on the host: the order pinned on small
// Programs, and every schedule emulated for two ranks — the communication stream's work
// done as late as the schedule allows (the reduction reads the staging block at its
// start, the results land at its wait) — against the step run in program order, where
// each all_reduce completes where it stands. A wait placed too late, or a start too
// early, changes what some invocation reads.
#include "runtime/cuda/step_schedule.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

namespace weft::cuda {
namespace {

using collective::BucketPlan;

constexpr int64_t kSlot = 64;  // bytes between the test's buffers
constexpr int64_t kFloats = 4; // floats per buffer

BufferRef slot(int s) {
  BufferRef r;
  r.space = Space::arena;
  r.offset = s * kSlot;
  r.type = Type{DType::f32, {kFloats}};
  return r;
}

Invocation invocation(Invocation::Kind kind, int from, int to, const char* reduction = nullptr) {
  Invocation inv;
  inv.kind = kind;
  if (reduction != nullptr) {
    inv.node.op = Op::AllReduce;
    inv.node.attrs["reduction"] = std::string(reduction);
  }
  inv.operands = {slot(from)};
  inv.results = {slot(to)};
  return inv;
}
Invocation copy(int from, int to) { return invocation(Invocation::Kind::copy, from, to); }
Invocation all_reduce(int from, int to, const char* reduction = "mean") {
  return invocation(Invocation::Kind::library, from, to, reduction);
}
// An all_reduce with a predicate in slot `predicate` (gradient accumulation's window).
Invocation predicated_all_reduce(int from, int to, int predicate) {
  Invocation inv = all_reduce(from, to);
  BufferRef p = slot(predicate);
  p.type = Type{DType::boolean, {}};
  inv.operands.push_back(p);
  return inv;
}

// Two ranks' arenas of `slots` buffers, rank r's floats distinct from the other's.
using Arenas = std::vector<std::vector<float>>;
Arenas initial(int slots) {
  Arenas a(2, std::vector<float>(static_cast<size_t>(slots * kSlot / 4)));
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < a[r].size(); ++i) a[r][i] = static_cast<float>(1 + i + 1000 * r);
  }
  return a;
}

float* at(std::vector<float>& arena, const BufferRef& ref) { return arena.data() + ref.offset / 4; }

// The reduction over both ranks of `count` floats at each rank's `from`, into `to`.
void reduce(float* const from[2], float* const to[2], int64_t count, bool mean) {
  for (int64_t i = 0; i < count; ++i) {
    const float s = from[0][i] + from[1][i];
    to[0][i] = to[1][i] = mean ? s / 2 : s;
  }
}

// `predicate`: the value of every predicated all_reduce's predicate (false: its result
// is its operand, as where the CPU executor skips the reduction).
void run_in_program_order(const Program& p, Arenas& a, bool predicate = true) {
  for (const Invocation& inv : p.code) {
    float* from[2] = {at(a[0], inv.operands[0]), at(a[1], inv.operands[0])};
    float* to[2] = {at(a[0], inv.results[0]), at(a[1], inv.results[0])};
    if (inv.kind == Invocation::Kind::copy || (inv.operands.size() > 1 && !predicate)) {
      for (int r = 0; r < 2; ++r) std::memmove(to[r], from[r], kFloats * 4);
    } else {
      reduce(from, to, kFloats, inv.node.str_attr("reduction") == "mean");
    }
  }
}

// The schedule's actions on both ranks: a member stages its operand; a start reduces the
// staging slices into a pending result (an unpredicated start, its unpredicated prefix
// only: each rank's own operands after it); a wait writes it into the members' results.
void run_schedule(const Program& p, const BucketPlan& plan, const std::vector<StepAction>& actions, Arenas& a) {
  std::vector<std::vector<float>> staging(2, std::vector<float>(static_cast<size_t>(plan.staging_bytes / 4)));
  std::vector<std::array<std::vector<float>, 2>> pending(plan.buckets.size());
  for (const StepAction& act : actions) {
    if (act.kind == StepAction::Kind::invoke) {
      const Invocation& inv = p.code[act.index];
      const int k = plan.bucket_of[act.index];
      if (k < 0) {  // not a member: as in program order
        Program one;
        one.code = {inv};
        run_in_program_order(one, a);
        continue;
      }
      const collective::Bucket& b = plan.buckets[static_cast<size_t>(k)];
      for (const collective::BucketMember& m : b.members) {
        if (m.invocation != act.index) continue;
        for (int r = 0; r < 2; ++r) {
          std::memcpy(staging[r].data() + b.staging_offset / 4 + m.offset, at(a[r], m.operand), m.count * 4);
        }
      }
    } else if (act.kind == StepAction::Kind::start_bucket || act.kind == StepAction::Kind::start_bucket_unpredicated) {
      const collective::Bucket& b = plan.buckets[act.index];
      std::array<std::vector<float>, 2>& out = pending[act.index];
      float* from[2] = {staging[0].data() + b.staging_offset / 4, staging[1].data() + b.staging_offset / 4};
      for (int r = 0; r < 2; ++r) out[r].assign(from[r], from[r] + b.count);
      float* to[2] = {out[0].data(), out[1].data()};
      const bool all = act.kind == StepAction::Kind::start_bucket;
      reduce(from, to, all ? b.count : b.always_count, b.reduction == collective::Reduction::mean);
    } else {
      const collective::Bucket& b = plan.buckets[act.index];
      ASSERT_FALSE(pending[act.index][0].empty()) << "bucket " << act.index << " waited on before it started";
      for (const collective::BucketMember& m : b.members) {
        for (int r = 0; r < 2; ++r) std::memcpy(at(a[r], m.result), pending[act.index][r].data() + m.offset, m.count * 4);
      }
    }
  }
}

// Both runs of `p` with buckets of at most `bucket_bytes`, compared; the actions returned.
// `variant`: the schedule's (the accumulate variant against program order with every
// predicate false).
std::vector<StepAction> check_schedule(const Program& p, int slots, int64_t bucket_bytes, BucketPlan* plan_out = nullptr,
                                       StepVariant variant = StepVariant::reduce) {
  StatusOr<BucketPlan> plan = collective::plan_buckets(p, {bucket_bytes, bucket_bytes});
  EXPECT_TRUE(plan.ok());
  const std::vector<StepAction> actions = schedule_step(p, *plan, variant);
  Arenas want = initial(slots), got = initial(slots);
  run_in_program_order(p, want, /*predicate=*/variant == StepVariant::reduce);
  run_schedule(p, *plan, actions, got);
  for (const BufferRef& out : p.outputs) {
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < kFloats; ++i) {
        EXPECT_EQ(at(got[r], out)[i], at(want[r], out)[i]) << "rank " << r << " output at " << out.offset << "\n"
                                                           << describe(actions, p, *plan);
      }
    }
  }
  if (plan_out != nullptr) *plan_out = *plan;
  return actions;
}

Program with_outputs(std::vector<Invocation> code, int slots) {
  Program p;
  p.name = "step";
  p.code = std::move(code);
  p.arena_bytes = slots * kSlot;
  for (int s = 0; s < slots; ++s) p.outputs.push_back(slot(s));
  return p;
}

TEST(StepSchedule, ABucketStartsAfterItsLastGradientAndIsWaitedOnByItsFirstReader) {
  // Gradients in slots 0 and 2, reduced into 4 and 5; slot 1 is computed meanwhile;
  // 6 reads a reduced gradient (an optimizer update).
  const Program p = with_outputs({all_reduce(0, 4), copy(0, 1), all_reduce(2, 5), copy(1, 3), copy(5, 6)}, 7);
  BucketPlan plan;
  const std::vector<StepAction> actions = check_schedule(p, 7, 1 << 20, &plan);
  EXPECT_EQ(describe(actions, p, plan),
            "#0 library all_reduce (stage into bucket 0)\n"
            "#1 copy\n"
            "#2 library all_reduce (stage into bucket 0)\n"
            "start bucket 0 (2 f32 mean, 8 elements) on the communication stream\n"
            "#3 copy\n"
            "wait for bucket 0\n"
            "#4 copy\n");
}

TEST(StepSchedule, SmallBucketsOverlapTheRestOfTheStepAndJoinBeforeTheUpdates) {
  // Four gradients, a bucket each (16 bytes); only the end of the step reads them.
  std::vector<Invocation> code;
  for (int g = 0; g < 4; ++g) {
    code.push_back(copy(g, g + 4));         // "backward": produce gradient g
    code.push_back(all_reduce(g + 4, g + 8));
  }
  Program p = with_outputs(code, 12);
  p.outputs = {slot(0)};
  for (int g = 0; g < 4; ++g) p.updates.push_back({g, slot(g + 8)});
  BucketPlan plan;
  const std::vector<StepAction> actions = check_schedule(p, 12, 16, &plan);
  ASSERT_EQ(plan.buckets.size(), 4u);
  // Each bucket starts right after its gradient, the next gradient computed meanwhile;
  // all four are waited on at the end, before the updates.
  std::vector<StepAction> want;
  for (size_t g = 0; g < 4; ++g) {
    want.push_back({StepAction::Kind::invoke, 2 * g});
    want.push_back({StepAction::Kind::invoke, 2 * g + 1});
    want.push_back({StepAction::Kind::start_bucket, g});
  }
  for (size_t g = 0; g < 4; ++g) want.push_back({StepAction::Kind::wait_bucket, g});
  EXPECT_EQ(actions, want);
}

TEST(StepSchedule, WithoutAllReduceEveryInvocationRunsInOrder) {
  const Program p = with_outputs({copy(0, 1), copy(1, 2)}, 3);
  const std::vector<StepAction> actions = check_schedule(p, 3, 1 << 20);
  EXPECT_EQ(actions, (std::vector<StepAction>{{StepAction::Kind::invoke, 0}, {StepAction::Kind::invoke, 1}}));
}

// 3 to 14 random copies and all_reduces (sums and means; with `predicate` >= 0 also
// means predicated on that slot) over `slots` buffers.
std::vector<Invocation> random_code(std::mt19937& rng, int slots, int predicate = -1) {
  std::vector<Invocation> code;
  const int n = 3 + static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) {
    const int from = static_cast<int>(rng() % slots), to = static_cast<int>(rng() % slots);
    const unsigned what = rng() % (predicate >= 0 ? 4 : 3);
    code.push_back(what == 0   ? copy(from, to)
                   : what == 3 ? predicated_all_reduce(from, to, predicate)
                               : all_reduce(from, to, what == 1 ? "mean" : "sum"));
  }
  return code;
}

// Random steps of copies and all_reduces (sums and means) over a few buffers, bucketed
// at several sizes: every schedule computes what program order computes, on both ranks.
TEST(StepSchedule, RandomStepsMatchProgramOrder) {
  std::mt19937 rng(7);
  constexpr int kSlots = 6;
  for (int trial = 0; trial < 300; ++trial) {
    Program p = with_outputs(random_code(rng, kSlots), kSlots);
    if (trial % 2 == 1) p.outputs.resize(static_cast<size_t>(rng() % kSlots));  // some results unread
    for (const int64_t bytes : {int64_t{0}, int64_t{16}, int64_t{48}, int64_t{1} << 20}) {
      check_schedule(p, kSlots, bytes);
      if (HasFailure()) return;
    }
  }
}

// Gradient accumulation: the window's last micro-batch (a step number that is a multiple
// of the window) reduces; the others accumulate; without accumulation every step reduces.
TEST(StepSchedule, TheHostPicksTheVariantFromTheStepNumber) {
  std::vector<StepVariant> got;
  for (int64_t step = 1; step <= 6; ++step) got.push_back(variant_of_step(step, 3));
  using enum StepVariant;
  EXPECT_EQ(got, (std::vector<StepVariant>{accumulate, accumulate, reduce, accumulate, accumulate, reduce}));
  for (int64_t step = 1; step <= 3; ++step) {
    EXPECT_EQ(variant_of_step(step, 1), reduce);
    EXPECT_EQ(variant_of_step(step, 0), reduce);
  }
  EXPECT_EQ(variant_of_step(2, 2), reduce);
  EXPECT_EQ(variant_of_step(3, 2), accumulate);
}

// The accumulated gradient (slot 1, predicate in slot 9) and the loss (slot 2, always
// reduced) share a bucket; an update reads the reduced gradient. The reduce variant
// reduces both; the accumulate variant reduces the loss alone and leaves the gradient
// its own rank's — each what program order computes with the predicate true or false.
TEST(StepSchedule, TheAccumulatingStepReducesNoPredicatedMember) {
  Program p = with_outputs({copy(0, 1), predicated_all_reduce(1, 4, 9), all_reduce(2, 5), copy(4, 7)}, 10);
  p.outputs = {slot(5), slot(7)};
  BucketPlan plan;
  const std::vector<StepAction> reducing = check_schedule(p, 10, 1 << 20, &plan, StepVariant::reduce);
  const std::vector<StepAction> accumulating = check_schedule(p, 10, 1 << 20, &plan, StepVariant::accumulate);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_TRUE(has_predicated_bucket(plan));
  EXPECT_EQ(describe(reducing, p, plan),
            "#0 copy\n"
            "#1 library all_reduce (stage into bucket 0)\n"
            "#2 library all_reduce (stage into bucket 0)\n"
            "start bucket 0 (2 f32 mean, 8 elements) on the communication stream\n"
            "wait for bucket 0\n"
            "#3 copy\n");
  EXPECT_EQ(describe(accumulating, p, plan),
            "#0 copy\n"
            "#1 library all_reduce (stage into bucket 0)\n"
            "#2 library all_reduce (stage into bucket 0)\n"
            "start bucket 0 (2 f32 mean, 4 of 8 elements: accumulating) on the communication stream\n"
            "wait for bucket 0\n"
            "#3 copy\n");
  // The two variants differ only in that start: the same invocations, starts and waits.
  ASSERT_EQ(reducing.size(), accumulating.size());
  for (size_t i = 0; i < reducing.size(); ++i) {
    if (reducing[i].kind == StepAction::Kind::start_bucket && plan.buckets[reducing[i].index].predicate) {
      EXPECT_EQ(accumulating[i], (StepAction{StepAction::Kind::start_bucket_unpredicated, reducing[i].index}));
    } else {
      EXPECT_EQ(accumulating[i], reducing[i]);
    }
  }
}

// A bucket of predicated members alone: accumulating, nothing is reduced (the start only
// copies the slice back); a step without predicates is the same in both variants.
TEST(StepSchedule, APredicatedBucketWithoutTheLossReducesNothingWhileAccumulating) {
  Program p = with_outputs({predicated_all_reduce(0, 4, 9), predicated_all_reduce(1, 5, 9), copy(4, 6)}, 10);
  p.outputs = {slot(6), slot(5)};
  BucketPlan plan;
  check_schedule(p, 10, 1 << 20, &plan, StepVariant::reduce);
  const std::vector<StepAction> accumulating = check_schedule(p, 10, 1 << 20, &plan, StepVariant::accumulate);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].always_count, 0);
  EXPECT_NE(describe(accumulating, p, plan).find("(2 f32 mean, 0 of 8 elements: accumulating)"), std::string::npos);
  const Program plain = with_outputs({all_reduce(0, 4), copy(4, 6)}, 10);
  BucketPlan plain_plan;
  EXPECT_EQ(check_schedule(plain, 10, 1 << 20, &plain_plan, StepVariant::accumulate),
            check_schedule(plain, 10, 1 << 20, &plain_plan, StepVariant::reduce));
  EXPECT_FALSE(has_predicated_bucket(plain_plan));
}

// Random steps with predicated and unpredicated all_reduces over a few buffers, bucketed
// at several sizes: both variants compute what program order computes with the
// predicate true (reduce) and false (accumulate), on both ranks.
TEST(StepSchedule, RandomAccumulatingStepsMatchProgramOrder) {
  std::mt19937 rng(11);
  constexpr int kSlots = 6, kPredicate = 7;
  for (int trial = 0; trial < 300; ++trial) {
    Program p = with_outputs(random_code(rng, kSlots, kPredicate), kSlots);
    p.arena_bytes = (kPredicate + 1) * kSlot;
    for (const int64_t bytes : {int64_t{0}, int64_t{16}, int64_t{48}, int64_t{1} << 20}) {
      for (const StepVariant variant : {StepVariant::reduce, StepVariant::accumulate}) {
        check_schedule(p, kPredicate + 1, bytes, nullptr, variant);
        if (HasFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace weft::cuda

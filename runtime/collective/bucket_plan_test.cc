// The bucket plan on small hand-written Programs: members and offsets, the byte limits
// (the smaller first bucket), kinds that never share a bucket, where each bucket starts
// and waits, results nothing reads, input-space buffers, and a split gradient's row blocks.
#include "runtime/collective/bucket_plan.h"

#include <gtest/gtest.h>

#include <optional>

namespace weft::collective {
namespace {

BufferRef arena(int64_t offset, int64_t n, DType dtype = DType::f32) {
  BufferRef r;
  r.space = Space::arena;
  r.offset = offset;
  r.type = Type{dtype, {n}};
  return r;
}

// A Program built one invocation at a time; arena buffers are given by offset.
struct ProgramBuilder {
  Program p;
  ProgramBuilder() { p.name = "test"; }
  size_t all_reduce(BufferRef from, BufferRef to, const char* reduction = "mean",
                    std::optional<BufferRef> predicate = std::nullopt) {
    Invocation inv;
    inv.kind = Invocation::Kind::library;
    inv.node.op = Op::AllReduce;
    inv.node.attrs["reduction"] = std::string(reduction);
    inv.operands = {from};
    if (predicate) inv.operands.push_back(*predicate);
    inv.results = {to};
    p.code.push_back(inv);
    return p.code.size() - 1;
  }
  size_t concat(std::vector<BufferRef> parts, BufferRef to) {
    Invocation inv;
    inv.kind = Invocation::Kind::library;
    inv.node.op = Op::Concat;
    inv.node.attrs["axis"] = int64_t{0};
    inv.operands = std::move(parts);
    inv.results = {to};
    p.code.push_back(inv);
    return p.code.size() - 1;
  }
  size_t copy(BufferRef from, BufferRef to) {
    Invocation inv;
    inv.kind = Invocation::Kind::copy;
    inv.operands = {from};
    inv.results = {to};
    p.code.push_back(inv);
    return p.code.size() - 1;
  }
};

TEST(BucketPlanTest, OneBucketStartsAfterItsLastMemberAndWaitsBeforeItsFirstReader) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 4), arena(1024, 4));      // 0
  b.copy(arena(0, 4), arena(64, 4));               // 1: reads an operand, not a result
  b.all_reduce(arena(128, 8), arena(2048, 8));    // 2
  b.copy(arena(0, 4), arena(64, 4));               // 3: computes on
  b.copy(arena(2048, 8), arena(256, 8));           // 4: the first reader of a result
  b.p.outputs = {arena(1024, 4), arena(256, 8)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  ASSERT_EQ(plan->buckets.size(), 1u);
  const Bucket& k = plan->buckets[0];
  ASSERT_EQ(k.members.size(), 2u);
  EXPECT_EQ(k.members[0].invocation, 0u);
  EXPECT_EQ(k.members[0].offset, 0);
  EXPECT_EQ(k.members[1].invocation, 2u);
  EXPECT_EQ(k.members[1].offset, 4);
  EXPECT_EQ(k.members[1].operand, arena(128, 8));
  EXPECT_EQ(k.members[1].result, arena(2048, 8));
  EXPECT_EQ(k.count, 12);
  EXPECT_EQ(k.start_after, 2u);
  EXPECT_EQ(k.wait_before, 4u);
  EXPECT_EQ(plan->bucket_of, (std::vector<int>{0, -1, 0, -1, -1}));
  EXPECT_EQ(plan->staging_bytes, 64);
  EXPECT_EQ(describe(*plan), "bucket 0: 2 f32 mean (12 elements) start after 2, wait before 4\n");
}

TEST(BucketPlanTest, TheFirstBucketIsSmallerThanTheRest) {
  // Five gradients of 256 floats (1 KiB each): the first bucket closes at 1 KiB, the
  // others at 2 KiB; nothing reads a result before the end (the updates do).
  ProgramBuilder b;
  for (int i = 0; i < 5; ++i) {
    b.all_reduce(arena(i * 1024, 256), arena(8192 + i * 1024, 256));
    b.p.updates.push_back({i, arena(8192 + i * 1024, 256)});
  }
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {/*first_bucket_bytes=*/1024, /*bucket_bytes=*/2048});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->buckets.size(), 3u);
  EXPECT_EQ(describe(*plan),
            "bucket 0: 1 f32 mean (256 elements) start after 0, wait before 5\n"
            "bucket 1: 2 f32 mean (512 elements) start after 2, wait before 5\n"
            "bucket 2: 2 f32 mean (512 elements) start after 4, wait before 5\n");
  EXPECT_EQ(plan->buckets[1].staging_offset, 1024);
  EXPECT_EQ(plan->buckets[2].staging_offset, 3072);
  EXPECT_EQ(plan->buckets[2].members[1].offset, 256);
  EXPECT_EQ(plan->staging_bytes, 5120);
}

TEST(BucketPlanTest, KindsFillTheirOwnBucketsNumberedInStartOrder) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 2, DType::f64), arena(512, 2, DType::f64), "sum");  // 0
  b.all_reduce(arena(64, 4), arena(576, 4));                                 // 1
  b.all_reduce(arena(128, 2), arena(640, 2), "sum");                         // 2
  b.copy(arena(576, 4), arena(192, 4));                                      // 3: closes the f32 mean
  b.all_reduce(arena(256, 4), arena(704, 4));                                // 4
  b.p.outputs = {arena(512, 2, DType::f64), arena(640, 2), arena(192, 4), arena(704, 4)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(describe(*plan),
            "bucket 0: 1 f64 sum (2 elements) start after 0, wait before 5\n"
            "bucket 1: 1 f32 mean (4 elements) start after 1, wait before 3\n"
            "bucket 2: 1 f32 sum (2 elements) start after 2, wait before 5\n"
            "bucket 3: 1 f32 mean (4 elements) start after 4, wait before 5\n");
  EXPECT_EQ(plan->bucket_of, (std::vector<int>{0, 1, 2, -1, 3}));
}

// Gradient accumulation: members with one predicate share a bucket with unpredicated
// members (the loss's), laid first in the slice, never with another predicate's: one of
// those closes the open bucket.
TEST(BucketPlanTest, PredicatedMembersShareABucketWithUnpredicatedOnesNotAnotherPredicate) {
  ProgramBuilder b;
  const BufferRef apply = arena(960, 1, DType::boolean), other = arena(1000, 1, DType::boolean);
  b.all_reduce(arena(0, 4), arena(512, 4), "mean", apply);   // 0
  b.all_reduce(arena(64, 2), arena(576, 2));                 // 1
  b.all_reduce(arena(128, 4), arena(640, 4), "mean", apply); // 2
  b.all_reduce(arena(192, 4), arena(704, 4), "mean", other); // 3
  b.all_reduce(arena(256, 4), arena(768, 4));                // 4
  b.p.outputs = {arena(512, 4), arena(576, 2), arena(640, 4), arena(704, 4), arena(768, 4)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(describe(*plan),
            "bucket 0: 3 f32 mean (10 elements if arena+960 bool[1], 2 always) start after 2, wait before 5\n"
            "bucket 1: 2 f32 mean (8 elements if arena+1000 bool[1], 4 always) start after 4, wait before 5\n");
  EXPECT_EQ(plan->bucket_of, (std::vector<int>{0, 0, 0, 1, 1}));
  const Bucket& k = plan->buckets[0];
  EXPECT_EQ(k.always_count, 2);
  EXPECT_EQ(k.members[0].offset, 2);  // predicated: after the unpredicated prefix
  EXPECT_TRUE(k.members[0].predicated);
  EXPECT_EQ(k.members[1].offset, 0);
  EXPECT_FALSE(k.members[1].predicated);
  EXPECT_EQ(k.members[2].offset, 6);
  EXPECT_EQ(plan->buckets[1].members[1].offset, 0);
  EXPECT_EQ(plan->buckets[1].members[0].offset, 4);
}

// Without gradient accumulation nothing is predicated: a bucket reduces everything.
TEST(BucketPlanTest, AnUnpredicatedBucketAlwaysReducesItsWholeSlice) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 4), arena(512, 4));
  b.all_reduce(arena(64, 2), arena(576, 2));
  b.p.outputs = {arena(512, 4), arena(576, 2)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->buckets[0].predicate.has_value());
  EXPECT_EQ(plan->buckets[0].always_count, plan->buckets[0].count);
}

TEST(BucketPlanTest, AResultNothingReadsRunsAlone) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 4), arena(64, 4));
  b.all_reduce(arena(0, 4), arena(128, 4));
  b.p.outputs = {arena(128, 4)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bucket_of, (std::vector<int>{-1, 0}));
}

TEST(BucketPlanTest, InputBuffersOverlapThroughTheInputsLayout) {
  // in1 starts 64 bytes into the inputs block, right after in0; a flat range from in0
  // (f32[32], 128 bytes) covers in1 too, so the copy from it reads the result.
  ProgramBuilder b;
  b.p.inputs = {{"a", Type{DType::f32, {16}}, InputKind::param}, {"b", Type{DType::f32, {16}}, InputKind::param}};
  b.p.input_offsets = {0, 64};
  BufferRef in1;
  in1.space = Space::input;
  in1.input = 1;
  in1.type = Type{DType::f32, {16}};
  BufferRef flat = in1;
  flat.input = 0;
  flat.type = Type{DType::f32, {32}};
  b.all_reduce(arena(0, 16), in1);                 // 0
  b.copy(arena(0, 4), arena(64, 4));               // 1
  b.copy(flat, arena(256, 32));                    // 2: reads in1's bytes
  b.p.outputs = {arena(256, 32)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->buckets.size(), 1u);
  EXPECT_EQ(plan->buckets[0].wait_before, 2u);
}

// A gradient split into row blocks (passes/split_gradients.h): the reduced blocks are
// concatenated, and each block closes its bucket, though far below the byte limit, so
// that its reduction starts before the next block is computed. A concat of one reduced
// value and another closes nothing.
TEST(BucketPlanTest, EachRowBlockOfASplitGradientClosesItsBucket) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 4), arena(1024, 4));        // 0: the loss
  b.all_reduce(arena(64, 8), arena(2048, 8));       // 1: block 0
  b.copy(arena(0, 4), arena(256, 4));                // 2: the next block's GEMM
  b.all_reduce(arena(128, 8), arena(2112, 8));      // 3: block 1
  b.all_reduce(arena(192, 4), arena(3072, 4));      // 4: another gradient
  b.concat({arena(2048, 8), arena(2112, 8)}, arena(4096, 16));  // 5
  b.p.updates = {{0, arena(1024, 4)}, {1, arena(3072, 4)}, {2, arena(4096, 16)}};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(describe(*plan),
            "bucket 0: 2 f32 mean (12 elements) start after 1, wait before 5\n"
            "bucket 1: 1 f32 mean (8 elements) start after 3, wait before 5\n"
            "bucket 2: 1 f32 mean (4 elements) start after 4, wait before 6\n");

  ProgramBuilder one;
  one.all_reduce(arena(64, 8), arena(2048, 8));     // 0
  one.copy(arena(0, 8), arena(2112, 8));             // 1: not reduced
  one.all_reduce(arena(192, 4), arena(3072, 4));    // 2
  one.concat({arena(2048, 8), arena(2112, 8)}, arena(4096, 16));
  one.p.updates = {{0, arena(3072, 4)}, {1, arena(4096, 16)}};
  plan = plan_buckets(one.p, {});
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(describe(*plan), "bucket 0: 2 f32 mean (12 elements) start after 2, wait before 3\n");
}

TEST(BucketPlanTest, RefusesAnUnknownReduction) {
  ProgramBuilder b;
  b.all_reduce(arena(0, 4), arena(64, 4), "max");
  b.p.outputs = {arena(64, 4)};
  StatusOr<BucketPlan> plan = plan_buckets(b.p, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "unknown all_reduce reduction \"max\"; expected \"mean\" or \"sum\"");
}

}  // namespace
}  // namespace weft::collective

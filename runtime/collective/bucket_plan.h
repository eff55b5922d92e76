#pragma once
// The bucket plan of a data-parallel step (DESIGN.md, decision 11): which all_reduce
// invocations of a Program share one collective call, where each call can start and
// where the step must wait for it. Backend-neutral: it speaks of invocation indices and
// BufferRefs (arena offsets, inputs), never of addresses, so the CPU executor
// (runtime/cpu/executor.h) and a device executor run the same plan.
//
//   StatusOr<BucketPlan> plan = plan_buckets(program, {});
//   // plan->buckets[k]: members (in program order, their element offsets into the
//   // bucket's slice of the staging block), start_after, wait_before.
//
// The rules, like PyTorch DDP's reducer: all_reduce invocations of one dtype and
// reduction fill a bucket in program order; a bucket closes when it holds at least its
// byte limit (`first_bucket_bytes` for the first bucket of each dtype and reduction,
// `bucket_bytes` after it), before the first invocation that reads or writes one of its
// members' results, after a row block of a split gradient (an all_reduce whose result one
// later concat reads with another all_reduce's: passes/split_gradients.h, so that each
// block's reduction starts while the next block is computed), and at the end of the step. Each member copies its operand into
// the staging block; the bucket's reduction can start right after its last member
// (`start_after`) and must have completed, its results copied back, before invocation
// `wait_before` (the first later invocation touching one of its results; the program's
// length when only the outputs or the updates read them). Between the two, the
// transport owns the staging slice; the members' result bytes are not touched by
// anything in the Program (that is what `wait_before` is), so the memory plan needs no
// extra liveness for them. An all_reduce whose result nothing reads later is left out
// (it runs alone, in place: the memory plan may reuse its bytes right away).
// An all_reduce with a predicate (its second operand, a bool[]: gradient accumulation)
// shares a bucket with those of the same predicate buffer and with unpredicated ones (the
// reported loss's), never with another predicate's (a member of another predicate closes
// the open bucket). The bucket lays its unpredicated members first in its slice
// (`always_count` elements), reads the predicate when it starts and, where false,
// reduces only those (no call when there are none); the predicated members' results are
// then their operands. So under accumulation the loss rides in the gradients' call on
// the window's last micro-batch, and goes alone only on the others.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/status.h"
#include "runtime/collective/communicator.h"
#include "runtime/program.h"

namespace weft::collective {

struct BucketPlanOptions {
  /// The first bucket of each dtype and reduction closes at this many bytes (PyTorch
  /// DDP's 1 MiB), or at bucket_bytes when that is smaller: the first reduction starts
  /// early in the backward pass.
  int64_t first_bucket_bytes = int64_t{1} << 20;
  /// Every later bucket closes at this many bytes (PyTorch DDP's 25 MiB).
  int64_t bucket_bytes = int64_t{25} << 20;
};

struct BucketMember {
  size_t invocation = 0;  ///< Index into Program::code of the all_reduce.
  BufferRef operand;      ///< Copied into the staging slice when the invocation runs.
  BufferRef result;       ///< Written from the staging slice at the bucket's wait.
  int64_t offset = 0;     ///< Elements into the bucket's staging slice.
  int64_t count = 0;      ///< Elements.
  bool predicated = false;  ///< Reduced only where the bucket's predicate is true.
};

struct Bucket {
  DType dtype = DType::f32;
  Reduction reduction = Reduction::mean;
  /// The predicated members' predicate (a bool[]); none: the bucket always reduces.
  std::optional<BufferRef> predicate;
  std::vector<BucketMember> members;  ///< In program order.
  int64_t count = 0;                  ///< Elements, all members.
  /// Elements of the unpredicated members, first in the slice: what the bucket reduces
  /// where its predicate is false (count where it has none).
  int64_t always_count = 0;
  int64_t staging_offset = 0;         ///< Bytes into the staging block (a multiple of 64).
  size_t start_after = 0;             ///< The last member's invocation.
  /// The first invocation after start_after that reads or writes a member's result;
  /// Program::code.size() when none does (the outputs or the updates read them).
  size_t wait_before = 0;

  int64_t bytes() const { return count * static_cast<int64_t>(dtype_size(dtype)); }
};

struct BucketPlan {
  std::vector<Bucket> buckets;  ///< In the order they start (every rank's call order).
  /// Per invocation of the Program: the bucket of the all_reduce there, or -1.
  std::vector<int> bucket_of;
  int64_t staging_bytes = 0;  ///< Bytes of the staging block (every bucket's slice).
};

/// The buckets of `program`'s all_reduce invocations (the rules at the top of this
/// file). Errors: an all_reduce whose `reduction` attribute is not sum or mean.
StatusOr<BucketPlan> plan_buckets(const Program& program, const BucketPlanOptions& options);

/// One line per bucket: "bucket 0: 7 f32 mean (1733 elements) start after 12, wait before 20",
/// with " if arena+64 bool[]" after the elements for a predicated bucket, and then, where
/// it also has unpredicated members, ", 1 always": "(1733 elements if arena+64 bool[1], 1 always)".
std::string describe(const BucketPlan& plan);

}  // namespace weft::collective

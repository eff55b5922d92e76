#pragma once
// The order in which the CUDA executor enqueues a data-parallel step on its two streams
// (host-only: computed before any CUDA call, so CI checks it without a GPU). The plan of
// buckets is runtime/collective/bucket_plan.h's, the one the CPU executor runs:
//
//   compute stream:  ... grad a, stage a | grad b, stage b, [record ready0] | ... [wait done0] update
//   comm stream:                           [wait ready0] ncclAllReduce(bucket 0), unstage, [record done0]
//
// Each all_reduce member is bound as a copy of its operand into its bucket's slice of the
// staging block (on the compute stream, where its gradient was produced). Right after a
// bucket's last member the executor *starts* it: an event recorded on the compute
// stream, the communication stream waiting on it, ncclAllReduce in place on the slice,
// the slice copied into each member's result, an event recorded there. Right before the
// first invocation touching a member's result (the plan's wait_before; at the end of
// the step, before the updates, when only they or the outputs read them) it *waits*:
// the compute stream waits on that event. Every fork is joined before the step ends, so
// the whole step — both streams — is captured as one CUDA graph. The buckets start in
// the plan's order, the same on every rank, on one communication stream: NCCL sees
// every rank's calls in one order.
//
// Gradient accumulation (OptimizerSpec::accumulate_steps = K): the accumulated gradients'
// all_reduce ops carry the window's predicate (bucket_plan.h: predicated members), true
// on the window's last micro-batch only. A device value cannot skip a call captured in a
// CUDA graph, so the host chooses instead: two schedules of the same bound invocations,
// captured as two graphs over one arena —
//
//   StepVariant::reduce      every bucket reduces all its members (the window's last
//                            micro-batch, and every step without accumulation);
//   StepVariant::accumulate  a predicated bucket reduces only its unpredicated prefix
//                            (the loss; no NCCL call when it has none) and copies the
//                            rest of its slice back unreduced, so each predicated
//                            member's result is its operand — what the CPU executor
//                            does where the predicate is false —
//
// and variant_of_step picks one per micro-batch from the step number the host feeds.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/collective/bucket_plan.h"
#include "runtime/program.h"

namespace weft::cuda {

struct StepAction {
  enum class Kind {
    invoke,        ///< Program::code[index] on the compute stream (a member: its staging copy).
    start_bucket,  ///< Bucket `index` reduced on the communication stream (above).
    wait_bucket,   ///< The compute stream waits for bucket `index`'s reduction.
    /// StepVariant::accumulate's start of a predicated bucket `index`: only its
    /// unpredicated prefix (Bucket::always_count elements) reduced, the slice copied back.
    start_bucket_unpredicated,
  };
  Kind kind = Kind::invoke;
  size_t index = 0;
  bool operator==(const StepAction&) const = default;
};

/// Which captured step a micro-batch runs (above).
enum class StepVariant { reduce, accumulate };

/// The variant of the step numbered `step` (1-based, the weft.step input) when gradients
/// are accumulated over `accumulate_steps` micro-batches: reduce on a window's last
/// micro-batch (`step` a multiple of accumulate_steps: autodiff/optimizer.h's apply
/// predicate, computed on the host), accumulate on the others; reduce for every step
/// when accumulate_steps <= 1.
StepVariant variant_of_step(int64_t step, int64_t accumulate_steps);

/// True when `plan` has a predicated bucket: only then do the two variants differ.
bool has_predicated_bucket(const collective::BucketPlan& plan);

/// The step's actions in enqueue order (the updates follow the last): every invocation
/// once, each bucket's start right after its start_after invocation and its wait right
/// before its wait_before one (or at the end). In the accumulate variant a predicated
/// bucket's start is start_bucket_unpredicated.
std::vector<StepAction> schedule_step(const Program& program, const collective::BucketPlan& plan,
                                      StepVariant variant = StepVariant::reduce);

/// One line per action: "#3 library all_reduce (stage into bucket 0)", "start bucket 0 (2 f32
/// mean, 12 elements) on the communication stream", "start bucket 0 (2 f32 mean, 1 of 12
/// elements: accumulating) on the communication stream", "wait for bucket 0", "#4 copy".
std::string describe(const std::vector<StepAction>& actions, const Program& program,
                     const collective::BucketPlan& plan);

}  // namespace weft::cuda

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

#include <cstddef>
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
  };
  Kind kind = Kind::invoke;
  size_t index = 0;
  bool operator==(const StepAction&) const = default;
};

/// The step's actions in enqueue order (the updates follow the last): every invocation
/// once, each bucket's start right after its start_after invocation and its wait right
/// before its wait_before one (or at the end).
std::vector<StepAction> schedule_step(const Program& program, const collective::BucketPlan& plan);

/// One line per action: "#3 all_reduce (stage into bucket 0)", "start bucket 0 (2 f32
/// mean, 12 elements) on the communication stream", "wait for bucket 0", "#4 copy".
std::string describe(const std::vector<StepAction>& actions, const Program& program,
                     const collective::BucketPlan& plan);

}  // namespace weft::cuda

// The enqueue order of a data-parallel step on the compute and communication streams
// (step_schedule.h).
#include "runtime/cuda/step_schedule.h"

#include "ir/text_util.h"

namespace weft::cuda {
namespace {

// The buckets whose waits come before invocation `i` (i == code.size(): the end).
void add_waits(std::vector<StepAction>& actions, const collective::BucketPlan& plan, size_t i) {
  for (size_t k = 0; k < plan.buckets.size(); ++k) {
    if (plan.buckets[k].wait_before == i) actions.push_back({StepAction::Kind::wait_bucket, k});
  }
}

// The bucket that starts after invocation `i`, if any.
void add_start(std::vector<StepAction>& actions, const collective::BucketPlan& plan, size_t i, StepVariant variant) {
  const int k = plan.bucket_of.empty() ? -1 : plan.bucket_of[i];
  if (k < 0) return;
  const collective::Bucket& b = plan.buckets[static_cast<size_t>(k)];
  if (b.start_after != i) return;
  const bool unpredicated_only = variant == StepVariant::accumulate && b.predicate.has_value();
  actions.push_back({unpredicated_only ? StepAction::Kind::start_bucket_unpredicated : StepAction::Kind::start_bucket,
                     static_cast<size_t>(k)});
}

}  // namespace

StepVariant variant_of_step(int64_t step, int64_t accumulate_steps) {
  if (accumulate_steps <= 1 || step % accumulate_steps == 0) return StepVariant::reduce;
  return StepVariant::accumulate;
}

bool has_predicated_bucket(const collective::BucketPlan& plan) {
  for (const collective::Bucket& b : plan.buckets) {
    if (b.predicate) return true;
  }
  return false;
}

std::vector<StepAction> schedule_step(const Program& program, const collective::BucketPlan& plan,
                                      StepVariant variant) {
  std::vector<StepAction> actions;
  for (size_t i = 0; i < program.code.size(); ++i) {
    add_waits(actions, plan, i);
    actions.push_back({StepAction::Kind::invoke, i});
    add_start(actions, plan, i, variant);
  }
  add_waits(actions, plan, program.code.size());
  return actions;
}

std::string describe(const std::vector<StepAction>& actions, const Program& program,
                     const collective::BucketPlan& plan) {
  std::string out;
  for (const StepAction& a : actions) {
    if (a.kind == StepAction::Kind::invoke) {
      out += "#" + std::to_string(a.index) + " " + invocation_kind(program.code[a.index]);
      const int k = plan.bucket_of.empty() ? -1 : plan.bucket_of[a.index];
      if (k >= 0) out += " (stage into bucket " + std::to_string(k) + ")";
    } else if (a.kind == StepAction::Kind::start_bucket || a.kind == StepAction::Kind::start_bucket_unpredicated) {
      const collective::Bucket& b = plan.buckets[a.index];
      const std::string elements = a.kind == StepAction::Kind::start_bucket
                                       ? counted(b.count, "element")
                                       : std::to_string(b.always_count) + " of " + counted(b.count, "element") +
                                             ": accumulating";
      out += "start bucket " + std::to_string(a.index) + " (" + std::to_string(b.members.size()) + " " +
             std::string(dtype_name(b.dtype)) + " " + collective::reduction_name(b.reduction) + ", " + elements +
             ") on the communication stream";
    } else {
      out += "wait for bucket " + std::to_string(a.index);
    }
    out += "\n";
  }
  return out;
}

}  // namespace weft::cuda

#pragma once
// Internal to runtime/cpu's executor: what a bound invocation is (executor.cc binds one per
// invocation), the loop invocation's (loop_bound.cc), and the collectives'
// (executor_collective.cc).

#include <memory>
#include <string>
#include <vector>

#include "runtime/cpu/executor.h"
#include "runtime/cpu/kernel.h"

namespace weft::cpu {

struct Executor::Bound {
  virtual ~Bound() = default;
  virtual Status run(ThreadPool& pool) = 0;
  virtual std::string describe() const = 0;
  /// The library kernel it runs, if any (for the shared scratch).
  virtual BoundKernel* kernel() { return nullptr; }
  /// Executor::set_check_numerics reaching a loop's body.
  virtual void set_check_numerics(bool) {}
};

/// A loop invocation: `body` bound for it as `plan` says (runtime/loop_slots.h), run `length`
/// times on the caller's pool; `in` and `results` are the loop's buffers in the parent.
std::unique_ptr<Executor::Bound> make_loop_bound(std::unique_ptr<Executor> body, const Invocation& inv,
                                                 std::vector<const void*> in, std::vector<void*> results,
                                                 LoopSlots plan);

/// An all_reduce run alone, in place on `to` (the operand copied there first); with a
/// predicate (null: none) that is false, the copy and no call.
std::unique_ptr<Executor::Bound> make_all_reduce_bound(std::shared_ptr<collective::Communicator> comm,
                                                       collective::Reduction reduction, const void* from,
                                                       const bool* predicate, void* to, const Type& type,
                                                       Location loc);

/// A bucket of the plan bound to its staging slice and its members' results
/// (executor_collective.cc says how it starts, is polled and waited for). `in_flight`
/// (bucket_in_flight) ends its last member's line in describe().
class BoundBucket;
using BoundBuckets = std::vector<std::shared_ptr<BoundBucket>>;
std::shared_ptr<BoundBucket> make_bound_bucket(const collective::Bucket& plan,
                                               std::shared_ptr<collective::Communicator> comm,
                                               std::byte* staging, const bool* predicate,
                                               std::vector<void*> results, bool overlap,
                                               Executor::AllReduceTally* tally, std::string in_flight);

/// What runs while `bucket`'s reduction is in flight, for describe(): " (36.4 of the
/// step's 103.2 MFLOP in between)", the flops (cost.h) of the invocations after its
/// start and before its wait against all of the Program's.
std::string bucket_in_flight(const Program& program, const collective::Bucket& bucket);

/// Member `member` of `bucket`: stages its operand; the last member starts the bucket.
std::unique_ptr<Executor::Bound> make_bucket_member_bound(std::shared_ptr<BoundBucket> bucket, size_t member,
                                                          const void* from, Location loc);

/// `bound` (invocation `index` of a Program of `length`) wrapped with the waits and polls
/// the buckets' plan puts around it, or as it is where there are none.
std::unique_ptr<Executor::Bound> with_bucket_sync(std::unique_ptr<Executor::Bound> bound, size_t index,
                                                  size_t length, const BoundBuckets& buckets);

}  // namespace weft::cpu

// The executor's collectives (executor_bound.h): an all_reduce invocation bound alone,
// and the buckets of the plan (runtime/collective/bucket_plan.h) bound to one set of
// buffers — the members that stage their operands, the waits and polls around the
// invocations, and the time and calls they spend in the communicator.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "ir/text_util.h"
#include "runtime/cpu/cost.h"
#include "runtime/cpu/executor_bound.h"

namespace weft::cpu {

// A bucket of the plan (runtime/collective/bucket_plan.h) bound to one set of buffers:
// its staging slice and its members' results. start() begins the one reduction of the
// slice (after the last member has copied its operand in); wait() completes it and
// copies every member's slice to its result. Blocking mode waits inside start(). A
// predicated bucket whose predicate (null: none) is false when it starts reduces only
// its unpredicated members, the slice's first always_count elements (the predicated
// ones' results are their operands, copied out unreduced); with none it makes no call
// and copies the slice out at once. `tally` adds up the time spent inside the
// communicator's calls (start, test, wait): the communication the step did not hide; and
// counts the reductions started and their elements.
class BoundBucket {
 public:
  BoundBucket(const collective::Bucket& plan, std::shared_ptr<collective::Communicator> comm,
              std::byte* staging, const bool* predicate, std::vector<void*> results, bool overlap,
              Executor::AllReduceTally* tally, std::string in_flight)
      : plan_(plan), comm_(std::move(comm)), staging_(staging), predicate_(predicate),
        results_(std::move(results)), overlap_(overlap), tally_(tally), in_flight_(std::move(in_flight)) {}

  /// Copies member `member`'s operand into the staging slice.
  void stage(size_t member, const void* from) {
    const collective::BucketMember& m = plan_.members[member];
    std::memcpy(staging_ + m.offset * element(), from, static_cast<size_t>(m.count) * element());
  }
  Status start() {
    const Timer timer(&tally_->ns);
    // A step that stopped at an error left its reduction in flight: complete it before
    // the staging slice is reused.
    if (pending_) WEFT_RETURN_IF_ERROR(finish());
    const int64_t count = predicate_ != nullptr && !*predicate_ ? plan_.always_count : plan_.count;
    if (count == 0) {
      copy_out();
      return Status::ok_status();
    }
    ++tally_->calls;
    tally_->elements += count;
    StatusOr<std::unique_ptr<collective::PendingReduction>> pending =
        comm_->start_all_reduce(staging_, count, plan_.dtype, plan_.reduction);
    if (!pending.ok()) return pending.error();
    pending_ = std::move(*pending);
    return overlap_ ? Status::ok_status() : finish();
  }
  /// Lets the transport advance a reduction in flight.
  void poll() {
    if (!pending_) return;
    const Timer timer(&tally_->ns);
    pending_->test();
  }
  Status wait() {
    if (!pending_) return Status::ok_status();
    const Timer timer(&tally_->ns);
    return finish();
  }
  const collective::Bucket& plan() const { return plan_; }
  const collective::Communicator& comm() const { return *comm_; }
  const std::string& in_flight() const { return in_flight_; }

 private:
  struct Timer {
    explicit Timer(double* total) : total_(total), start_(std::chrono::steady_clock::now()) {}
    ~Timer() { *total_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start_).count(); }
    double* total_;
    std::chrono::steady_clock::time_point start_;
  };
  size_t element() const { return dtype_size(plan_.dtype); }
  Status finish() {
    Status s = pending_->wait();
    pending_.reset();
    if (!s.ok()) return Error{s.error().message};
    copy_out();
    return Status::ok_status();
  }
  void copy_out() {
    for (size_t i = 0; i < results_.size(); ++i) {
      const collective::BucketMember& m = plan_.members[i];
      std::memcpy(results_[i], staging_ + m.offset * element(), static_cast<size_t>(m.count) * element());
    }
  }

  const collective::Bucket& plan_;
  std::shared_ptr<collective::Communicator> comm_;
  std::byte* staging_;
  const bool* predicate_;
  std::vector<void*> results_;
  bool overlap_;
  Executor::AllReduceTally* tally_;
  std::string in_flight_;  ///< bucket_in_flight's words, for describe().
  std::unique_ptr<collective::PendingReduction> pending_;
};

namespace {

// all_reduce: in place on the result's buffer through the communicator; with a predicate
// (null: none) that is false, the operand copied and no call.
class AllReduceBound : public Executor::Bound {
 public:
  AllReduceBound(std::shared_ptr<collective::Communicator> comm, collective::Reduction reduction,
                 const void* from, const bool* predicate, void* to, const Type& type, Location loc)
      : comm_(std::move(comm)), reduction_(reduction), from_(from), predicate_(predicate), to_(to), type_(type),
        loc_(std::move(loc)) {}
  Status run(ThreadPool&) override {
    if (from_ != to_) std::memcpy(to_, from_, type_.bytes());
    if (predicate_ != nullptr && !*predicate_) return Status::ok_status();
    Status s = comm_->all_reduce(to_, type_.shape.numel(), type_.dtype, reduction_);
    if (!s.ok()) return Error{s.error().message, loc_};
    return s;
  }
  std::string describe() const override {
    return std::string("all_reduce ") + collective::reduction_name(reduction_) + " " +
           type_.to_string() + " (" + comm_->describe() + ")";
  }

 private:
  std::shared_ptr<collective::Communicator> comm_;
  collective::Reduction reduction_;
  const void* from_;
  const bool* predicate_;
  void* to_;
  Type type_;
  Location loc_;
};

// An all_reduce invocation that is a member of a bucket: copies its operand into the
// staging slice; the last member starts the bucket's reduction.
class BucketMemberBound : public Executor::Bound {
 public:
  BucketMemberBound(std::shared_ptr<BoundBucket> bucket, size_t member, const void* from, Location loc)
      : bucket_(std::move(bucket)), member_(member), from_(from), loc_(std::move(loc)) {}
  Status run(ThreadPool&) override {
    bucket_->stage(member_, from_);
    if (!last()) return Status::ok_status();
    Status s = bucket_->start();
    if (!s.ok()) return Error{s.error().message, loc_};
    return s;
  }
  std::string describe() const override {
    const collective::Bucket& b = bucket_->plan();
    std::string out = std::string("all_reduce ") + collective::reduction_name(b.reduction) + " " +
                      std::string(dtype_name(b.dtype)) + "[" + std::to_string(b.members[member_].count) +
                      "] into bucket of " + std::to_string(b.members.size());
    if (last()) {
      out += ": one call on " + counted(b.count, "element") + " (" + bucket_->comm().describe() +
             "), waited before invocation " + std::to_string(b.wait_before) + bucket_->in_flight();
    }
    return out;
  }

 private:
  bool last() const { return member_ + 1 == bucket_->plan().members.size(); }
  std::shared_ptr<BoundBucket> bucket_;
  size_t member_;
  const void* from_;
  Location loc_;
};

// An invocation with the buckets to wait for before it runs, to progress after it (those
// in flight past it) and to wait for after it (the last invocation: the buckets whose
// results only the outputs or the updates read).
class BucketSyncBound : public Executor::Bound {
 public:
  using Buckets = std::vector<std::shared_ptr<BoundBucket>>;
  BucketSyncBound(std::unique_ptr<Executor::Bound> inner, Buckets wait_before, Buckets poll_after,
                  Buckets wait_after)
      : inner_(std::move(inner)), wait_before_(std::move(wait_before)), poll_after_(std::move(poll_after)),
        wait_after_(std::move(wait_after)) {}
  Status run(ThreadPool& pool) override {
    for (auto& b : wait_before_) WEFT_RETURN_IF_ERROR(b->wait());
    WEFT_RETURN_IF_ERROR(inner_->run(pool));
    for (auto& b : poll_after_) b->poll();
    for (auto& b : wait_after_) WEFT_RETURN_IF_ERROR(b->wait());
    return Status::ok_status();
  }
  std::string describe() const override {
    std::string out = inner_->describe();
    if (!wait_before_.empty()) out += " | first waits for " + std::to_string(wait_before_.size()) + " bucket(s)";
    if (!wait_after_.empty()) out += " | then waits for " + std::to_string(wait_after_.size()) + " bucket(s)";
    return out;
  }
  BoundKernel* kernel() override { return inner_->kernel(); }
  void set_check_numerics(bool on) override { inner_->set_check_numerics(on); }

 private:
  std::unique_ptr<Executor::Bound> inner_;
  Buckets wait_before_, poll_after_, wait_after_;
};

}  // namespace

std::unique_ptr<Executor::Bound> make_all_reduce_bound(std::shared_ptr<collective::Communicator> comm,
                                                       collective::Reduction reduction, const void* from,
                                                       const bool* predicate, void* to, const Type& type,
                                                       Location loc) {
  return std::make_unique<AllReduceBound>(std::move(comm), reduction, from, predicate, to, type, std::move(loc));
}

std::shared_ptr<BoundBucket> make_bound_bucket(const collective::Bucket& plan,
                                               std::shared_ptr<collective::Communicator> comm,
                                               std::byte* staging, const bool* predicate,
                                               std::vector<void*> results, bool overlap,
                                               Executor::AllReduceTally* tally, std::string in_flight) {
  return std::make_shared<BoundBucket>(plan, std::move(comm), staging, predicate, std::move(results), overlap,
                                       tally, std::move(in_flight));
}

std::string bucket_in_flight(const Program& program, const collective::Bucket& bucket) {
  const auto mflop = [](double flops) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", flops / 1e6);
    return std::string(text);
  };
  return " (" + mflop(flops_between(program, bucket.start_after + 1, bucket.wait_before)) + " of the step's " +
         mflop(flops_between(program, 0, program.code.size())) + " MFLOP in between)";
}

std::unique_ptr<Executor::Bound> make_bucket_member_bound(std::shared_ptr<BoundBucket> bucket, size_t member,
                                                          const void* from, Location loc) {
  return std::make_unique<BucketMemberBound>(std::move(bucket), member, from, std::move(loc));
}

// `bound` (invocation `index` of a Program of `length`) wrapped with the waits and polls
// the plan puts around it, or as it is where there are none.
std::unique_ptr<Executor::Bound> with_bucket_sync(std::unique_ptr<Executor::Bound> bound, size_t index, size_t length, const BoundBuckets& buckets) {
  BoundBuckets wait_before, poll_after, wait_after;
  for (const auto& b : buckets) {
    const collective::Bucket& k = b->plan();
    if (k.wait_before == index) wait_before.push_back(b);
    if (k.start_after <= index && index + 1 < k.wait_before) poll_after.push_back(b);
    if (k.wait_before == length && index + 1 == length) wait_after.push_back(b);
  }
  if (wait_before.empty() && poll_after.empty() && wait_after.empty()) return bound;
  return std::make_unique<BucketSyncBound>(std::move(bound), std::move(wait_before), std::move(poll_after),
                                           std::move(wait_after));
}

}  // namespace weft::cpu

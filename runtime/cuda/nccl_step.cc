// The data-parallel step on the GPU (step_schedule.h): the buckets' staging block and
// events, the all_reduce invocations bound as staging copies (or reduced alone), and a
// bucket's start on the communication stream and its wait on the compute stream. An
// all_reduce's predicate (its optional second operand, gradient accumulation's window)
// is never read on the device: a device value cannot skip a call captured in a CUDA
// graph. The host picks the step's variant instead (step_schedule.h, StepVariant): a
// predicated bucket started unpredicated_only reduces its unpredicated prefix alone and
// copies the whole slice back, so its predicated members' results are their operands.
#include <cstddef>
#include <string>
#include <utility>

#include "runtime/cuda/device.h"
#include "runtime/cuda/nccl_communicator.h"

namespace weft::cuda {
namespace {

using Device = Executor::Device;

Status create_event(cudaEvent_t& e) {
  return cuda_status(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags (bucket)");
}

// `data`'s reduction in place on the communication stream (none when `count` is 0),
// after everything enqueued so far on the compute stream (`ready` recorded there);
// `done` recorded once it and `after` (the unstaging copies) have run.
template <typename After>
Status reduce_on_comm_stream(Device& d, cudaEvent_t ready, cudaEvent_t done, void* data, int64_t count, DType dtype,
                             collective::Reduction reduction, After after) {
  cudaStream_t comm = d.nccl->stream();
  WEFT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(ready, d.stream), "cudaEventRecord (gradients ready)"));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamWaitEvent(comm, ready, 0), "cudaStreamWaitEvent (communication stream)"));
  if (count > 0) WEFT_RETURN_IF_ERROR(d.nccl->device_all_reduce(data, count, dtype, reduction, comm));
  WEFT_RETURN_IF_ERROR(after(comm));
  return cuda_status(cudaEventRecord(done, comm), "cudaEventRecord (reduction done)");
}

Status wait_for(Device& d, cudaEvent_t done) {
  return cuda_status(cudaStreamWaitEvent(d.stream, done, 0), "cudaStreamWaitEvent (compute stream)");
}

// An all_reduce outside every bucket (nothing reads its result later): reduced alone,
// in place on its result, joined back at once.
class AloneBound : public Executor::Bound {
 public:
  AloneBound(const void* from, void* to, Type type, collective::Reduction reduction)
      : from_(from), to_(to), type_(std::move(type)), reduction_(reduction) {}
  ~AloneBound() override {
    for (cudaEvent_t e : {ready_, done_}) {
      if (e) cudaEventDestroy(e);
    }
  }
  Status create() {
    WEFT_RETURN_IF_ERROR(create_event(ready_));
    return create_event(done_);
  }
  Status run(Device& d, int) override {
    if (from_ != to_) {
      WEFT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(to_, from_, type_.bytes(), cudaMemcpyDeviceToDevice, d.stream),
                                       "cudaMemcpyAsync (all_reduce operand)"));
    }
    WEFT_RETURN_IF_ERROR(reduce_on_comm_stream(d, ready_, done_, to_, type_.numel(), type_.dtype, reduction_,
                                               [](cudaStream_t) { return Status::ok_status(); }));
    return wait_for(d, done_);
  }
  std::string describe() const override {
    return std::string("all_reduce ") + collective::reduction_name(reduction_) + " " + type_.to_string() +
           ": ncclAllReduce alone";
  }

 private:
  const void* from_;
  void* to_;
  Type type_;
  collective::Reduction reduction_;
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

std::byte* staging_slice(Device& d, const collective::Bucket& b, int64_t element) {
  return static_cast<std::byte*>(d.staging) + b.staging_offset + element * static_cast<int64_t>(dtype_size(b.dtype));
}

// Bucket `k`'s reduced slice copied into each member's result, on the communication
// stream `comm`.
Status unstage(Device& d, size_t k, cudaStream_t comm) {
  const collective::Bucket& b = d.buckets.buckets[k];
  for (size_t i = 0; i < b.members.size(); ++i) {
    const collective::BucketMember& m = b.members[i];
    WEFT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(d.bucket_results[k][i], staging_slice(d, b, m.offset),
                                                     m.result.type.bytes(), cudaMemcpyDeviceToDevice, comm),
                                     "cudaMemcpyAsync (bucket " + std::to_string(k) + " into its results)"));
  }
  return Status::ok_status();
}

}  // namespace

Status plan_collectives(Device& d, const Program& program, const collective::BucketPlanOptions& options) {
  WEFT_ASSIGN_OR_RETURN(d.buckets, collective::plan_buckets(program, options));
  if (d.buckets.buckets.empty()) return Status::ok_status();
  WEFT_RETURN_IF_ERROR(device_allocate(d.staging, d.buckets.staging_bytes, "all_reduce staging"));
  d.bucket_results.resize(d.buckets.buckets.size());
  for (size_t k = 0; k < d.buckets.buckets.size(); ++k) {
    d.bucket_results[k].assign(d.buckets.buckets[k].members.size(), nullptr);
  }
  d.staged.assign(d.buckets.buckets.size(), nullptr);
  d.reduced.assign(d.buckets.buckets.size(), nullptr);
  for (size_t k = 0; k < d.buckets.buckets.size(); ++k) {
    WEFT_RETURN_IF_ERROR(create_event(d.staged[k]));
    WEFT_RETURN_IF_ERROR(create_event(d.reduced[k]));
  }
  return Status::ok_status();
}

StatusOr<BoundPtr> all_reduce_bound(Device& d, int index, const Invocation& inv, const void* in, void* out) {
  const Type& type = inv.results[0].type;
  if (!d.nccl) return copy_bound(in, out, type.bytes(), "all_reduce (one process): copy");
  if (index < 0) {
    return Error{"all_reduce inside a loop body: with NCCL the cuda backend reduces the step's own all_reduce ops only",
                 inv.node.loc};
  }
  WEFT_ASSIGN_OR_RETURN(collective::Reduction reduction, collective::parse_reduction(inv.node.str_attr("reduction")));
  const int k = d.buckets.bucket_of.empty() ? -1 : d.buckets.bucket_of[static_cast<size_t>(index)];
  if (k < 0) {
    auto alone = std::make_unique<AloneBound>(in, out, type, reduction);
    WEFT_RETURN_IF_ERROR(alone->create());
    return BoundPtr(std::move(alone));
  }
  const collective::Bucket& b = d.buckets.buckets[static_cast<size_t>(k)];
  for (size_t i = 0; i < b.members.size(); ++i) {
    const collective::BucketMember& m = b.members[i];
    if (m.invocation != static_cast<size_t>(index)) continue;
    d.bucket_results[static_cast<size_t>(k)][i] = out;
    return copy_bound(in, staging_slice(d, b, m.offset), type.bytes(),
                      "all_reduce " + std::string(collective::reduction_name(reduction)) + ": stage into bucket " +
                          std::to_string(k) + ",");
  }
  WEFT_CHECK(false, "cuda::Executor: an all_reduce the bucket plan names is not among its bucket's members");
  return Error{"unreachable"};
}

Status start_bucket(Device& d, size_t k, bool unpredicated_only) {
  const collective::Bucket& b = d.buckets.buckets[k];
  const int64_t count = unpredicated_only ? b.always_count : b.count;
  return reduce_on_comm_stream(d, d.staged[k], d.reduced[k], staging_slice(d, b, 0), count, b.dtype, b.reduction,
                               [&](cudaStream_t comm) { return unstage(d, k, comm); });
}

Status wait_bucket(Device& d, size_t k) { return wait_for(d, d.reduced[k]); }

}  // namespace weft::cuda

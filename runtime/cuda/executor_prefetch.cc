// #31's input overlap (ExecutorOptions::input_prefetch): the next batch's host-to-device
// copy on the copy stream while the current step runs, and set_input's taking of it.
//
// Per input, two device slots alternate: prefetch n+1 writes the slot step n-1 read, so
// it never overwrites the slot step n is about to read. Events order the two streams:
//
//   copy stream:  wait read[s] -> copy host n+1 -> slot s -> record copied[s]
//   step stream:  [step n ...]   wait copied[s] -> copy slot s -> input -> record read[s]
//                                -> step n+1 (the captured graph reads the input's buffer)
//
// The graph is captured once over the inputs' fixed buffers: the slot's copy into the
// input is enqueued by set_input outside it, ahead of run()'s launch.
#include <cuda_runtime_api.h>

#include <optional>

#include "runtime/cuda/device.h"
#include "runtime/cuda/executor.h"

namespace weft::cuda {
namespace {

// Input `what`'s two slots of `bytes` and their events, allocated on its first prefetch.
// What an earlier, failed call allocated is kept and the rest allocated: the input is
// ready only once the last of them (slot 1's `read` event) exists.
Status allocate_slots(Executor::Device& d, PrefetchSlots& in, size_t bytes, const std::string& what) {
  for (int s = 0; s < 2; ++s) {
    if (in.slot[s] == nullptr) {
      WEFT_RETURN_IF_ERROR(device_allocate(in.slot[s], static_cast<int64_t>(bytes),
                                           "prefetch slot " + std::to_string(s) + " of " + what));
      d.prefetch_bytes += bytes;
    }
    for (cudaEvent_t* e : {&in.copied[s], &in.read[s]}) {
      if (*e != nullptr) continue;
      WEFT_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(e, cudaEventDisableTiming),
                                       "cudaEventCreateWithFlags (prefetch of " + what + ")"));
    }
  }
  return Status::ok_status();
}

bool slots_ready(const PrefetchSlots& in) { return in.read[1] != nullptr; }

// The copy of `value` into `claim`'s slot on the copy stream, ordered after the slot's
// last reader.
Status enqueue_prefetch(Executor::Device& d, PrefetchSlots& in, PrefetchRing::Claim claim,
                        const Tensor& value, const std::string& what) {
  const int s = claim.slot;
  if (claim.replaces_untaken) {
    // A prefetch no set_input took: its host bytes are the caller's again once read.
    WEFT_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(in.copied[s]), "cudaEventSynchronize (" + what + ")"));
  }
  // The slot's last reader is a set_input's copy on the step's stream (a no-op wait when
  // none has read it yet).
  WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamWaitEvent(d.copy_stream, in.read[s], 0),
                                   "cudaStreamWaitEvent (prefetch of " + what + ")"));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(in.slot[s], value.raw_data(), value.bytes(),
                                                   cudaMemcpyHostToDevice, d.copy_stream),
                                   "cudaMemcpyAsync (prefetch of " + what + ")"));
  return cuda_status(cudaEventRecord(in.copied[s], d.copy_stream), "cudaEventRecord (prefetch of " + what + ")");
}

}  // namespace

Status Executor::prefetch_input(int index, const Tensor& value) {
  WEFT_RETURN_IF_ERROR(check_input(index, value));
  Device& d = *device_;
  if (d.copy_stream == nullptr || value.bytes() == 0) return Status::ok_status();
  const std::string what = "input %" + program_.inputs[index].name;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(d.ordinal), "cudaSetDevice"));
  PrefetchSlots& in = d.prefetched[static_cast<size_t>(index)];
  if (!slots_ready(in)) WEFT_RETURN_IF_ERROR(allocate_slots(d, in, value.bytes(), what));
  const PrefetchRing::Claim claim = in.ring.claim(value.raw_data());
  Status queued = enqueue_prefetch(d, in, claim, value, what);
  if (!queued.ok()) in.ring.forget(claim.slot);  // set_input copies these bytes from the host
  return queued;
}

StatusOr<bool> take_prefetched(Executor::Device& d, int index, const Tensor& value, void* to,
                               const std::string& what) {
  if (d.prefetched.empty() || value.bytes() == 0) return false;
  PrefetchSlots& in = d.prefetched[static_cast<size_t>(index)];
  const std::optional<int> taken = in.ring.take(value.raw_data());
  if (!taken) return false;
  const int s = *taken;
  WEFT_RETURN_IF_ERROR(cuda_status(cudaStreamWaitEvent(d.stream, in.copied[s], 0),
                                   "cudaStreamWaitEvent (prefetched " + what + ")"));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(to, in.slot[s], value.bytes(), cudaMemcpyDeviceToDevice, d.stream),
                                   "cudaMemcpyAsync (prefetched " + what + ")"));
  WEFT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(in.read[s], d.stream), "cudaEventRecord (prefetched " + what + ")"));
  return true;
}

}  // namespace weft::cuda

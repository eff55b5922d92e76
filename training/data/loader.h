#pragma once
// A loader that prepares batch n+1 on a background thread while step n runs, so that
// gathering and converting rows never shows in the step time.
//
//   Loader loader(/*first=*/0, /*end=*/steps, types,
//                 [&](int64_t n, std::vector<Tensor>& into) -> Status {
//                   ...fill `into` (tensors of `types`) with batch n...
//                 });
//   for (int64_t n = 0; n < steps; ++n) {
//     WEFT_ASSIGN_OR_RETURN(const std::vector<Tensor>* batch, loader.next());
//     model.step(*batch);   // meanwhile the thread fills batch n+1
//   }
//
// Double-buffered and bounded: two sets (`held` + 1, below) of host tensors of the step's
// input types, allocated once. The thread fills set n % 2 with batch n, then waits until
// the consumer has handed that set back, which it does by calling next() again (the set
// next() returned stays untouched until then). The step copies its inputs out of these host
// tensors (Trainable::step takes host tensors; ProgramExecutor::set_input copies into its
// own input buffers), so the loader writes into two host buffers handed to step(), not
// into the executor's buffers. Given a backend's pinning functions (Backend's
// pin_host_memory / unpin_host_memory; cuda: cudaHostRegister), the two sets are pinned
// (page-locked) once, so the executor's copies to the device go by DMA without staging;
// they are unpinned in the destructor. A failure to pin is no error: the batches flow
// from pageable memory and pin_error() says why.
//
// Who owns a batch's buffers while the device reads them (#31's input overlap). A
// consumer that starts batch n+1's copy to the device before step n runs
// (Trainable::prefetch, ProgramExecutor::prefetch_input: cuda copies it on a second
// stream while step n computes) holds two batches at once: n, which its step reads, and
// n+1, whose copy is under way. It asks for `held` = 2: three sets, and next() hands back
// the batch it returned two calls before (n-1, whose step has returned) instead of the
// last one. The rule: a batch's buffers belong to the consumer from the next() that
// returns it until the `held`-th next() after it; the consumer hands a batch back only
// once the device no longer reads it — for a prefetched batch, once the step that takes
// it has returned (the step waits on its copy's event before its first read, and run()
// returns after the step's stream is synchronized), which the driver's order guarantees:
//
//   next() -> n+1 (hands back n-1);  prefetch(n+1);  step(n);   // n, n+1 held
//
// Meanwhile the thread fills batch n+2 into the third set.
//
// An error from the fill function stops the thread and is returned, with its message, by
// the next() that would have returned that batch. The destructor stops the thread and
// joins it, whether or not every batch was taken.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// How to page-lock host memory for a device (Backend::pin_host_memory and
/// unpin_host_memory); all nullptr: nothing to pin.
struct HostPinning {
  Status (*pin)(void* data, int64_t bytes) = nullptr;
  void (*unpin)(void* data) = nullptr;
};

class Loader {
 public:
  /// Fills `into` (tensors of the loader's types, contents unspecified) with batch `n`,
  /// writing into their buffers: replacing a tensor would drop its pinning.
  using Fill = std::function<Status(int64_t n, std::vector<Tensor>& into)>;

  /// Starts the thread preparing batches first, first+1, ..., end-1, into buffers pinned
  /// through `pinning` when it has functions. `held` (>= 1): how many batches the consumer
  /// holds at once (2 when it prefetches, above); the loader keeps `held` + 1 sets.
  Loader(int64_t first, int64_t end, const std::vector<Type>& types, Fill fill,
         HostPinning pinning = {}, int held = 1);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// The next batch, in order: waits for it when the thread has not finished it; hands
  /// back the batch returned `held` calls before. The tensors stay valid and unchanged
  /// until the `held`-th following next() or the destructor. An error when every batch was
  /// taken, or the fill function failed on this batch.
  StatusOr<const std::vector<Tensor>*> next();

  /// Seconds next() spent waiting for the thread, over all calls: the data loading that
  /// showed in the step time.
  double wait_seconds() const { return wait_seconds_; }
  /// Seconds the thread spent in the fill function, over all batches.
  double fill_seconds() const;
  /// Whether the batch buffers are pinned (every non-empty one of every set).
  bool pinned() const { return !pinned_.empty(); }
  /// Why pinning failed (the buffers are then pageable), when it did.
  const std::optional<Error>& pin_error() const { return pin_error_; }

 private:
  void run();
  void pin(HostPinning pinning);

  const int64_t end_;
  Fill fill_;
  const int held_;
  std::vector<std::vector<Tensor>> sets_;  // held_ + 1 sets; batch n fills set n % sets_.size()
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int64_t ready_;          // the batch the thread fills next (all before it are filled)
  int64_t next_;           // the batch the next next() returns
  int64_t released_;       // the batches before it were handed back (their sets may be refilled)
  bool stop_ = false;
  std::optional<Error> error_;  // the failure of batch ready_, when the fill function failed
  double wait_seconds_ = 0;
  double fill_seconds_ = 0;
  void (*unpin_)(void*) = nullptr;
  std::vector<void*> pinned_;     // the pinned buffers, unpinned by the destructor
  std::optional<Error> pin_error_;
  std::thread thread_;
};

}  // namespace weft

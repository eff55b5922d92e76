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
// Double-buffered and bounded: two sets of host tensors of the step's input types,
// allocated once. The thread fills set n % 2 with batch n, then waits until the consumer
// has handed that set back, which it does by calling next() again (the set next()
// returned stays untouched until then). The step copies its inputs out of these host
// tensors (Trainable::step takes host tensors; ProgramExecutor::set_input copies into its
// own input buffers), so the loader writes into two host buffers handed to step(), not
// into the executor's buffers. Given a backend's pinning functions (Backend's
// pin_host_memory / unpin_host_memory; cuda: cudaHostRegister), the two sets are pinned
// (page-locked) once, so the executor's copies to the device go by DMA without staging;
// they are unpinned in the destructor. A failure to pin is no error: the batches flow
// from pageable memory and pin_error() says why.
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
  /// through `pinning` when it has functions.
  Loader(int64_t first, int64_t end, const std::vector<Type>& types, Fill fill,
         HostPinning pinning = {});
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// The next batch, in order: waits for it when the thread has not finished it. The
  /// tensors stay valid and unchanged until the following next() or the destructor. An
  /// error when every batch was taken, or the fill function failed on this batch.
  StatusOr<const std::vector<Tensor>*> next();

  /// Seconds next() spent waiting for the thread, over all calls: the data loading that
  /// showed in the step time.
  double wait_seconds() const { return wait_seconds_; }
  /// Seconds the thread spent in the fill function, over all batches.
  double fill_seconds() const;
  /// Whether the batch buffers are pinned (every non-empty one of both sets).
  bool pinned() const { return !pinned_.empty(); }
  /// Why pinning failed (the buffers are then pageable), when it did.
  const std::optional<Error>& pin_error() const { return pin_error_; }

 private:
  void run();
  void pin(HostPinning pinning);

  const int64_t end_;
  Fill fill_;
  std::vector<Tensor> sets_[2];
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int64_t ready_;          // the batch the thread fills next (all before it are filled)
  int64_t next_;           // the batch the next next() returns
  std::optional<int64_t> held_;  // the batch the consumer holds (its set is not refilled)
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

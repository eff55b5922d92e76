#pragma once
// SIGINT and SIGTERM as a request to stop, taken on one thread of their own.
//
//   StopSignals signals;          // before any thread is started
//   ... join the ranks ...
//   signals.defer();              // from here a stop waits for the step under way
//   ... start the thread pools, train ...
//   if (int s = signals.received()) { /* save, exit 128 + s */ }
//
// Before defer() (the training driver: while it joins the ranks, whose rendezvous may wait
// --collective-timeout for a peer) there is nothing to save, so a signal then ends the
// process at once, as its default action does.
//
// Why not a handler. A handler runs on whichever thread the kernel picks, and the kernel
// writes the signal's frame (registers, vector state: kilobytes) just below that thread's
// stack pointer. oneDNN 2.6's JIT GEMM kernels (dnnl_sgemm, which weft's CPU matmuls
// call) point the stack pointer into a heap buffer while they run (oneDNN issue #4845,
// fixed in oneDNN 3.11), so a signal landing there wrote its frame over the allocations
// before that buffer and malloc's bookkeeping: "corrupted size vs. prev_size" at a later
// free, typically in the checkpoint save after the signal (bug 1 of issue 16). So the
// constructor blocks both signals in the calling thread — every thread started later,
// the thread pools, OpenMP's and oneDNN's, inherits the block — and a watcher thread takes
// them with sigtimedwait: no frame is ever pushed on a thread that computes.

#include <signal.h>

#include <atomic>
#include <thread>

namespace weft::driver {

class StopSignals {
 public:
  /// Blocks SIGINT and SIGTERM in this thread and starts the watcher. Threads started
  /// before it are not covered: construct it first.
  StopSignals();
  /// Stops the watcher; this thread's signal mask and both dispositions are restored
  /// (a signal still pending then acts as it would have without the driver).
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// From now on the first SIGINT or SIGTERM is recorded (received()) rather than ending
  /// the process; until then each ends it as its default action does.
  void defer() { deferring_.store(true, std::memory_order_release); }
  /// The first SIGINT or SIGTERM received after defer(), 0 if none. A second one ends the
  /// process as the signal's default action does (exit status 128 + the signal).
  int received() const { return received_.load(std::memory_order_acquire); }

 private:
  void watch();

  std::atomic<bool> deferring_{false};
  std::atomic<int> received_{0};
  std::atomic<bool> done_{false};
  sigset_t stop_set_{}, old_mask_{};
  struct sigaction old_int_ = {}, old_term_ = {};
  std::thread watcher_;
};

}  // namespace weft::driver

#pragma once
// The MPI communicator's progress thread (mpi_communicator.cc): Open MPI advances a
// non-blocking collective only inside MPI calls, so an MPI_Iallreduce started in the
// middle of the backward pass would otherwise move only when the executor polls between
// invocations, and mostly run at the final wait. With MPI_THREAD_MULTIPLE, this thread
// owns every request in flight and tests it (MPI_Testall) while any is pending, sleeping
// between tests so that it does not take a core from the step's own work; the caller's
// thread only starts reductions and waits for the thread to say they completed.
//
// It sleeps between tests while a caller waits, too, rather than yielding: on a core
// shared with another runnable thread (a loaded machine; mpirun binds each rank to one
// core), Linux's EEVDF scheduler moves a thread's deadline a whole time slice on at each
// sched_yield, so a thread polling by yield ran only once the other one's slice ended,
// each round of the reduction between the ranks cost milliseconds, and 2-rank steps took
// 20-90 ms instead of ~3 ms; a thread that slept is run as soon as its sleep ends
// (bench/RESULTS.md, "#32: the watchdog's wake-ups and the progress thread's yield").
//
//   MpiProgress progress;                     // after MPI_Init_thread gave MULTIPLE
//   auto done = progress.track(std::move(requests));   // MPI_Iallreduce's requests
//   ... compute ...
//   int rc = progress.wait(*done);            // MPI_SUCCESS or the failed test's code

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::collective {

/// Requests handed to the progress thread, and what became of them.
struct TrackedRequests {
  std::vector<MPI_Request> requests;
  /// Set (after `rc`) once every request completed or a test failed.
  std::atomic<bool> done{false};
  int rc = MPI_SUCCESS;
};

class MpiProgress {
 public:
  /// Starts the thread; `pause` is how long it sleeps between tests.
  explicit MpiProgress(std::chrono::microseconds pause);
  /// Stops the thread (stop()).
  ~MpiProgress();
  MpiProgress(const MpiProgress&) = delete;
  MpiProgress& operator=(const MpiProgress&) = delete;

  /// Hands `requests` (begun by this process, in the same order on every rank) to the
  /// thread, which tests them from now on; the caller must not touch them again.
  std::shared_ptr<TrackedRequests> track(std::vector<MPI_Request> requests);
  /// Blocks until `tracked` is done; its MPI return code.
  int wait(TrackedRequests& tracked);
  /// Ends and joins the thread (requests still in flight are left to MPI_Finalize). Call
  /// before MPI_Finalize; idempotent.
  void stop();

 private:
  void run();
  bool test_all(std::vector<std::shared_ptr<TrackedRequests>>& batch);

  std::chrono::microseconds pause_;
  std::mutex mutex_;
  std::condition_variable changed_;  // work arrived, stop, or a completion
  std::vector<std::shared_ptr<TrackedRequests>> in_flight_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft::collective

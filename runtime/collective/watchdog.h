#pragma once
// Faults of a data-parallel job: what a rank says, and when it gives up, when a peer died
// or hangs. Every collective is named by what this rank was doing ("all_reduce #2 of step
// 37 (1.1 MB)": the driver notes each step with note_step, the communicators number the
// collectives within it), and a rank waiting longer than the collective timeout exits
// non-zero with one line naming the peer (when one peer is possible) and that collective:
//
//   error: rank 0 of 2 (MPI) waited 300 s in all_reduce #2 of step 37 (1.1 MB): rank 1
//   did not take part (it died or hangs); exiting
//
// Gloo has timeouts of its own (gloo_communicator.h turns its exceptions into that
// line). MPI has none: `watched` wraps a communicator with a Watchdog, a thread that
// `_exit`s the process when one collective exceeds the timeout (MPI_Abort could hang in
// the same broken job; mpirun then stops the other ranks). The last checkpoint stays
// intact (the driver writes it atomically) and a relaunch with --checkpoint-in resumes.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/collective/communicator.h"

namespace weft::collective {

/// The exit status of a rank that gave up on a collective (the driver's runtime failure).
inline constexpr int kExitCollectiveFailed = 1;

/// Notes that this rank begins training step `step` (1-based, as the driver counts):
/// the collectives after it are numbered from 1 within it. Thread-safe.
void note_step(int64_t step);

/// Names the next collective of this rank and counts it: "all_reduce #2 of step 37
/// (1.1 MB)", or "... before the first step (16 bytes)" before any note_step.
std::string begin_collective(const char* what, int64_t bytes);

/// "5 s", "0.2 s": a timeout in a message.
std::string format_seconds(std::chrono::milliseconds t);

/// "1.1 MB", "512 bytes": a buffer's size in a message.
std::string format_bytes(int64_t bytes);

/// The peer a failed collective waited for: "rank 1" when the world has two ranks (the
/// only other one), else "a peer".
std::string peer_of(int rank, int world_size);

/// What happened when a collective timed out: "rank 1 did not answer within 5 s (it
/// died or hangs)".
std::string no_answer(int rank, int world_size, std::chrono::milliseconds timeout);

/// The one line of a collective that failed: "rank R of N (TRANSPORT) DOING: HAPPENED;
/// exiting".
std::string collective_failure(int rank, int world_size, const std::string& transport,
                               const std::string& doing, const std::string& happened);

/// A thread that ends the process when one armed period lasts longer than `timeout`:
/// it prints `error: ` and the message given to arm(), calls `on_timeout` when given
/// (NCCL's: ncclCommAbort, so that the GPU's collective kernels stop), then `_exit`s with
/// kExitCollectiveFailed. One period at a time (the communicator's calling thread).
class Watchdog {
 public:
  explicit Watchdog(std::chrono::milliseconds timeout, std::function<void()> on_timeout = nullptr);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Starts the clock; `message` is printed if it runs out before disarm().
  void arm(std::string message);
  void disarm();
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void watch();

  const std::chrono::milliseconds timeout_;
  const std::function<void()> on_timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool stopping_ = false;
  bool timing_ = false;  // the thread sleeps until a deadline: arm() need not wake it
  std::chrono::steady_clock::time_point deadline_;
  std::string message_;
  std::thread thread_;
};

/// `inner` with every collective watched: all_reduce, broadcast, and each
/// start_all_reduce's wait() (what blocks) are armed with `timeout`; the message names
/// this rank, `transport` ("MPI"), the collective and the peer.
std::shared_ptr<Communicator> watched(std::shared_ptr<Communicator> inner, const std::string& transport,
                                      std::chrono::milliseconds timeout);

}  // namespace weft::collective

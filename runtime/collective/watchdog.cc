#include "runtime/collective/watchdog.h"

#include <unistd.h>

#include <cstdio>

namespace weft::collective {
namespace {

struct Activity {
  std::mutex mutex;
  int64_t step = 0;       // 0: before the first step
  int64_t collective = 0;  // within the step
};

Activity& activity() {
  static Activity a;
  return a;
}

}  // namespace

void note_step(int64_t step) {
  Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.step = step;
  a.collective = 0;
}

std::string begin_collective(const char* what, int64_t bytes) {
  Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mutex);
  ++a.collective;
  const std::string when = a.step > 0 ? "of step " + std::to_string(a.step) : "before the first step";
  return std::string(what) + " #" + std::to_string(a.collective) + " " + when + " (" + format_bytes(bytes) + ")";
}

std::string format_seconds(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(t.count()) / 1000);
  return text;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " bytes";
  char text[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1000000) std::snprintf(text, sizeof text, "%.1f kB", b / 1e3);
  else if (bytes < 1000000000) std::snprintf(text, sizeof text, "%.1f MB", b / 1e6);
  else std::snprintf(text, sizeof text, "%.1f GB", b / 1e9);
  return text;
}

std::string peer_of(int rank, int world_size) {
  return world_size == 2 ? "rank " + std::to_string(1 - rank) : "a peer";
}

std::string no_answer(int rank, int world_size, std::chrono::milliseconds timeout) {
  return peer_of(rank, world_size) + " did not answer within " + format_seconds(timeout) + " (it died or hangs)";
}

std::string collective_failure(int rank, int world_size, const std::string& transport,
                               const std::string& doing, const std::string& happened) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (" + transport + "), in " +
         doing + ": " + happened + "; exiting";
}

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::function<void()> on_timeout)
    : timeout_(timeout), on_timeout_(std::move(on_timeout)), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

// Wakes the thread only where it sleeps without a deadline: one timing an earlier arm
// wakes at that deadline (earlier than this one: the same timeout), finds deadline_ moved
// on and times the new one. So the collectives of a step, each armed for microseconds,
// cost no wake-up each (one was 12-15 µs of the caller's time per arm).
void Watchdog::arm(std::string message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    deadline_ = std::chrono::steady_clock::now() + timeout_;
    message_ = std::move(message);
    if (timing_) return;
  }
  changed_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

// Sleeps until armed, then until the deadline it saw (later arms move deadline_ on); a
// deadline passed while still armed with it ends the process (the collective's thread
// is stuck inside the transport).
void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
      continue;
    }
    const auto deadline = deadline_;
    timing_ = true;
    const bool expired = changed_.wait_until(lock, deadline) == std::cv_status::timeout;
    timing_ = false;
    if (expired && armed_ && deadline_ == deadline) {
      std::fprintf(stderr, "error: %s\n", message_.c_str());
      std::fflush(stderr);
      std::fflush(stdout);
      if (on_timeout_) on_timeout_();
      _exit(kExitCollectiveFailed);
    }
  }
}

namespace {

class Watched : public Communicator {
 public:
  Watched(std::shared_ptr<Communicator> inner, std::string transport, std::chrono::milliseconds timeout)
      : inner_(std::move(inner)), transport_(std::move(transport)), watchdog_(timeout) {}

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string describe() const override { return inner_->describe(); }

  Status all_reduce(void* data, int64_t count, DType dtype, Reduction reduction) override {
    watchdog_.arm(timed_out(begin_collective("all_reduce", count * dtype_size(dtype))));
    Status s = inner_->all_reduce(data, count, dtype, reduction);
    watchdog_.disarm();
    return s;
  }

  StatusOr<std::unique_ptr<PendingReduction>> start_all_reduce(void* data, int64_t count, DType dtype,
                                                               Reduction reduction) override {
    std::string doing = begin_collective("all_reduce", count * dtype_size(dtype));
    watchdog_.arm(timed_out(doing));  // a transport may block in the start
    StatusOr<std::unique_ptr<PendingReduction>> pending = inner_->start_all_reduce(data, count, dtype, reduction);
    watchdog_.disarm();
    if (!pending.ok()) return pending.error();
    return std::unique_ptr<PendingReduction>(
        std::make_unique<WatchedWait>(std::move(*pending), *this, timed_out(doing)));
  }

  Status broadcast(void* data, int64_t bytes, int root) override {
    watchdog_.arm(timed_out(begin_collective("broadcast", bytes)));
    Status s = inner_->broadcast(data, bytes, root);
    watchdog_.disarm();
    return s;
  }

 private:
  // A started reduction whose wait() is watched; test() is the inner one's.
  class WatchedWait : public PendingReduction {
   public:
    WatchedWait(std::unique_ptr<PendingReduction> inner, Watched& owner, std::string message)
        : inner_(std::move(inner)), owner_(owner), message_(std::move(message)) {}
    Status wait() override {
      owner_.watchdog_.arm(message_);
      Status s = inner_->wait();
      owner_.watchdog_.disarm();
      return s;
    }
    /// The transport's own test (MPI advances a reduction inside it where no progress
    /// thread does), not the default's "completed".
    bool test() override { return inner_->test(); }

   private:
    std::unique_ptr<PendingReduction> inner_;
    Watched& owner_;
    std::string message_;
  };

  std::string timed_out(const std::string& doing) const {
    return collective_failure(rank(), world_size(), transport_, doing,
                              no_answer(rank(), world_size(), watchdog_.timeout()));
  }

  std::shared_ptr<Communicator> inner_;
  std::string transport_;
  Watchdog watchdog_;
};

}  // namespace

std::shared_ptr<Communicator> watched(std::shared_ptr<Communicator> inner, const std::string& transport,
                                      std::chrono::milliseconds timeout) {
  return std::make_shared<Watched>(std::move(inner), transport, timeout);
}

}  // namespace weft::collective

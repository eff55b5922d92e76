// The MPI progress thread (mpi_progress.h): tests the requests in flight, sleeping
// between tests.
#include "runtime/collective/mpi_progress.h"

#include <algorithm>
#include <utility>

namespace weft::collective {

MpiProgress::MpiProgress(std::chrono::microseconds pause) : pause_(pause), thread_([this] { run(); }) {}

MpiProgress::~MpiProgress() { stop(); }

std::shared_ptr<TrackedRequests> MpiProgress::track(std::vector<MPI_Request> requests) {
  auto tracked = std::make_shared<TrackedRequests>();
  tracked->requests = std::move(requests);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.push_back(tracked);
  }
  changed_.notify_all();
  return tracked;
}

int MpiProgress::wait(TrackedRequests& tracked) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return tracked.done.load() || stopping_; });
  return tracked.done.load() ? tracked.rc : MPI_ERR_OTHER;
}

void MpiProgress::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// Sleeps while nothing is in flight; tests what is, without holding the lock (MPI calls
// take microseconds), then pauses unless something completed: a sleep even while a
// caller waits, never a yield (mpi_progress.h says why).
void MpiProgress::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !in_flight_.empty(); });
    if (stopping_) return;
    std::vector<std::shared_ptr<TrackedRequests>> batch = in_flight_;
    lock.unlock();
    const bool completed = test_all(batch);
    lock.lock();
    std::erase_if(in_flight_, [](const std::shared_ptr<TrackedRequests>& t) { return t->done.load(); });
    if (completed) {
      changed_.notify_all();
    } else {
      changed_.wait_for(lock, pause_, [&] { return stopping_; });
    }
  }
}

// One MPI_Testall per entry of `batch`; whether any completed (or failed).
bool MpiProgress::test_all(std::vector<std::shared_ptr<TrackedRequests>>& batch) {
  bool completed = false;
  for (const std::shared_ptr<TrackedRequests>& t : batch) {
    int flag = 0;
    const int rc = MPI_Testall(static_cast<int>(t->requests.size()), t->requests.data(), &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS || flag != 0) {
      t->rc = rc;
      t->done.store(true);
      completed = true;
    }
  }
  return completed;
}

}  // namespace weft::collective

#include "training/driver/stop_signals.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace weft::driver {

StopSignals::StopSignals() {
  sigemptyset(&stop_set_);
  sigaddset(&stop_set_, SIGINT);
  sigaddset(&stop_set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set_, &old_mask_);
  // The default action while blocked everywhere: only sigtimedwait sees them. (An
  // ignored SIGINT, as a shell leaves it for a background job, would be taken too.)
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGINT, &dfl, &old_int_);
  sigaction(SIGTERM, &dfl, &old_term_);
  watcher_ = std::thread([this] { watch(); });
}

void StopSignals::watch() {
  while (!done_.load(std::memory_order_acquire)) {
    const timespec wait = {0, 50'000'000};  // 50 ms: how long the destructor may wait
    const int number = sigtimedwait(&stop_set_, nullptr, &wait);
    if (number < 0) continue;  // EAGAIN (nothing came) or EINTR
    int none = 0;
    if (deferring_.load(std::memory_order_acquire) &&
        received_.compare_exchange_strong(none, number, std::memory_order_acq_rel)) {
      continue;
    }
    // A second one, or one before defer(): end the process as the default action does.
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, number);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(number);
  }
}

StopSignals::~StopSignals() {
  done_.store(true, std::memory_order_release);
  watcher_.join();
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace weft::driver

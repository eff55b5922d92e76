#include "training/data/loader.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

Loader::Loader(int64_t first, int64_t end, const std::vector<Type>& types, Fill fill,
               HostPinning pinning, int held)
    : end_(end), fill_(std::move(fill)), held_(held), sets_(static_cast<size_t>(held) + 1), ready_(first),
      next_(first), released_(first) {
  WEFT_CHECK(held >= 1, "Loader: the consumer holds at least one batch (held = " + std::to_string(held) + ")");
  for (auto& set : sets_) {
    for (const Type& type : types) set.emplace_back(type);
  }
  if (pinning.pin != nullptr && pinning.unpin != nullptr) pin(pinning);
  thread_ = std::thread([this] { run(); });
}

void Loader::pin(HostPinning pinning) {
  unpin_ = pinning.unpin;
  for (auto& set : sets_) {
    for (Tensor& t : set) {
      if (t.bytes() == 0) continue;
      Status s = pinning.pin(t.raw_data(), static_cast<int64_t>(t.bytes()));
      if (s.ok()) {
        pinned_.push_back(t.raw_data());
        continue;
      }
      // All or nothing: a half-pinned loader would copy at two speeds.
      for (void* p : pinned_) unpin_(p);
      pinned_.clear();
      pin_error_ = s.error();
      return;
    }
  }
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
  for (void* p : pinned_) unpin_(p);
}

void Loader::run() {
  for (;;) {
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Batch n goes into set n % sets, which held batch n - sets: free once the consumer
      // has handed that batch back (by calling next() `held_` more times).
      const int64_t sets = static_cast<int64_t>(sets_.size());
      changed_.wait(lock, [&] { return stop_ || ready_ >= end_ || ready_ - sets < released_; });
      if (stop_ || ready_ >= end_) return;
      n = ready_;
    }
    const auto start = Clock::now();
    Status s = fill_(n, sets_[static_cast<size_t>(n) % sets_.size()]);
    const double took = seconds_since(start);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fill_seconds_ += took;
      if (!s.ok()) error_ = s.error();
      else ++ready_;
    }
    changed_.notify_all();
    if (!s.ok()) return;
  }
}

StatusOr<const std::vector<Tensor>*> Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_ >= end_) return Error{"Loader::next: all " + std::to_string(end_) + " batches were taken"};
  // The batch handed out `held_` calls ago is handed back: its set may be refilled.
  released_ = std::max(released_, next_ - held_ + 1);
  changed_.notify_all();
  const auto start = Clock::now();
  changed_.wait(lock, [this] { return ready_ > next_ || error_.has_value(); });
  wait_seconds_ += seconds_since(start);
  if (ready_ <= next_) return *error_;
  return &sets_[static_cast<size_t>(next_++) % sets_.size()];
}

double Loader::fill_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fill_seconds_;
}

}  // namespace weft

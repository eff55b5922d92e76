#pragma once
// Which device slot each prefetch of an input uses and which one a set_input takes
// (#31's input overlap, executor_prefetch.cc): host-only bookkeeping, no CUDA header, so
// that the order is tested without a GPU (executor_prefetch_test).
//
//   PrefetchRing ring;
//   ring.claim(batch1);   // {slot 0}: copy batch 1 there (copy stream)
//   ring.claim(batch2);   // {slot 1}: batch 2 there, while step 1 runs
//   ring.take(batch1);    // 0: the step's stream waits on slot 0's copy, then reads it
//   ring.claim(batch3);   // {slot 0}: after slot 0's last reader (an event)
//   ring.take(other);     // nullopt: not prefetched, set_input copies it from the host

#include <optional>

namespace weft::cuda {

class PrefetchRing {
 public:
  struct Claim {
    int slot = 0;
    /// The slot held a prefetch no set_input took: its copy must be waited for before
    /// that prefetch's host bytes are the caller's again.
    bool replaces_untaken = false;
  };

  /// The slot a prefetch of the host bytes at `host` writes: the older of the two.
  Claim claim(const void* host) {
    const Claim c{next_, host_[next_] != nullptr};
    host_[next_] = host;
    next_ = 1 - next_;
    return c;
  }

  /// Forgets what `slot` holds: its prefetch failed after the claim, so set_input copies
  /// those host bytes from the host instead of taking a slot its copy never filled.
  void forget(int slot) { host_[slot] = nullptr; }

  /// The slot holding an untaken prefetch of `host` (the older first), now taken; nullopt
  /// when `host` was not prefetched (or its prefetch was taken already).
  std::optional<int> take(const void* host) {
    for (int s : {next_, 1 - next_}) {
      if (host != nullptr && host_[s] == host) {
        host_[s] = nullptr;
        return s;
      }
    }
    return std::nullopt;
  }

 private:
  const void* host_[2] = {};  ///< The host bytes each slot holds, not yet taken; null: none.
  int next_ = 0;              ///< The slot the next claim writes (the older one).
};

}  // namespace weft::cuda

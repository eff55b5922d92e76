#pragma once
// A machine with little memory, in a test: while a MemoryLimit lives, the process may map
// only `extra` bytes more than it has mapped now (RLIMIT_AS), so a large allocation fails
// as it would where the memory is not there, and a reader can be checked to say so.
//
//   {
//     testing::MemoryLimit limit(/*extra=*/64 << 20);
//     if (!limit.active()) GTEST_SKIP() << limit.why_not();
//     EXPECT_EQ(read_npy(huge).error().message, "out of memory: ...");
//   }

#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <string>

namespace weft::testing {

class MemoryLimit {
 public:
  explicit MemoryLimit(size_t extra) {
#if defined(__SANITIZE_ADDRESS__)
    why_not_ = "AddressSanitizer maps its own shadow memory; RLIMIT_AS does not model a small machine";
    return;
#endif
    size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    if (pages == 0 || ::getrlimit(RLIMIT_AS, &old_) != 0) {
      why_not_ = "cannot read this process's mapped size or its RLIMIT_AS";
      return;
    }
    rlimit limit = old_;
    limit.rlim_cur = pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) + extra;
    if (old_.rlim_max != RLIM_INFINITY && limit.rlim_cur > old_.rlim_max) limit.rlim_cur = old_.rlim_max;
    active_ = ::setrlimit(RLIMIT_AS, &limit) == 0;
    if (!active_) why_not_ = "setrlimit(RLIMIT_AS) failed";
  }
  ~MemoryLimit() {
    if (active_) ::setrlimit(RLIMIT_AS, &old_);
  }
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;

  bool active() const { return active_; }
  const std::string& why_not() const { return why_not_; }

 private:
  rlimit old_{};
  bool active_ = false;
  std::string why_not_;
};

}  // namespace weft::testing

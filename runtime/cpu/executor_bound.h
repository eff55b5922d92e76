#pragma once
// Internal to runtime/cpu's executor: what a bound invocation is (executor.cc binds one per
// invocation), and the loop invocation's (loop_bound.cc).

#include <memory>
#include <string>
#include <vector>

#include "runtime/cpu/executor.h"
#include "runtime/cpu/kernel.h"

namespace weft::cpu {

struct Executor::Bound {
  virtual ~Bound() = default;
  virtual Status run(ThreadPool& pool) = 0;
  virtual std::string describe() const = 0;
  /// The library kernel it runs, if any (for the shared scratch).
  virtual BoundKernel* kernel() { return nullptr; }
  /// Executor::set_check_numerics reaching a loop's body.
  virtual void set_check_numerics(bool) {}
};

/// A loop invocation: `body` bound for it (loop_slot_bindings, executor.h), run `length` times
/// on the caller's pool; `in` and `results` are the loop's buffers in the parent.
std::unique_ptr<Executor::Bound> make_loop_bound(std::unique_ptr<Executor> body, const Invocation& inv,
                                                 std::vector<const void*> in, std::vector<void*> results);

}  // namespace weft::cpu

#pragma once
// Test helper: a communicator that claims `world_size` ranks (this one rank 0) and
// reduces nothing, for checking what refuses more than one rank without launching any.
//
//   CompiledModel::create(table, 0, {.communicator = std::make_shared<FakeRanks>(2)});

#include <string>

#include "runtime/collective/communicator.h"

namespace weft::collective {

class FakeRanks : public Communicator {
 public:
  explicit FakeRanks(int world_size) : world_size_(world_size) {}
  int rank() const override { return 0; }
  int world_size() const override { return world_size_; }
  Status all_reduce(void*, int64_t, DType, Reduction) override { return Status(); }
  Status broadcast(void*, int64_t, int) override { return Status(); }
  std::string describe() const override {
    return "rank 0 of " + std::to_string(world_size_) + " (a test's fake)";
  }

 private:
  int world_size_;
};

}  // namespace weft::collective

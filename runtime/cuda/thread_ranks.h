#pragma once
// Test helper: N communicators for N threads of one process, passing bytes through shared
// memory (an all-gather per call), so code that talks to every rank (the NCCL bootstrap)
// runs without a launcher. all_reduce sums or averages f32, f64 and i64.
//
//   ThreadRanks world(2);
//   std::thread t([&] { use(*world.rank(1)); });
//   use(*world.rank(0));
//   t.join();

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"

namespace weft::cuda {

class ThreadRanks {
 public:
  explicit ThreadRanks(int world_size) : slots_(static_cast<size_t>(world_size)) {
    for (int r = 0; r < world_size; ++r) ranks_.push_back(std::make_shared<Rank>(this, r));
  }
  std::shared_ptr<collective::Communicator> rank(int r) { return ranks_[static_cast<size_t>(r)]; }

 private:
  // Every rank's `bytes` of this call, once all ranks have made it.
  std::vector<std::vector<char>> all_gather(int rank, const void* data, size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return !reading_; });
    slots_[static_cast<size_t>(rank)].assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    if (++arrived_ == slots_.size()) {
      reading_ = true;
      done_.notify_all();
    }
    const uint64_t round = round_;
    done_.wait(lock, [&] { return reading_ && round_ == round; });
    std::vector<std::vector<char>> all = slots_;
    if (++left_ == slots_.size()) {
      arrived_ = left_ = 0;
      reading_ = false;
      ++round_;
      done_.notify_all();
    }
    return all;
  }

  template <typename T>
  static void reduce(void* data, int64_t count, const std::vector<std::vector<char>>& all, bool mean) {
    std::vector<T> sum(static_cast<size_t>(count), T{});
    for (const std::vector<char>& bytes : all) {
      const T* v = reinterpret_cast<const T*>(bytes.data());
      for (int64_t i = 0; i < count; ++i) sum[static_cast<size_t>(i)] += v[i];
    }
    for (T& s : sum) s = mean ? s / static_cast<T>(all.size()) : s;
    std::memcpy(data, sum.data(), sum.size() * sizeof(T));
  }

  struct Rank : collective::Communicator {
    Rank(ThreadRanks* w, int r) : world(w), me(r) {}
    int rank() const override { return me; }
    int world_size() const override { return static_cast<int>(world->slots_.size()); }
    Status all_reduce(void* data, int64_t count, DType dtype, collective::Reduction reduction) override {
      const auto all = world->all_gather(me, data, static_cast<size_t>(count) * dtype_size(dtype));
      const bool mean = reduction == collective::Reduction::mean;
      if (dtype == DType::f32) reduce<float>(data, count, all, mean);
      else if (dtype == DType::f64) reduce<double>(data, count, all, mean);
      else if (dtype == DType::i64) reduce<int64_t>(data, count, all, mean);
      else return Error{"ThreadRanks reduces f32, f64 and i64"};
      return Status();
    }
    Status broadcast(void* data, int64_t bytes, int root) override {
      const auto all = world->all_gather(me, data, static_cast<size_t>(bytes));
      std::memcpy(data, all[static_cast<size_t>(root)].data(), static_cast<size_t>(bytes));
      return Status();
    }
    std::string describe() const override {
      return "thread rank " + std::to_string(me) + " of " + std::to_string(world_size());
    }
    ThreadRanks* world;
    int me;
  };

  std::mutex mu_;
  std::condition_variable done_;
  std::vector<std::vector<char>> slots_;
  size_t arrived_ = 0, left_ = 0;
  bool reading_ = false;
  uint64_t round_ = 0;
  std::vector<std::shared_ptr<Rank>> ranks_;
};

}  // namespace weft::cuda

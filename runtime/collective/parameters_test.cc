// hash_values, and agree_on_parameters in one process and as rank 1 of 2 with rank 0's
// side scripted (its broadcasts): seeded values made rank 0's, different checkpoints
// refused, a broadcast that delivers other bytes, a failed load on either side. The real 2-rank cases run under mpirun
// in //tests/data_parallel:sync_bn_test.
#include "runtime/collective/parameters.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace weft::collective {
namespace {

std::map<std::string, Tensor> two_values() {
  Tensor w(Type{DType::f32, {2}});
  w.data<float>()[0] = 1.5f;
  w.data<float>()[1] = -2.0f;
  Tensor b(Type{DType::f32, {1}});
  b.data<float>()[0] = 0.25f;
  return {{"w", w}, {"b", b}};
}

TEST(Parameters, HashSeesEveryByteNameAndType) {
  const std::map<std::string, Tensor> a = two_values();
  EXPECT_EQ(hash_values(a), hash_values(two_values()));
  std::map<std::string, Tensor> byte = two_values();
  byte.at("w").data<float>()[1] = -2.0000002f;
  EXPECT_NE(hash_values(byte), hash_values(a));
  std::map<std::string, Tensor> renamed = two_values();
  renamed.emplace("v", renamed.at("w"));
  renamed.erase("w");
  EXPECT_NE(hash_values(renamed), hash_values(a));
  std::map<std::string, Tensor> retyped = two_values();
  Tensor i(Type{DType::i32, {2}});
  std::memcpy(i.raw_data(), a.at("w").raw_data(), 8);
  retyped.at("w") = i;
  EXPECT_NE(hash_values(retyped), hash_values(a));
}

TEST(Parameters, OneProcessAgreesWithItself) {
  std::map<std::string, Tensor> values = two_values();
  EXPECT_TRUE(agree_on_parameters(*single_process(), values, "a.safetensors").ok());
  EXPECT_EQ(hash_values(values), hash_values(two_values()));
}

// Rank 1 of 2, scripted: each broadcast from rank 0 delivers the next of `from_root`,
// and an all_reduce sum adds rank 0's zeros (rank 0 agrees with itself).
class ScriptedRankOne : public Communicator {
 public:
  explicit ScriptedRankOne(std::vector<std::string> from_root) : from_root_(std::move(from_root)) {}
  int rank() const override { return 1; }
  int world_size() const override { return 2; }
  Status all_reduce(void*, int64_t, DType, Reduction) override { return Status(); }
  Status broadcast(void* data, int64_t bytes, int root) override {
    if (root == 1) return Status();
    if (next_ >= from_root_.size() || from_root_[next_].size() != static_cast<size_t>(bytes)) {
      return Error{"unscripted broadcast of " + std::to_string(bytes) + " bytes"};
    }
    std::memcpy(data, from_root_[next_++].data(), static_cast<size_t>(bytes));
    return Status();
  }
  std::string describe() const override { return "rank 1 of 2 (scripted)"; }

 private:
  std::vector<std::string> from_root_;
  size_t next_ = 0;
};

template <typename T>
std::string bytes_of(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string bytes_of(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

// Rank 0 says where its values came from: a length, then the bytes (none when empty).
std::vector<std::string> root_source(const std::string& source) {
  std::vector<std::string> out = {bytes_of(static_cast<int64_t>(source.size()))};
  if (!source.empty()) out.push_back(source);
  return out;
}

TEST(Parameters, SeededValuesBecomeRankZeros) {
  std::map<std::string, Tensor> root = two_values();
  root.at("w").data<float>()[0] = 7.0f;  // rank 0 drew differently
  std::vector<std::string> script = root_source("");
  for (const auto& [name, value] : root) script.push_back(bytes_of(value));  // the map's order
  script.push_back(bytes_of(hash_values(root)));
  ScriptedRankOne comm(script);
  std::map<std::string, Tensor> mine = two_values();
  Status s = agree_on_parameters(comm, mine, /*source=*/"");
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(mine.at("w").data<float>()[0], 7.0f);
  EXPECT_EQ(hash_values(mine), hash_values(root));
}

TEST(Parameters, DifferentCheckpointsAreRefusedNamingBoth) {
  std::map<std::string, Tensor> root = two_values();
  root.at("b").data<float>()[0] = 0.5f;
  std::vector<std::string> script = root_source("a.safetensors");
  script.push_back(bytes_of(hash_values(root)));
  ScriptedRankOne comm(script);
  std::map<std::string, Tensor> mine = two_values();
  Status s = agree_on_parameters(comm, mine, "b.safetensors");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "data parallelism: rank 1's parameters differ from rank 0's (rank 1's loaded from "
            "b.safetensors, rank 0's loaded from a.safetensors); start every rank from the same checkpoint");
  EXPECT_EQ(mine.at("b").data<float>()[0], 0.25f);  // loaded values are never overwritten

  // A rank that initialized from the seed while rank 0 loaded is refused too.
  std::vector<std::string> fresh = root_source("a.safetensors");
  fresh.push_back(bytes_of(hash_values(root)));
  ScriptedRankOne again(fresh);
  s = agree_on_parameters(again, mine, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "data parallelism: rank 1's parameters differ from rank 0's (rank 1's initialized from "
            "the seed, rank 0's loaded from a.safetensors); start every rank from the same checkpoint");
}

TEST(Parameters, ABroadcastThatDeliversOtherBytesIsAnError) {
  std::map<std::string, Tensor> root = two_values();
  std::vector<std::string> script = root_source("");
  for (const auto& [name, value] : root) script.push_back(bytes_of(value));
  script.push_back(bytes_of(hash_values(root) + 1));  // rank 0 hashed something else
  ScriptedRankOne comm(script);
  std::map<std::string, Tensor> mine = two_values();
  Status s = agree_on_parameters(comm, mine, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "data parallelism: rank 1's parameters differ from rank 0's after the broadcast from "
            "rank 0 (rank 1 of 2 (scripted) delivered different bytes)");
}

// A rank whose load failed says so in the exchange of sources (a 0x01 byte, the path,
// 0x01, its reason): every other rank's agreement fails at once, naming it; the failed rank itself
// takes part and returns its own error.
TEST(Parameters, AFailedLoadOnOneRankStopsTheOthersNamingIt) {
  ScriptedRankOne comm(root_source("\x01" "a.safetensors\x01" "cannot open for reading: No such file or directory"));
  std::map<std::string, Tensor> mine = two_values();
  Status s = agree_on_parameters(comm, mine, "a.safetensors");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "data parallelism: rank 0 could not load a.safetensors (cannot open for reading: No such file or "
            "directory); every rank stops");

  ScriptedRankOne failing(root_source("a.safetensors"));  // rank 0 loaded; this rank did not
  const Error e = agree_after_failed_load(failing, "b.safetensors", Error{"cannot open for reading"});
  EXPECT_EQ(e.message, "cannot open for reading");
  float x = 1;  // the script is used up: the exchange took rank 0's side of it
  EXPECT_EQ(failing.broadcast(&x, sizeof x, 0).error().message, "unscripted broadcast of 4 bytes");
  EXPECT_EQ(agree_after_failed_load(*single_process(), "c.safetensors", Error{"one process"}).message, "one process");
}

}  // namespace
}  // namespace weft::collective

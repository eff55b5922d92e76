// hash_values and agree_on_parameters in one process; the 2-rank cases (seeded inits made
// equal, a rank resumed from another checkpoint refused) run under mpirun in
// //tests/data_parallel:sync_bn_test.
#include "runtime/collective/parameters.h"

#include <gtest/gtest.h>

#include <cstring>

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

}  // namespace
}  // namespace weft::collective

// nlohmann_json: parse and dump round-trip.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

TEST(JsonSmoke, ParsesAndDumps) {
  auto j = nlohmann::json::parse(R"({"version": 1, "ops": ["add", "mul"]})");
  EXPECT_EQ(j["version"].get<int>(), 1);
  EXPECT_EQ(j["ops"][1].get<std::string>(), "mul");
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);
}

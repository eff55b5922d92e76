// The renames file of `weftc migrate --renames=FILE.json` (renames.h); weftc_test runs the
// command itself.
#include "tools/weftc/renames.h"

#include <gtest/gtest.h>

namespace weft::cli {
namespace {

std::string parse_error(std::string_view text) {
  std::map<std::string, std::string> renames;
  Status s = parse_renames(text, "r.json", renames);
  return s.ok() ? "ok" : s.to_string();
}

TEST(Renames, ReadsAnObjectOfOldNamesToNewNames) {
  std::map<std::string, std::string> renames{{"x", "y"}};
  ASSERT_TRUE(parse_renames(R"({"encoder.0.weight": "0.weight", "caf\u00e9": "b"})", "r.json", renames).ok());
  EXPECT_EQ(renames, (std::map<std::string, std::string>{{"encoder.0.weight", "0.weight"}, {"caf\xC3\xA9", "b"},
                                                           {"x", "y"}}));
  EXPECT_EQ(parse_error(R"({"x": "z"})"), "ok");
}

TEST(Renames, ErrorsNameTheFile) {
  EXPECT_EQ(parse_error("{\"a\": \"b\",\n \"a\": \"c\"}"), "r.json:2:2: error: a key appears twice in one object");
  EXPECT_EQ(parse_error(R"({"a": ""})"),
            "r.json: error: not a JSON object of old names to new names (the new name of 'a' is not a non-empty "
            "string)");
  EXPECT_EQ(parse_error("[1]"), "r.json: error: not a JSON object of old names to new names (the file holds a array)");
  EXPECT_EQ(parse_error("{"), "r.json: error: not a JSON object of old names to new names (invalid JSON)");
}

// Written differently, the same key was not seen twice: nlohmann kept the last of the two.
TEST(Renames, KeyTwiceWithDifferentEscapesIsRefused) {
  EXPECT_EQ(parse_error(R"({"a": "x", "\u0061": "y"})"),
            "r.json: error: the key 'a' appears twice in one object, written with different escapes");
  EXPECT_EQ(parse_error(R"({"n": {"a": 1, "\u0061": 2}})"),
            "r.json: error: not a JSON object of old names to new names (the new name of 'n' is not a non-empty "
            "string)");
}

}  // namespace
}  // namespace weft::cli

// cpp_quoted: the one C++ string-literal quoting of the generated sources (Programs and
// tools/aot's model text).
#include "codegen/program_source.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::codegen {
namespace {

TEST(CppQuoted, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(cpp_quoted("layer.0.weight"), "\"layer.0.weight\"");
  EXPECT_EQ(cpp_quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(cpp_quoted("two\nlines"), "\"two\\nlines\"");
  EXPECT_EQ(cpp_quoted(std::string("tab\there\r\x01\0", 11)), "\"tab\\011here\\015\\001\\000\"");
  EXPECT_EQ(cpp_quoted(""), "\"\"");
}

}  // namespace
}  // namespace weft::codegen

// The shared text helpers of ir/text_util.h that reports and messages print with.

#include "ir/text_util.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(FormatBytes, WholeBytesBelowOneKib) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(704), "704 B");
  EXPECT_EQ(format_bytes(1023, /*decimals=*/2, /*trim_zeros=*/true), "1023 B");
}

TEST(FormatBytes, TheLargestUnitThatIsAtLeastOne) {
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1344), "1.3 KiB");
  EXPECT_EQ(format_bytes(int64_t{1} << 20), "1.0 MiB");
  EXPECT_EQ(format_bytes(3 * (int64_t{1} << 29)), "1.5 GiB");
  EXPECT_EQ(format_bytes(int64_t{5} << 40), "5120.0 GiB");  // GiB is the largest unit
}

TEST(FormatBytes, DecimalsAndTrimmedZeros) {
  EXPECT_EQ(format_bytes(5 * (int64_t{1} << 18), /*decimals=*/2), "1.25 MiB");
  EXPECT_EQ(format_bytes(256 * 1024, /*decimals=*/2), "256.00 KiB");
  EXPECT_EQ(format_bytes(256 * 1024, /*decimals=*/2, /*trim_zeros=*/true), "256 KiB");
  EXPECT_EQ(format_bytes(3 * (int64_t{1} << 19), /*decimals=*/2, /*trim_zeros=*/true), "1.5 MiB");
  EXPECT_EQ(format_bytes(5 * (int64_t{1} << 18), /*decimals=*/2, /*trim_zeros=*/true), "1.25 MiB");
  EXPECT_EQ(format_bytes(2250, /*decimals=*/2, /*trim_zeros=*/true), "2.2 KiB");
}

TEST(Counted, SingularForOne) {
  EXPECT_EQ(counted(1, "array"), "1 array");
  EXPECT_EQ(counted(0, "element"), "0 elements");
  EXPECT_EQ(counted(784, "element"), "784 elements");
}

TEST(FindInvalidUtf8, TheFirstByteThatBeginsNoValidSequence) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::nullopt);  // é € 😀
  EXPECT_EQ(find_invalid_utf8("ab\xFF"), 2u);              // never a lead byte
  EXPECT_EQ(find_invalid_utf8("a\x80"), 1u);               // a continuation alone
  EXPECT_EQ(find_invalid_utf8("a\xC3"), 1u);               // cut short
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);           // overlong '/'
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);      // a surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // beyond U+10FFFF
}

TEST(LocationOfByte, LinesAndColumnsFromOne) {
  const Location loc = location_of_byte("ab\ncd", 4, "f.wir");
  EXPECT_EQ(loc.to_string(), "f.wir:2:2");
}

TEST(HtmlEscape, TheFourSpecialCharacters) {
  EXPECT_EQ(html_escape(R"(<a href="x">Q&A</a>)"), "&lt;a href=&quot;x&quot;&gt;Q&amp;A&lt;/a&gt;");
  EXPECT_EQ(html_escape("it's · plain"), "it's · plain");
  EXPECT_EQ(html_escape(""), "");
}

}  // namespace
}  // namespace weft

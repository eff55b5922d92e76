// The numbers of command-line flag values (training/flag_values.h): what is well written,
// what is not, and what does not fit.

#include "training/flag_values.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace weft {
namespace {

TEST(FlagValues, Precisions) {
  EXPECT_EQ(parse_precision("f32"), DType::f32);
  EXPECT_EQ(parse_precision("bf16"), DType::bf16);
  EXPECT_EQ(parse_precision("f16"), DType::f16);
  EXPECT_EQ(parse_precision("f64"), std::nullopt);
  EXPECT_EQ(parse_precision("i32"), std::nullopt);
}

TEST(FlagValues, WholeNumbers) {
  EXPECT_EQ(parse_whole_number("12").value, 12);
  EXPECT_EQ(parse_whole_number("-3").value, -3);
  EXPECT_TRUE(parse_whole_number("0").ok());
  EXPECT_EQ(parse_whole_number("-9223372036854775808").value, INT64_MIN);
  for (const char* bad : {"", "-", "+2", " 7", "7 ", "1.5", "1e3", "x", "0x10"}) {
    EXPECT_TRUE(parse_whole_number(bad).malformed) << bad;
  }
  EXPECT_TRUE(parse_whole_number("9223372036854775808").out_of_range);
  EXPECT_FALSE(parse_whole_number("9223372036854775808").malformed);
  EXPECT_TRUE(parse_whole_number("-99999999999999999999").out_of_range);
}

TEST(FlagValues, UnsignedNumbers) {
  EXPECT_EQ(parse_unsigned_number("18446744073709551615").value, UINT64_MAX);
  EXPECT_TRUE(parse_unsigned_number("-1").malformed);
  EXPECT_TRUE(parse_unsigned_number("").malformed);
  EXPECT_TRUE(parse_unsigned_number("18446744073709551616").out_of_range);
}

TEST(FlagValues, RealNumbers) {
  EXPECT_EQ(parse_real_number("0.1").value, 0.1);
  EXPECT_EQ(parse_real_number("1e-3").value, 1e-3);
  EXPECT_EQ(parse_real_number("-2").value, -2);
  for (const char* bad : {"", "abc", "1e", " 1", "1 ", "0.1x"}) {
    EXPECT_TRUE(parse_real_number(bad).malformed) << bad;
  }
  for (const char* huge : {"inf", "-inf", "nan", "1e999"}) {
    EXPECT_TRUE(parse_real_number(huge).out_of_range) << huge;
    EXPECT_FALSE(parse_real_number(huge).malformed) << huge;
  }
}

TEST(FlagValues, ByteSizes) {
  EXPECT_EQ(parse_byte_size("512"), 512);
  EXPECT_EQ(parse_byte_size("64K"), 64 << 10);
  EXPECT_EQ(parse_byte_size("3M"), 3 << 20);
  EXPECT_EQ(parse_byte_size("2G"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("4294967296G"), int64_t{1} << 62);
  for (const char* bad : {"", "0", "-1K", "K", "lots", "5T", "5k", "1.5M", "4294967297G"}) {
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
  }
}

TEST(FlagValues, BucketMebibytes) {
  EXPECT_EQ(parse_bucket_mebibytes("25").value, int64_t{25} << 20);
  EXPECT_EQ(parse_bucket_mebibytes("0.25").value, int64_t{1} << 18);
  EXPECT_EQ(parse_bucket_mebibytes("0").value, 0);
  EXPECT_EQ(parse_bucket_mebibytes("1e-9").value, 1);  // rounded up to a whole byte
  EXPECT_EQ(parse_bucket_mebibytes("65536").value, int64_t{1} << 36);
  EXPECT_TRUE(parse_bucket_mebibytes("0").ok());
  for (const char* bad : {"", "abc", "25M", "1e", " 1"}) {
    EXPECT_TRUE(parse_bucket_mebibytes(bad).malformed) << bad;
  }
  for (const char* absurd : {"-1", "-0.5", "65536.5", "1e9", "inf", "nan"}) {
    EXPECT_TRUE(parse_bucket_mebibytes(absurd).out_of_range) << absurd;
    EXPECT_FALSE(parse_bucket_mebibytes(absurd).malformed) << absurd;
  }
}

TEST(FlagValues, PathsRelativeToWhereBazelRunStarted) {
  ::setenv("BUILD_WORKING_DIRECTORY", "/home/me/project", 1);
  EXPECT_EQ(resolve_path("out/model.safetensors"), "/home/me/project/out/model.safetensors");
  EXPECT_EQ(resolve_path("/abs/x.npy"), "/abs/x.npy");
  EXPECT_EQ(resolve_path(""), "");
  ::unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(resolve_path("out/model.safetensors"), "out/model.safetensors");
}

TEST(FlagValues, UnwritableFile) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  EXPECT_EQ(unwritable_file(dir + "/new.csv"), std::nullopt);
  EXPECT_EQ(unwritable_file(dir), "that is a directory; name a file");
  EXPECT_EQ(unwritable_file(dir + "/absent/new.csv"), "the directory " + dir + "/absent does not exist");
  EXPECT_EQ(unwritable_file("/nonexistent/x"), "the directory /nonexistent does not exist");
}

}  // namespace
}  // namespace weft

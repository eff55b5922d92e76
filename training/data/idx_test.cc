#include "training/data/idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/testing/memory_limit.h"

namespace weft {
namespace {
namespace idx_test {  // this file's names, apart in its package's unity test

std::string temp_path(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string idx_u8_2x3() {
  return std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03", 12) + std::string("\x01\x02\x03\x04\x05\xff");
}

TEST(Idx, ReadsGzipAndPlainU8) {
  write_gz(temp_path("a.gz"), idx_u8_2x3());
  std::ofstream(temp_path("a.idx"), std::ios::binary) << idx_u8_2x3();
  for (const char* name : {"a.gz", "a.idx"}) {
    auto t = read_idx(temp_path(name));
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->type().to_string(), "u8[2,3]");
    EXPECT_EQ(t->data<uint8_t>()[0], 1);
    EXPECT_EQ(t->data<uint8_t>()[5], 255);
  }
}

TEST(Idx, ReadsBigEndianI32) {
  std::string bytes("\0\0\x0C\x01\0\0\0\x02\0\0\x01\x02\xff\xff\xff\xfe", 16);
  write_gz(temp_path("i.gz"), bytes);
  auto t = read_idx(temp_path("i.gz"));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->data<int32_t>()[0], 258);
  EXPECT_EQ(t->data<int32_t>()[1], -2);
}

TEST(Idx, ErrorsNameTheFileAndTheProblem) {
  std::string p = temp_path("bad.gz");
  write_gz(p, std::string("\x01\x02\x08\x01", 4));
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: not an IDX file: it must start with two zero bytes, a type and a rank");
  write_gz(p, std::string("\0\0\x0B\x01\0\0\0\x01\0\0", 10));
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: unsupported IDX element type 0x0B (weft reads u8 0x08, i32 0x0C, f32 "
                "0x0D and f64 0x0E)");
  write_gz(p, std::string("\0\0\x08\x02\0\0\0\x02", 8));
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: truncated IDX header: 2 dims announced but the file ends first");
  write_gz(p, std::string("\0\0\x08\x01\0\0", 6));  // a labels file's rank ("1 dims" before)
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: truncated IDX header: 1 dim announced but the file ends first");
  write_gz(p, idx_u8_2x3().substr(0, 15));
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: truncated IDX data: shape [2,3] needs 6 bytes but 3 follow the header");
  write_gz(p, idx_u8_2x3() + "xy");
  EXPECT_EQ(read_idx(p).error().to_string(), p + ": error: 2 unexpected bytes after the IDX data");
  // A tiny file announcing 128 MiB (more than deflate can expand it to, so read as a
  // whole rather than into a tensor of the announced size): truncated, as any other.
  write_gz(p, std::string("\0\0\x08\x02\0\0\x80\0\0\0\x10\0\x01\x02", 14));
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: truncated IDX data: shape [32768,4096] needs 134217728 bytes but 2 follow "
                "the header");
  EXPECT_EQ(read_idx(temp_path("missing.gz")).error().to_string(),
            temp_path("missing.gz") + ": error: cannot open IDX file: No such file or directory");
}

// A truncated .gz names zlib's reason, read before gzclose frees it (it used to be read
// after, so the reason was whatever the heap held; ASan: heap-use-after-free).
TEST(Idx, TruncatedGzipNamesZlibsReason) {
  std::string p = temp_path("whole.gz");
  std::string noise(4000, '\0');  // little that deflate can shorten
  uint32_t state = 1;
  for (char& c : noise) c = static_cast<char>((state = state * 1664525u + 1013904223u) >> 24);
  write_gz(p, idx_u8_2x3() + noise);
  std::ifstream in(p, std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(gz.size(), 1000u);
  p = temp_path("truncated.gz");
  std::ofstream(p, std::ios::binary) << gz.substr(0, gz.size() / 2);
  EXPECT_EQ(read_idx(p).error().to_string(),
            p + ": error: cannot decompress IDX file: unexpected end of file");
}

// Running out of memory while decompressing or allocating is reported as such (it ended
// in an uncaught std::bad_alloc).
TEST(Idx, OutOfMemoryIsReportedAsSuch) {
  const std::string p = temp_path("big.gz");
  const uint32_t n = 128u << 20;  // u8[134217728]: 128 MiB of zeros, a small .gz
  std::string header("\0\0\x08\x01", 4);
  for (int shift : {24, 16, 8, 0}) header += static_cast<char>((n >> shift) & 0xff);
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, header.data(), static_cast<unsigned>(header.size()));
  const std::string zeros(1 << 20, '\0');
  for (uint32_t i = 0; i < n / zeros.size(); ++i) gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size()));
  gzclose(f);
  testing::MemoryLimit limit(/*extra=*/32 << 20);
  if (!limit.active()) GTEST_SKIP() << limit.why_not();
  StatusOr<Tensor> t = read_idx(p);
  ASSERT_FALSE(t.ok());
  const std::string expected = p + ": error: out of memory: decompressing the file needs more than ";
  EXPECT_EQ(t.error().to_string().substr(0, expected.size()), expected);
}

TEST(Idx, ReadsFashionMnistTestLabels) {
  // Installed by tools/setup (Debian's dataset-fashion-mnist).
  auto t = read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->type().to_string(), "u8[10000]");
  const uint8_t* labels = t->data<uint8_t>();
  // The first test images: ankle boot, pullover, trouser, trouser, shirt.
  EXPECT_EQ(labels[0], 9);
  EXPECT_EQ(labels[1], 2);
  EXPECT_EQ(labels[2], 1);
  EXPECT_EQ(labels[3], 1);
  EXPECT_EQ(labels[4], 6);
}

}  // namespace idx_test
}  // namespace
}  // namespace weft

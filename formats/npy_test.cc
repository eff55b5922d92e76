#include "formats/npy.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/testing/memory_limit.h"

namespace weft {
namespace {

// The bytes of a version-1.0 .npy file with header dictionary `dict` and raw `data`,
// laid out (padding included) as NumPy writes it.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  }
  return out + header + data;
}

std::string f32_data(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return s;
}

std::string error_of(std::string_view bytes) {
  auto r = parse_npy(bytes, "x.npy");
  if (r.ok()) return "ok";
  EXPECT_EQ(r.error().loc.file, "x.npy");
  return r.error().message;
}

TEST(NpyTest, ParsesWhatNumpyWrites) {
  // np.save of np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32).
  auto r = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                               f32_data({1, 2, 3, 4, 5, 6})),
                     "x.npy");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->type(), (Type{DType::f32, {2, 3}}));
  EXPECT_EQ(r->data<float>()[5], 6.0f);
}

TEST(NpyTest, ParsesVersions2And3AndScalars) {
  for (int major : {2, 3}) {
    auto r = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                 f32_data({2.5f}), major),
                       "x.npy");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->type(), (Type{DType::f32, {}}));
    EXPECT_EQ(r->data<float>()[0], 2.5f);
  }
}

TEST(NpyTest, RoundTripsEveryDtypeButBf16) {
  for (DType d : kAllDTypes) {
    if (d == DType::bf16) continue;
    Tensor t = Tensor::from_doubles(d, {2, 2}, {0, 1, 1, 0});
    auto bytes = serialize_npy(t);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->size() % 64, t.bytes() % 64);  // Header padded to 64 bytes.
    auto back = parse_npy(*bytes, "x.npy");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_TRUE(*back == t) << dtype_name(d);
  }
  auto one_d = serialize_npy(Tensor::from_vector<int64_t>({3}, {1, 2, 3}));
  EXPECT_NE(one_d->find("'shape': (3,), }"), std::string::npos);
}

TEST(NpyTest, RefusesBf16) {
  auto r = serialize_npy(Tensor(Type{DType::bf16, {2}}), "y.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "y.npy: error: cannot write a bf16 tensor as .npy: NumPy has no bfloat16 dtype; "
            "cast it to f32 first");
}

TEST(NpyTest, ErrorsNameTheProblem) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_EQ(error_of("hello"), "not a .npy file: bad magic string (expected \\x93NUMPY)");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x04\x00\x00\x00", 10)),
            "unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x01\x00\xff\x00{}", 12)),
            "header length 255 runs past the end of the file (12 bytes)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'shape': (2,), }", f32_data({1, 2}))),
            "malformed .npy header: missing key 'fortran_order'");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4' 'fortran_order': False}", "")),
            "malformed .npy header: expected ',' or '}' after 'descr'");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", "")),
            "malformed .npy header: 'shape' holds something other than non-negative integers");
  EXPECT_EQ(error_of(npy_bytes("[1, 2]", "")), "malformed .npy header: expected '{' at the start");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", "")),
            "malformed .npy header: 'fortran_order' is not True or False");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                               f32_data({1, 2}))),
            "big-endian dtype '>f4' is not supported; save a little-endian array, e.g. "
            "arr.astype(arr.dtype.newbyteorder('<'))");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "ab")),
            "unsupported dtype '|i1' (supported: <f4 <f8 <f2 <i4 <i8 |u1 |b1)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                               f32_data({1, 2}))),
            "Fortran-order arrays are not supported; save a C-order array, e.g. "
            "np.ascontiguousarray(arr)");
  EXPECT_EQ(error_of(npy_bytes(ok_dict, f32_data({1}))),
            "data is truncated: shape [2] of <f4 needs 8 bytes, the file has 4");
  EXPECT_EQ(error_of(npy_bytes(ok_dict, f32_data({1, 2, 3}))),
            "4 bytes of trailing data after the array");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                               std::string("\x01\x02", 2))),
            "bool data holds byte value 2 at element 1 (expected 0 or 1)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4294967296, 4294967296, 4294967296), }",
                               "")),
            "shape [4294967296,4294967296,4294967296] of <f4 is too large: its size in bytes "
            "does not fit in 64 bits");
  // A 0 dim does not excuse the others (NumPy refuses these too): Shape::numel used to
  // overflow on the first two before reaching the 0.
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (10000000000000000, 10000000000000000, 0), }",
                               "")),
            "shape [10000000000000000,10000000000000000,0] of <f4 is too large: its size in "
            "bytes does not fit in 64 bits");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                               "'shape': (0, 10000000000000000, 1000), }",
                               "")),
            "shape [0,10000000000000000,1000] of <f8 is too large: its size in bytes does not "
            "fit in 64 bits");
  // A huge but representable empty array is accepted (and needs no data).
  EXPECT_TRUE(parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (0, 1000000000000000), }",
                                  ""),
                        "x.npy")
                  .ok());
}

TEST(NpyTest, TruncationAtEveryLengthNeverCrashes) {
  std::string good = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }",
                               std::string(48, '\0'));
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(parse_npy(good.substr(0, n), "x.npy").ok()) << n;
  }
  EXPECT_TRUE(parse_npy(good, "x.npy").ok());
}

TEST(NpyTest, FilesRoundTripAtomically) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/t.npy";
  auto t = Tensor::from_vector<double>({2}, {1.5, -2});
  ASSERT_TRUE(write_npy(path, t).ok());
  auto back = read_npy(path);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(*back == t);
  // No temporary file is left behind.
  std::ifstream tmp(path + ".tmp." + std::to_string(::getpid()));
  EXPECT_FALSE(tmp.good());
  auto missing = read_npy(dir + "/missing.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().to_string(),
            dir + "/missing.npy: error: cannot open for reading: No such file or directory");
  auto bad_dir = write_npy(dir + "/no/such/dir/t.npy", t);
  ASSERT_FALSE(bad_dir.ok());
  EXPECT_EQ(bad_dir.error().loc.file, dir + "/no/such/dir/t.npy");
}

// Running out of memory while reading is reported as such, naming the file and the bytes
// needed: it was reported as a truncated file, or ended in an uncaught std::bad_alloc.
TEST(NpyTest, OutOfMemoryIsReportedAsSuch) {
  constexpr int64_t n = int64_t{32} << 20;  // f32[33554432]: 128 MiB
  const std::string path = ::testing::TempDir() + "/big.npy";
  const std::string header =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }", "");
  std::ofstream(path, std::ios::binary) << header;
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(header.size() + n * 4)), 0);  // sparse
  {
    testing::MemoryLimit limit(/*extra=*/32 << 20);
    if (!limit.active()) GTEST_SKIP() << limit.why_not();
    StatusOr<Tensor> t = read_npy(path);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().to_string(), path + ": error: out of memory: reading the file needs " +
                                         std::to_string(header.size() + n * 4) + " bytes");
  }
  {
    testing::MemoryLimit limit(/*extra=*/200 << 20);  // the file's bytes fit, the array not
    StatusOr<Tensor> t = read_npy(path);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().to_string(), path + ": error: out of memory: f32[33554432] needs 134217728 bytes");
  }
  EXPECT_TRUE(read_npy(path).ok());
}

TEST(NpyTest, ADirectoryIsNotAFile) {
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(read_npy(dir).error().to_string(), dir + ": error: cannot read: it is a directory, not a file");
}

}  // namespace
}  // namespace weft

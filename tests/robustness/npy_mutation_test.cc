// Malformed `.npy` bytes never crash weft: valid files of every supported dtype (version
// 1.0 and 2.0 headers), truncated at every offset, with corrupted header bytes, huge,
// negative or overflowing shapes, bad descrs and versions, and header lengths pointing
// past the end, go through parse_npy. Each ends in a tensor whose size matches the file
// or an error with a message naming the file.
#include <gtest/gtest.h>

#include "formats/npy.h"
#include "tests/robustness/mutator.h"

namespace weft::robustness {
namespace {

constexpr int kRandomMutantsPerSeed = 3000;

std::vector<std::pair<std::string, std::string>> seed_files() {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32[2,3]", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
      {"f64[]", Tensor::scalar(DType::f64, 2.5)},
      {"i64[4]", Tensor::from_vector<int64_t>({4}, {1, -2, 3, -4})},
      {"i32[1,1,2]", Tensor::from_vector<int32_t>({1, 1, 2}, {7, 8})},
      {"u8[0]", Tensor(Type{DType::u8, {0}})},
      {"bool[3]", Tensor::from_doubles(DType::boolean, {3}, {1, 0, 1})},
      {"f16[2,2]", Tensor::from_doubles(DType::f16, {2, 2}, {0.5, -1, 65504, 0})},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, t] : tensors) {
    StatusOr<std::string> bytes = serialize_npy(t, name);
    EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
    if (bytes.ok()) out.emplace_back(name, *bytes);
  }
  // A version 2.0 header (4-byte length) of the first file.
  std::string v1 = out[0].second;
  std::string v2 = v1.substr(0, 6) + std::string("\x02\x00", 2) + v1.substr(8, 2) +
                   std::string("\x00\x00", 2) + v1.substr(10);
  out.emplace_back("f32[2,3] v2", v2);
  return out;
}

// A hand-made file: `header` is the dictionary text, `data` the bytes after it.
std::string npy_file(const std::string& header, const std::string& data, char major = 1) {
  std::string out = "\x93NUMPY";
  out += major;
  out += '\0';
  size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

void check_npy(int& failures, const std::string& label, const std::string& bytes) {
  CrashContext context(label, bytes);
  auto fail = [&](const std::string& problem) {
    if (++failures <= 10) ADD_FAILURE() << label << ": " << problem << "\n  input: " << escape(bytes);
  };
  try {
    StatusOr<Tensor> t = parse_npy(bytes, "t.npy");
    if (!t.ok()) {
      if (t.error().message.empty()) fail("error with an empty message");
      if (t.error().loc.file != "t.npy") fail("error does not name the file: " + t.error().to_string());
      return;
    }
    if (t->bytes() > bytes.size()) {
      fail("parsed a " + t->type().to_string() + " (" + std::to_string(t->bytes()) +
           " bytes) from a " + std::to_string(bytes.size()) + "-byte file");
    }
    for (int64_t d : t->shape().dims) {
      if (d < 0) fail("parsed a negative dim: " + t->type().to_string());
    }
  } catch (const std::exception& e) {
    fail(std::string("exception escaped from parse_npy: ") + e.what());
  }
}

TEST(NpyMutationTest, SeedsParse) {
  for (const auto& [name, bytes] : seed_files()) {
    StatusOr<Tensor> t = parse_npy(bytes, name);
    EXPECT_TRUE(t.ok()) << name << ": " << t.error().to_string();
  }
}

TEST(NpyMutationTest, EveryTruncation) {
  int failures = 0;
  for (const auto& [name, bytes] : seed_files()) {
    for (size_t n = 0; n < bytes.size(); ++n) {
      check_npy(failures, name + " truncated to " + std::to_string(n) + " bytes", bytes.substr(0, n));
    }
  }
  EXPECT_EQ(failures, 0);
}

// Every byte of every prefix (magic, version, header length) and header set to each of
// a few interesting values.
TEST(NpyMutationTest, EveryHeaderByte) {
  int failures = 0;
  for (const auto& [name, bytes] : seed_files()) {
    size_t header_end = bytes.find('\n');
    for (size_t i = 0; i <= header_end && i < bytes.size(); ++i) {
      for (int v : std::initializer_list<int>{0x00, 0x01, 0x02, 0x03, 0x04, 0x7f, 0x80, 0xff, '(', ')', ',', '\'', '{',
                    '}', ':', '-', '9', ' ', 'L'}) {
        std::string mutant = bytes;
        mutant[i] = static_cast<char>(v);
        check_npy(failures, name + " byte " + std::to_string(i) + " = " + std::to_string(v), mutant);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(NpyMutationTest, RandomMutations) {
  int failures = 0;
  std::vector<std::pair<std::string, std::string>> seeds = seed_files();
  for (size_t s = 0; s < seeds.size(); ++s) {
    Mutator mutator(/*seed=*/static_cast<uint32_t>(4000 + s),
                    {"'descr'", "'<f4'", "'>f4'", "'|b1'", "'<c8'", "'O'", "'fortran_order'",
                     "True", "False", "'shape'", "()", "(1000000000000,)", "(-1,)",
                     "(99999999999999999999,)", "(4294967296, 4294967296)", ",", "L", "{", "}"});
    for (int i = 0; i < kRandomMutantsPerSeed; ++i) {
      check_npy(failures, seeds[s].first + " mutant " + std::to_string(i) + " (seed " +
                              std::to_string(4000 + s) + ")",
                mutator.mutate(seeds[s].second));
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(NpyMutationTest, HandMadeHeaders) {
  int failures = 0;
  const std::string data(24, '\0');
  const std::vector<std::string> shapes = {
      "()", "(6,)", "(2, 3)", "(1000000000000,)", "(-1,)", "(-6,)", "(99999999999999999999,)",
      "(9223372036854775807,)", "(1125899906842624, 1125899906842624)",
      "(10000000000000000, 10000000000000000, 0)", "(0, 10000000000000000, 10000000000000000)",
      "(4294967296, 4294967296, 4294967296, 0)", "(6L,)", "(6", "(,)", "(6,,)", "6", "[6]",
      "(" + std::string(100000, '(') + ")", "(" + [] {
        std::string s;
        for (int i = 0; i < 10000; ++i) s += "1, ";
        return s;
      }() + "6)"};
  const std::vector<std::string> descrs = {"'<f4'", "'>f4'", "'<f8'", "'|b1'", "'<c8'", "'O'",
                                           "''", "'<f4", "4", "'\xff'"};
  for (const std::string& shape : shapes) {
    for (const std::string& descr : descrs) {
      for (char major : {'\1', '\2', '\3', '\0', '\4'}) {
        std::string header = "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }";
        check_npy(failures, "descr " + descr + " shape " + shape.substr(0, 60) + " version " +
                                std::to_string(major),
                  npy_file(header, data, major));
      }
    }
  }
  // Header lengths past the end of the file, and exactly at it.
  std::string valid = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n", data);
  for (int len : {0, 1, 0xffff, static_cast<int>(valid.size()) - 10, static_cast<int>(valid.size()) - 9}) {
    std::string mutant = valid;
    mutant[8] = static_cast<char>(len & 0xff);
    mutant[9] = static_cast<char>((len >> 8) & 0xff);
    check_npy(failures, "header length " + std::to_string(len), mutant);
  }
  std::string v2 = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n", data, '\2');
  for (uint32_t len : {0xffffffffu, 0x80000000u, 0x7fffffffu}) {
    std::string mutant = v2;
    for (int i = 0; i < 4; ++i) mutant[8 + i] = static_cast<char>((len >> (8 * i)) & 0xff);
    check_npy(failures, "v2 header length " + std::to_string(len), mutant);
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace weft::robustness

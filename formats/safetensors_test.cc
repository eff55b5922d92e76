#include "formats/safetensors.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/testing/memory_limit.h"

namespace weft {
namespace {
namespace safetensors_test {  // this file's names, apart in its package's unity test

using Tensors = std::vector<std::pair<std::string, Tensor>>;

std::string temp_dir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file with header `json` (padded as the format requires) and `data`.
std::string file_bytes(std::string json, const std::string& data) {
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((uint64_t{json.size()} >> (8 * i)) & 0xff);
  return out + json + data;
}

std::string error_of(std::string_view bytes) {
  auto r = parse_safetensors(bytes, "x.safetensors");
  if (r.ok()) return "ok";
  EXPECT_EQ(r.error().loc.file, "x.safetensors");
  return r.error().message;
}

// The tensors of formats/testdata/make_safetensors_fixture.py (`reference_tensors`), in
// the order the reference writer lays them out.
Tensors reference_tensors() {
  Tensor brain = Tensor::from_doubles(DType::bf16, {2, 2}, {1.0, -2.0, 0.15625, 256.0});
  return {
      {"step", Tensor::from_vector<int64_t>({1}, {int64_t{1} << 40})},
      {"scale", Tensor::from_vector<double>({}, {3.141592653589793})},
      {"empty", Tensor(Type{DType::f32, {0, 3}})},
      {"layer.bias", Tensor::from_vector<float>({2}, {1.5f, -2.25f})},
      {"layer.weight", Tensor::from_vector<float>({2, 3}, {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f})},
      {"count", Tensor::from_vector<int32_t>({3}, {-7, 0, 2147483647})},
      {"brain", brain},
      {"half", Tensor::from_doubles(DType::f16, {3}, {1.0, -0.5, 65504.0})},
      {"pixels", Tensor::from_vector<uint8_t>({1, 3}, {0, 128, 255})},
      {"mask", Tensor::from_vector<bool>({4}, {true, false, true, true})},
  };
}

TEST(Safetensors, RoundTripsEveryDType) {
  const std::string path = temp_dir() + "/round_trip.safetensors";
  Tensors tensors = reference_tensors();
  ASSERT_TRUE(write_safetensors(path, tensors, {{"step", "10"}}).ok());
  auto file = read_safetensors(path);
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  ASSERT_EQ(file->tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(file->tensors[i].first, tensors[i].first);  // In data-offset order.
    EXPECT_EQ(file->tensors[i].second, tensors[i].second) << tensors[i].first;
  }
  EXPECT_EQ(file->metadata.at("step"), "10");
  EXPECT_EQ(file->metadata.at("checksum").size(), 16u);
  ASSERT_NE(file->find("layer.weight"), nullptr);
  EXPECT_EQ(file->find("layer.weight")->type().to_string(), "f32[2,3]");
  EXPECT_EQ(file->find("nope"), nullptr);
  // The data starts 8-byte aligned.
  std::string bytes = slurp(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST(Safetensors, EmptyFileOfNoTensors) {
  auto bytes = serialize_safetensors({}, {});
  ASSERT_TRUE(bytes.ok());
  auto file = parse_safetensors(*bytes, "e");
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  EXPECT_TRUE(file->tensors.empty());
  EXPECT_EQ(file->metadata.at("checksum"), "cbf29ce484222325");  // FNV-1a of nothing.
}

TEST(Safetensors, ChecksumIsFnv1a64) {
  EXPECT_EQ(safetensors_checksum(""), "cbf29ce484222325");
  EXPECT_EQ(safetensors_checksum("a"), "af63dc4c8601ec8c");
}

// A file written by the pure-Python writer of make_safetensors_fixture.py, which lays
// tensors out as the reference implementation does and has no checksum.
TEST(Safetensors, ReadsWhatThePythonReferenceLayoutWrites) {
  auto file = read_safetensors("formats/testdata/safetensors/python_written.safetensors");
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  EXPECT_EQ(file->metadata,
            (std::map<std::string, std::string>{{"format", "pt"}, {"source", "pure-python writer"}}));
  Tensors expected = reference_tensors();
  ASSERT_EQ(file->tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(file->tensors[i].first, expected[i].first);
    EXPECT_EQ(file->tensors[i].second, expected[i].second) << expected[i].first << ": "
                                                           << tensor_to_string(file->tensors[i].second);
  }
  EXPECT_EQ(file->find("brain")->get_double(2), 0.15625);
  EXPECT_EQ(file->find("half")->get_double(2), 65504.0);
}

// weft's writer reproduces, byte for byte, the golden file that torch 1.13 read back
// (make_safetensors_fixture.py verify), which is also byte-identical to the reference
// layout for these tensors. Regenerate with (one command line)
//   WEFT_SAFETENSORS_GOLDEN=$PWD/formats/testdata/safetensors/weft_written.safetensors
//   bazel run //formats:safetensors_test
TEST(Safetensors, WriterMatchesTheTorchCheckedGolden) {
  auto bytes = serialize_safetensors(reference_tensors(), {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  if (const char* out = std::getenv("WEFT_SAFETENSORS_GOLDEN")) {
    ASSERT_TRUE(write_file_atomically(out, *bytes).ok());
  }
  EXPECT_EQ(*bytes, slurp("formats/testdata/safetensors/weft_written.safetensors"));
}

TEST(Safetensors, WriterErrors) {
  Tensor t = Tensor::scalar(DType::f32, 1);
  auto err = [](const StatusOr<std::string>& r) { return r.ok() ? "ok" : r.error().to_string(); };
  EXPECT_EQ(err(serialize_safetensors({{"a", t}}, {{"checksum", "x"}}, "o.st")),
            "o.st: error: metadata key 'checksum' is reserved: write_safetensors computes it");
  EXPECT_EQ(err(serialize_safetensors({{"a", t}, {"a", t}}, {}, "o.st")),
            "o.st: error: tensor name 'a' appears twice");
  EXPECT_EQ(err(serialize_safetensors({{"__metadata__", t}}, {}, "o.st")),
            "o.st: error: a tensor cannot be named '__metadata__': the header reserves it");
  EXPECT_EQ(err(serialize_safetensors({{"bad\xff", t}}, {}, "o.st")).rfind(
                "o.st: error: tensor names and metadata must be valid UTF-8: ", 0),
            0u);
}

TEST(Safetensors, MissingFile) {
  auto r = read_safetensors(temp_dir() + "/does_not_exist.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(), temp_dir() +
                                       "/does_not_exist.safetensors: error: cannot open for "
                                       "reading: No such file or directory");
}

const std::string kF32x2 = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kEightBytes(8, '\0');

TEST(Safetensors, HeaderLengthErrors) {
  EXPECT_EQ(error_of(std::string("\x10\0\0", 3)),
            "not a safetensors file: it has 3 bytes, fewer than the 8-byte header length");
  EXPECT_EQ(error_of(std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10)),
            "header length 18446744073709551615 is larger than the 100000000 bytes safetensors "
            "allows (not a safetensors file, or a corrupted one)");
  EXPECT_EQ(error_of(std::string("\x40\0\0\0\0\0\0\0{}      ", 16)),
            "header length 64 runs past the end of the file (16 bytes): the file is truncated or "
            "not a safetensors file");
}

// Running out of memory while reading is reported as such, naming the file, the tensor
// and the bytes needed (as read_npy and the IDX reader do): it ended in an uncaught
// std::bad_alloc.
TEST(Safetensors, OutOfMemoryIsReportedAsSuch) {
  constexpr int64_t n = int64_t{32} << 20;  // f32[33554432]: 128 MiB
  const std::string path = temp_dir() + "/big.safetensors";
  const std::string head = file_bytes(R"({"w":{"dtype":"F32","shape":[33554432],"data_offsets":[0,134217728]}})", "");
  spit(path, head);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(head.size() + n * 4)), 0);  // sparse
  {
    testing::MemoryLimit limit(/*extra=*/32 << 20);
    if (!limit.active()) GTEST_SKIP() << limit.why_not();
    StatusOr<SafetensorsFile> f = read_safetensors(path);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().to_string(), path + ": error: tensor 'w': out of memory: f32[33554432] needs 134217728 bytes");
  }
  StatusOr<SafetensorsFile> f = read_safetensors(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->tensors.at(0).second.bytes(), static_cast<size_t>(n * 4));

  // A header of 64 MiB (the format allows 100 MB) read under a 32 MiB allowance.
  const std::string huge_header = temp_dir() + "/huge_header.safetensors";
  const uint64_t header_len = uint64_t{64} << 20;
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((header_len >> (8 * i)) & 0xff);
  spit(huge_header, length + "{");
  ASSERT_EQ(::truncate(huge_header.c_str(), static_cast<off_t>(8 + header_len)), 0);
  testing::MemoryLimit limit(/*extra=*/32 << 20);
  StatusOr<SafetensorsFile> h = read_safetensors(huge_header);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().to_string(), huge_header + ": error: out of memory: reading the header needs " +
                                       std::to_string(8 + header_len) + " bytes");
}

TEST(Safetensors, TruncatedFile) {
  auto bytes = serialize_safetensors(reference_tensors(), {});
  ASSERT_TRUE(bytes.ok());
  std::string cut = bytes->substr(0, bytes->size() - 3);
  EXPECT_EQ(error_of(cut),
            "tensor 'mask': data_offsets [77, 81] are out of bounds: the data section has 78 bytes "
            "(is the file truncated?)");
  EXPECT_EQ(error_of(bytes->substr(0, 40)).rfind("header length ", 0), 0u);
}

TEST(Safetensors, BadJson) {
  EXPECT_EQ(error_of(file_bytes("[1, 2]", "")), "malformed safetensors header: it must start with '{'");
  EXPECT_EQ(error_of(file_bytes("{\"a\": ", "")),
            "malformed safetensors header: invalid JSON: parse error at line 1, column 9: "
            "syntax error while parsing value - unexpected end of input; expected '[', '{', or "
            "a literal");
  EXPECT_EQ(error_of(file_bytes("{" + kF32x2 + "," + kF32x2 + "}", kEightBytes)),
            "malformed safetensors header: key 'a' appears twice in one object");
  EXPECT_EQ(error_of(file_bytes("{\"a\":" + std::string(20, '[') + std::string(20, ']') + "}", "")),
            "malformed safetensors header: JSON nested deeper than 8 levels");
  EXPECT_EQ(error_of(file_bytes(R"({"__metadata__":{"k":1}})", "")),
            "'__metadata__' value of 'k' is 1, not a string");
  EXPECT_EQ(error_of(file_bytes(R"({"__metadata__":[]})", "")),
            "'__metadata__' is not an object of strings");
}

TEST(Safetensors, BadEntries) {
  auto entry = [](const std::string& body, const std::string& data = kEightBytes) {
    return error_of(file_bytes("{\"a\":{" + body + "}}", data));
  };
  EXPECT_EQ(entry(R"("dtype":"F33","shape":[2],"data_offsets":[0,8])"),
            "tensor 'a': unsupported dtype 'F33' (weft reads F32 F64 F16 BF16 I32 I64 U8 BOOL)");
  EXPECT_EQ(entry(R"("dtype":"I8","shape":[8],"data_offsets":[0,8])"),
            "tensor 'a': unsupported dtype 'I8' (weft reads F32 F64 F16 BF16 I32 I64 U8 BOOL)");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2])"), "tensor 'a': header entry has no 'data_offsets'");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1)"),
            "tensor 'a': unexpected key 'extra' in the header entry (expected dtype, shape, "
            "data_offsets)");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])"),
            "tensor 'a': 'shape' holds -2, not a non-negative integer");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2.0],"data_offsets":[0,8])"),
            "tensor 'a': 'shape' holds 2.0, not a non-negative integer");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8])"),
            "tensor 'a': shape [4294967296,4294967296] of F32 is too large: its size in bytes "
            "does not fit in 64 bits");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0])"),
            "tensor 'a': 'data_offsets' is [0], not [begin, end]");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8,0])"),
            "tensor 'a': data_offsets [8, 0] end before they begin");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8,16])"),
            "tensor 'a': data_offsets [8, 16] are out of bounds: the data section has 8 bytes (is "
            "the file truncated?)");
  EXPECT_EQ(entry(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])"),
            "tensor 'a': data_offsets [0, 8] span 8 bytes, but F32[3] needs 12");
  EXPECT_EQ(entry(R"("dtype":"BOOL","shape":[8],"data_offsets":[0,8])", std::string("\1\0\0\2\0\0\0\0", 8)),
            std::string("tensor 'a': BOOL data holds byte value 2 at element 3 (expected 0 or 1)"));
  EXPECT_EQ(error_of(file_bytes(R"({"a":[]})", "")), "tensor 'a': header entry is not an object");
}

TEST(Safetensors, OffsetsMustTileTheDataSection) {
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]})";
  EXPECT_EQ(error_of(file_bytes("{" + kF32x2 + "," + b + "}", std::string(12, '\0'))),
            "tensors 'a' [0, 8) and 'b' [4, 12) overlap in the data section");
  const std::string c = R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]})";
  EXPECT_EQ(error_of(file_bytes("{" + kF32x2 + "," + c + "}", std::string(16, '\0'))),
            "bytes [8, 12) of the data section belong to no tensor (before 'c')");
  EXPECT_EQ(error_of(file_bytes("{" + kF32x2 + "}", std::string(12, '\0'))),
            "bytes [8, 12) of the data section belong to no tensor (trailing data)");
  // Zero-size tensors take no bytes and may share an offset.
  const std::string z = R"("z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]})";
  const std::string y = R"("y":{"dtype":"I64","shape":[0,5],"data_offsets":[8,8]})";
  EXPECT_EQ(error_of(file_bytes("{" + kF32x2 + "," + z + "," + y + "}", kEightBytes)), "ok");
}

TEST(Safetensors, ChecksumMismatch) {
  auto bytes = serialize_safetensors(reference_tensors(), {});
  ASSERT_TRUE(bytes.ok());
  std::string corrupt = *bytes;
  corrupt[corrupt.size() - 10] ^= 0x01;
  const std::string good = safetensors_checksum(std::string_view(*bytes).substr(bytes->size() - 81));
  const std::string bad = safetensors_checksum(std::string_view(corrupt).substr(corrupt.size() - 81));
  EXPECT_EQ(error_of(corrupt), "checksum mismatch: the header says " + good +
                                   ", the data section hashes to " + bad +
                                   " (FNV-1a 64): the data is corrupted");
}

// The metadata has its own checksum: a changed value (weft.step -> -5, say) is refused
// before anyone reads it. Files without one (other writers, older weft) still load.
TEST(Safetensors, MetadataChecksumMismatch) {
  auto bytes = serialize_safetensors(reference_tensors(), {{"weft.step", "7"}});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(error_of(*bytes), "ok");
  std::string changed = *bytes;
  changed.replace(changed.find("\"7\""), 3, "\"8\"");
  const std::string said = parse_safetensors(*bytes, "x")->metadata.at("metadata_checksum");
  const std::string actual = safetensors_checksum(std::string("weft.step\0" "8\0", 12));
  EXPECT_EQ(error_of(changed), "metadata checksum mismatch: the header says " + said +
                                   ", the other metadata entries hash to " + actual +
                                   " (FNV-1a 64): the metadata is corrupted");
  auto err = [](const StatusOr<std::string>& r) { return r.ok() ? "ok" : r.error().to_string(); };
  EXPECT_EQ(err(serialize_safetensors({}, {{"metadata_checksum", "x"}}, "o.st")),
            "o.st: error: metadata key 'metadata_checksum' is reserved: write_safetensors computes it");
}

// Every proper prefix of a file is refused, and no single-byte corruption crashes the
// reader (a corrupted data byte is caught by the checksum).
TEST(Safetensors, TruncationsAndByteFlipsAreRefusedNotCrashes) {
  auto bytes = serialize_safetensors(reference_tensors(), {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    EXPECT_FALSE(parse_safetensors(std::string_view(*bytes).substr(0, n), "t").ok()) << n;
  }
  const size_t data_start = 8 + static_cast<uint8_t>((*bytes)[0]) + 256 * static_cast<uint8_t>((*bytes)[1]);
  uint64_t state = 12345;
  for (int trial = 0; trial < 4000; ++trial) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::string mutated = *bytes;
    const size_t at = (state >> 33) % mutated.size();
    const char before = mutated[at];
    mutated[at] = static_cast<char>(state >> 8);
    auto r = parse_safetensors(mutated, "t");
    // Only changes that leave the content equivalent may parse (e.g. a space for a space).
    if (r.ok() && mutated[at] != before) {
      EXPECT_LT(at, data_start) << "a changed data byte at " << at << " was accepted";
    }
  }
}

// ---- Atomic writes: a failed write leaves whatever was at the path as it was.

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string fresh_dir(const std::string& name) {
  std::string dir = temp_dir() + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

TEST(SafetensorsAtomicWrite, DirectoryDoesNotExist) {
  const std::string path = temp_dir() + "/no_such_dir/x.safetensors";
  Status s = write_safetensors(path, {{"a", Tensor::scalar(DType::f32, 1)}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().loc.file, path);
  EXPECT_EQ(s.error().message.rfind("cannot create the temporary file " + path + ".tmp.", 0), 0u)
      << s.error().message;
  EXPECT_NE(s.error().message.find(": No such file or directory"), std::string::npos);
}

// An empty path (a flag given as `--checkpoint-out=`, Trainer::save("")) is named as one.
TEST(SafetensorsAtomicWrite, AnEmptyPathIsNamedAsOne) {
  Status s = write_safetensors("", {{"a", Tensor::scalar(DType::f32, 1)}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(), "error: the file name is empty; give the path of a file");
  EXPECT_EQ(read_safetensors("").error().to_string(), "error: the file name is empty; give the path of a file");
}

TEST(SafetensorsAtomicWrite, FailedRenameLeavesNoTemporaryFile) {
  const std::string dir = fresh_dir("rename_fails");
  const std::string path = dir + "/ckpt.safetensors";
  mkdir(path.c_str(), 0755);  // A directory where the file should go: rename fails.
  spit(path + "/keep", "old");
  Status s = write_safetensors(path, {{"a", Tensor::scalar(DType::f32, 1)}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot rename "), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("(" + path + " was left as it was)"), std::string::npos);
  EXPECT_EQ(entries_of(dir), std::vector<std::string>{"ckpt.safetensors"});
  EXPECT_EQ(slurp(path + "/keep"), "old");
}

TEST(SafetensorsAtomicWrite, FailedWriteKeepsTheOldFile) {
  const std::string dir = fresh_dir("write_fails");
  const std::string path = dir + "/ckpt.safetensors";
  ASSERT_TRUE(write_safetensors(path, {{"a", Tensor::scalar(DType::f32, 1)}}).ok());
  const std::string old = slurp(path);
  // Files may grow to 4 KiB only: writing 64 KiB fails part-way with EFBIG.
  signal(SIGXFSZ, SIG_IGN);
  rlimit saved;
  getrlimit(RLIMIT_FSIZE, &saved);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status s = write_safetensors(path, {{"big", Tensor(Type{DType::f32, {16384}})}});
  setrlimit(RLIMIT_FSIZE, &saved);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("failed: File too large (" + path + " was left as it was)"),
            std::string::npos)
      << s.error().message;
  EXPECT_EQ(slurp(path), old);
  EXPECT_EQ(entries_of(dir), std::vector<std::string>{"ckpt.safetensors"});
  // And a successful write replaces it.
  ASSERT_TRUE(write_safetensors(path, {{"big", Tensor(Type{DType::f32, {16384}})}}).ok());
  EXPECT_EQ(read_safetensors(path)->tensors[0].first, "big");
}

TEST(SafetensorsAtomicWrite, InvalidInputWritesNothing) {
  const std::string dir = fresh_dir("invalid_input");
  const std::string path = dir + "/ckpt.safetensors";
  ASSERT_TRUE(write_safetensors(path, {{"a", Tensor::scalar(DType::f32, 1)}}).ok());
  const std::string old = slurp(path);
  Tensor t = Tensor::scalar(DType::f32, 2);
  EXPECT_FALSE(write_safetensors(path, {{"a", t}, {"a", t}}).ok());
  EXPECT_EQ(slurp(path), old);
  EXPECT_EQ(entries_of(dir), std::vector<std::string>{"ckpt.safetensors"});
}

}  // namespace safetensors_test
}  // namespace
}  // namespace weft

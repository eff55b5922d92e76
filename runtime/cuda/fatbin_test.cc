// The CUDA objects carry machine code for every architecture of third_party/cuda.bzl's
// CUDA_ARCHS and PTX for the newest ([GPU] reach), read from the objects nvcc made (no
// GPU or cuobjdump needed); and the fat-binary reader's errors on malformed input.

#include "runtime/cuda/fatbin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "third_party/cuda_archs.h"

namespace weft::cuda {

void PrintTo(const FatbinEntry& e, std::ostream* os) { *os << to_string(e); }

namespace {

TEST(Fatbin, EveryObjectCarriesEachArchitecture) {
  for (const char* path : {"runtime/cuda/attention_kernels.cu.o", "runtime/cuda/library_kernels.cu.o",
                           "runtime/cuda/pool.cu.o", "runtime/cuda/recurrent_kernel.cu.o"}) {
    StatusOr<std::vector<FatbinEntry>> entries = read_fatbin(path);
    ASSERT_TRUE(entries.ok()) << entries.error().message;
    std::sort(entries->begin(), entries->end());  // nvcc's order is its own
    std::vector<FatbinEntry> expected = {{FatbinEntry::Kind::ptx, kCudaPtxArch}};
    for (const int arch : kCudaArchs) expected.push_back({FatbinEntry::Kind::machine, arch});
    EXPECT_EQ(*entries, expected) << path;
  }
}

// A fat binary with the given (kind, arch) entries, each with a 4-byte payload.
std::string fatbin(const std::vector<std::pair<uint16_t, uint32_t>>& entries) {
  std::string body;
  for (auto [kind, arch] : entries) {
    std::string e(64 + 4, '\0');
    const uint32_t header = 64;
    const uint64_t payload = 4;
    std::memcpy(e.data(), &kind, 2);
    std::memcpy(e.data() + 4, &header, 4);
    std::memcpy(e.data() + 8, &payload, 8);
    std::memcpy(e.data() + 28, &arch, 4);
    body += e;
  }
  std::string h(16, '\0');
  const uint32_t magic = 0xBA55ED50;
  const uint16_t version = 1, header = 16;
  const uint64_t size = body.size();
  std::memcpy(h.data(), &magic, 4);
  std::memcpy(h.data() + 4, &version, 2);
  std::memcpy(h.data() + 6, &header, 2);
  std::memcpy(h.data() + 8, &size, 8);
  return h + body;
}

TEST(Fatbin, ParsesEntriesOfOneOrMoreFatBinaries) {
  StatusOr<std::vector<FatbinEntry>> e = parse_fatbin(fatbin({{2, 75}, {1, 120}}) + fatbin({{2, 90}}));
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(*e, (std::vector<FatbinEntry>{{FatbinEntry::Kind::machine, 75},
                                          {FatbinEntry::Kind::ptx, 120},
                                          {FatbinEntry::Kind::machine, 90}}));
}

TEST(Fatbin, MalformedInputIsNamed) {
  const std::string good = fatbin({{2, 75}});
  EXPECT_EQ(parse_fatbin(good.substr(0, 10)).error().message,
            "the fat binary at byte 0 is cut short (its header needs 16 bytes)");
  std::string bad_magic = good;
  bad_magic[0] = 'x';
  EXPECT_EQ(parse_fatbin(bad_magic).error().message, "the fat binary at byte 0 does not start with the magic 0xBA55ED50");
  EXPECT_EQ(parse_fatbin(good.substr(0, good.size() - 1)).error().message,
            "the fat binary at byte 0 claims 68 bytes of entries past its 16-byte header, beyond the section's end");
  std::string bad_kind = good;
  bad_kind[16] = 7;
  EXPECT_EQ(parse_fatbin(bad_kind).error().message, "the entry at byte 16 has kind 7 (1: PTX, 2: machine code)");
  std::string long_payload = good;
  long_payload[16 + 8] = 100;
  EXPECT_EQ(parse_fatbin(long_payload).error().message, "the entry at byte 16 runs past its fat binary's end");
}

TEST(Fatbin, AFileWithoutDeviceCodeIsNamed) {
  EXPECT_EQ(read_fatbin("no/such.o").error().message, "no/such.o: cannot be opened");
  EXPECT_EQ(read_fatbin("runtime/cuda/fatbin_test.cc").error().message,
            "runtime/cuda/fatbin_test.cc: is not an ELF64 object");
  EXPECT_EQ(read_fatbin("/proc/self/exe").error().message,
            "/proc/self/exe: has no .nv_fatbin section (no device code)");
}

}  // namespace
}  // namespace weft::cuda

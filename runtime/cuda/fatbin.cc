// Reading CUDA fat binaries out of ELF objects (fatbin.h).

#include "runtime/cuda/fatbin.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace weft::cuda {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr size_t kHeaderBytes = 16;
constexpr size_t kEntryHeaderBytes = 32;  // what is read of an entry's header
constexpr uint16_t kKindPtx = 1, kKindMachine = 2;

template <typename T>
T load(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// Whether [at, at + n) lies inside `bytes`.
bool inside(const std::string& bytes, uint64_t at, uint64_t n) { return at <= bytes.size() && n <= bytes.size() - at; }

// The entries of the fat binary at `at`; `at` moves past it.
Status parse_one(const std::string& bytes, size_t& at, std::vector<FatbinEntry>& out) {
  const std::string where = "the fat binary at byte " + std::to_string(at);
  if (!inside(bytes, at, kHeaderBytes)) return Error{where + " is cut short (its header needs 16 bytes)"};
  if (load<uint32_t>(bytes, at) != kFatbinMagic) return Error{where + " does not start with the magic 0xBA55ED50"};
  const uint16_t header = load<uint16_t>(bytes, at + 6);
  const uint64_t size = load<uint64_t>(bytes, at + 8);
  if (header < kHeaderBytes || !inside(bytes, at + header, size)) {
    return Error{where + " claims " + std::to_string(size) + " bytes of entries past its " + std::to_string(header) +
                 "-byte header, beyond the section's end"};
  }
  size_t p = at + header;
  const size_t end = p + size;
  while (p < end) {
    if (end - p < kEntryHeaderBytes) return Error{"the entry at byte " + std::to_string(p) + " is cut short"};
    const uint16_t kind = load<uint16_t>(bytes, p);
    const uint32_t entry_header = load<uint32_t>(bytes, p + 4);
    const uint64_t payload = load<uint64_t>(bytes, p + 8);
    if (entry_header < kEntryHeaderBytes || entry_header > end - p || payload > end - p - entry_header) {
      return Error{"the entry at byte " + std::to_string(p) + " runs past its fat binary's end"};
    }
    if (kind != kKindPtx && kind != kKindMachine) {
      return Error{"the entry at byte " + std::to_string(p) + " has kind " + std::to_string(kind) +
                   " (1: PTX, 2: machine code)"};
    }
    out.push_back({kind == kKindPtx ? FatbinEntry::Kind::ptx : FatbinEntry::Kind::machine,
                   static_cast<int>(load<uint32_t>(bytes, p + 28))});
    p += entry_header + payload;
  }
  at = end;
  return Status::ok_status();
}

// The contents of the section named `name` of the ELF64 image `file`, or an error.
StatusOr<std::string> elf_section(const std::string& file, const std::string& name) {
  if (file.size() < sizeof(Elf64_Ehdr) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0 ||
      file[EI_CLASS] != ELFCLASS64) {
    return Error{"is not an ELF64 object"};
  }
  const auto eh = load<Elf64_Ehdr>(file, 0);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !inside(file, eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)) ||
      eh.e_shstrndx >= eh.e_shnum) {
    return Error{"has a malformed section table"};
  }
  const auto section = [&](size_t i) { return load<Elf64_Shdr>(file, eh.e_shoff + i * sizeof(Elf64_Shdr)); };
  const Elf64_Shdr names = section(eh.e_shstrndx);
  if (!inside(file, names.sh_offset, names.sh_size)) return Error{"has a malformed section table"};
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= names.sh_size) continue;
    const char* n = file.data() + names.sh_offset + s.sh_name;
    if (std::string(n, strnlen(n, names.sh_size - s.sh_name)) != name) continue;
    if (!inside(file, s.sh_offset, s.sh_size)) return Error{"has a " + name + " section past its end"};
    return file.substr(s.sh_offset, s.sh_size);
  }
  return Error{"has no " + name + " section (no device code)"};
}

}  // namespace

std::string to_string(const FatbinEntry& e) {
  return (e.kind == FatbinEntry::Kind::ptx ? "compute_" : "sm_") + std::to_string(e.arch);
}

StatusOr<std::vector<FatbinEntry>> parse_fatbin(const std::string& bytes) {
  std::vector<FatbinEntry> entries;
  size_t at = 0;
  while (at < bytes.size()) {
    WEFT_RETURN_IF_ERROR(parse_one(bytes, at, entries));
    while (at < bytes.size() && at % 8 != 0) ++at;  // fat binaries are 8-byte aligned
  }
  return entries;
}

StatusOr<std::vector<FatbinEntry>> read_fatbin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot be opened"};
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<std::string> section = elf_section(file, ".nv_fatbin");
  if (!section.ok()) return Error{path + ": " + section.error().message};
  StatusOr<std::vector<FatbinEntry>> entries = parse_fatbin(*section);
  if (!entries.ok()) return Error{path + ": " + entries.error().message};
  return entries;
}

}  // namespace weft::cuda

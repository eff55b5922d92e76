#pragma once
// What a CUDA fat binary carries: reads the `.nv_fatbin` section of an ELF object that
// nvcc made (third_party/cuda.bzl) and lists its entries, so a test on a machine without
// a GPU or cuobjdump can check that the build embeds machine code for every architecture
// it claims ([GPU] reach):
//
//   StatusOr<std::vector<FatbinEntry>> e = read_fatbin("runtime/cuda/library_kernels.cu.o");
//   // {machine, 75}, {machine, 80}, ..., {ptx, 120}
//
// The layout (little-endian): a 16-byte header {u32 magic 0xBA55ED50, u16 version, u16
// header size, u64 size of the entries}, then entries, each a header {u16 kind (1 PTX,
// 2 machine code), u16, u32 header size, u64 payload size, ..., u32 architecture at byte
// 28} followed by its payload.

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::cuda {

/// One piece of device code in a fat binary.
struct FatbinEntry {
  enum class Kind { ptx, machine };
  Kind kind = Kind::machine;
  int arch = 0;  ///< major*10 + minor: sm_XX for machine code, compute_XX for PTX.
  auto operator<=>(const FatbinEntry&) const = default;
};

/// "sm_90" for machine code, "compute_120" for PTX.
std::string to_string(const FatbinEntry& e);

/// The entries of the fat binaries in `bytes`, the `.nv_fatbin` section's contents (one
/// or more fat binaries back to back). Errors name what is malformed and where.
StatusOr<std::vector<FatbinEntry>> parse_fatbin(const std::string& bytes);

/// The entries of the `.nv_fatbin` section of the ELF64 object at `path`. Errors name the
/// file and what is missing (not ELF64, no such section, a malformed fat binary).
StatusOr<std::vector<FatbinEntry>> read_fatbin(const std::string& path);

}  // namespace weft::cuda

#pragma once
// Which NVIDIA GPUs this build of weft runs on ([GPU] reach), decided on the host so
// machines without a GPU test it. The CUDA objects are fat binaries carrying machine code
// for each architecture in kCudaArchs (third_party/cuda.bzl, the one list) and PTX of
// kCudaPtxArch; the generated kernels are PTX for the target their text names
// (codegen/ptx.h). A device runs machine code built for its own major version and an
// equal or lower minor one, and PTX built for an equal or lower architecture, which the
// driver compiles. The executor checks the device before it binds anything:
//
//   check_architecture({.ordinal = 0, .name = "Tesla V100", .major = 7, .minor = 0}, ptx)
//   // error: CUDA device 0 (Tesla V100, compute capability 7.0) is older than weft
//   //        supports: its CUDA code needs compute capability 7.5 (Turing) or newer

#include <string>

#include "ir/status.h"
#include "runtime/program.h"

namespace weft::cuda {

/// A CUDA device as the bind-time check sees it.
struct DeviceArchitecture {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;  ///< Compute capability.
};

/// The oldest compute capability this build runs on, as major*10 + minor (75: Turing).
int minimum_architecture();

/// How the library kernels run on a device of compute capability `arch` (major*10 +
/// minor): "sm_86 machine code", "compute_120 PTX compiled by the driver", or "" when the
/// build carries nothing it can run.
std::string library_code_for(int arch);

/// The architecture a PTX module targets (its `.target sm_XX` line, as major*10 + minor),
/// or -1 when the text names none.
int ptx_target(const std::string& ptx);

/// Ok when the device can run the library kernels and `generated_ptx` (empty: no
/// generated kernels); otherwise an error naming the device, its compute capability and
/// what it lacks.
Status check_architecture(const DeviceArchitecture& device, const std::string& generated_ptx);

/// The bf16 tensor cores cuBLAS and cuDNN need for bf16 GEMMs and convolutions: compute
/// capability 8.0 (Ampere) and newer.
inline constexpr int kBf16TensorCoreArchitecture = 80;

/// TF32 tensor cores, which `--tf32` (ExecutorOptions::tf32) asks of f32 GEMMs and
/// convolutions: compute capability 8.0 (Ampere) and newer.
inline constexpr int kTf32TensorCoreArchitecture = 80;

/// Whether `--tf32` takes effect on `device`. Before Ampere it does not: f32 GEMMs and
/// convolutions run as without it (the opt-in trades exactness for speed the device
/// cannot give), and their plans' descriptions name no tf32.
bool runs_tf32(const DeviceArchitecture& device);

/// Ok when the device has what `program` (its loop bodies included) needs beyond code it
/// can run: a bf16 GEMM or convolution on a device older than kBf16TensorCoreArchitecture
/// is refused at its op's location, saying what runs there instead (f16 or f32; no
/// silent fallback).
Status check_features(const DeviceArchitecture& device, const Program& program);

}  // namespace weft::cuda

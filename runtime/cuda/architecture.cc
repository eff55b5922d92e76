// The bind-time architecture check (architecture.h), from the generated list of
// architectures the CUDA objects carry.

#include "runtime/cuda/architecture.h"

#include <algorithm>
#include <iterator>
#include <regex>

#include "ir/op.h"
#include "third_party/cuda_archs.h"

namespace weft::cuda {
namespace {

std::string capability(int arch) { return std::to_string(arch / 10) + "." + std::to_string(arch % 10); }

// "machine code for sm_75, sm_80, ... and PTX for compute_120"
std::string carried() {
  std::string text = "machine code for ";
  for (size_t i = 0; i < std::size(kCudaArchs); ++i) {
    text += (i ? ", sm_" : "sm_") + std::to_string(kCudaArchs[i]);
  }
  return text + " and PTX for compute_" + std::to_string(kCudaPtxArch);
}

std::string device_words(const DeviceArchitecture& d) {
  return "CUDA device " + std::to_string(d.ordinal) + " (" + d.name + ", compute capability " +
         std::to_string(d.major) + "." + std::to_string(d.minor) + ")";
}

}  // namespace

int minimum_architecture() { return *std::min_element(std::begin(kCudaArchs), std::end(kCudaArchs)); }

std::string library_code_for(int arch) {
  int best = -1;  // the newest machine code of the same major version, minor not above
  for (const int a : kCudaArchs) {
    if (a / 10 == arch / 10 && a <= arch) best = std::max(best, a);
  }
  if (best >= 0) return "sm_" + std::to_string(best) + " machine code";
  if (kCudaPtxArch <= arch) return "compute_" + std::to_string(kCudaPtxArch) + " PTX compiled by the driver";
  return "";
}

int ptx_target(const std::string& ptx) {
  static const std::regex target(R"(\.target\s+sm_(\d+))");
  std::smatch m;
  if (!std::regex_search(ptx, m, target)) return -1;
  return std::stoi(m[1].str());
}

Status check_architecture(const DeviceArchitecture& device, const std::string& generated_ptx) {
  const int arch = device.major * 10 + device.minor;
  const int minimum = minimum_architecture();
  if (arch < minimum) {
    return Error{device_words(device) + " is older than weft supports: its CUDA code needs compute capability " +
                 capability(minimum) + " (Turing) or newer"};
  }
  if (library_code_for(arch).empty()) {
    return Error{device_words(device) + " has no code in this build: it carries " + carried() +
                 " (add " + std::to_string(arch) + " to CUDA_ARCHS in third_party/cuda.bzl)"};
  }
  if (!generated_ptx.empty()) {
    const int target = ptx_target(generated_ptx);
    if (target > arch) {
      return Error{device_words(device) + " cannot run the generated kernels: their PTX targets sm_" +
                   std::to_string(target) + " (compute capability " + capability(target) + ")"};
    }
  }
  return Status::ok_status();
}

bool runs_tf32(const DeviceArchitecture& device) {
  return device.major * 10 + device.minor >= kTf32TensorCoreArchitecture;
}

Status check_features(const DeviceArchitecture& device, const Program& program) {
  if (device.major * 10 + device.minor >= kBf16TensorCoreArchitecture) return Status::ok_status();
  // The products that multiply in the low precision (the op table's autocast class Low:
  // matmul and the convolutions, on cuBLAS and cuDNN). Pooling, a contraction in the op
  // table too, follows its operand's dtype and runs weft's own kernels in f32 (pool.h),
  // which any supported device runs.
  const auto bf16_contraction = [](const Invocation& inv) {
    const bool library_op = inv.kind == Invocation::Kind::library || inv.kind == Invocation::Kind::contraction;
    return library_op && autocast_class(inv.node.op) == AutocastClass::Low && !inv.operands.empty() &&
           inv.operands[0].type.dtype == DType::bf16;
  };
  std::vector<const Program*> programs = {&program};
  for (const Program& body : program.bodies) programs.push_back(&body);
  for (const Program* p : programs) {
    for (const Invocation& inv : p->code) {
      if (!bf16_contraction(inv)) continue;
      return Error{device_words(device) + " has no bf16 tensor cores (compute capability " +
                       capability(kBf16TensorCoreArchitecture) + ", Ampere, and newer have them): " +
                       std::string(op_name(inv.node.op)) + " %" + inv.label +
                       " multiplies in bf16; on this GPU train in f16 or f32 (--precision)",
                   inv.node.loc};
    }
  }
  return Status::ok_status();
}

}  // namespace weft::cuda

#pragma once
// MLIR text → machine code for the host CPU: parse, expand math (polynomial
// approximations for f32, libm for the rest), lower func/arith/math/scf/vector to the
// LLVM dialect, translate to LLVM IR, optimize at O3 for the host (CPU name and
// features from llvm::sys) and JIT with MLIR's ExecutionEngine. The only file of
// codegen/'s kernel path that includes MLIR headers.

#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::codegen {

/// Owns the machine code of one compiled module: its functions stay callable while it
/// lives.
class JitModule {
 public:
  virtual ~JitModule() = default;
};

struct JitResult {
  std::unique_ptr<JitModule> module;
  void* address = nullptr;  ///< Of the requested symbol.
};

/// One MLIR context and the host target; not thread-safe (KernelCompiler serializes).
class Jit {
 public:
  Jit();
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  /// Compiles `mlir_text` and returns the address of `symbol`, a function whose C
  /// signature is the one written in the module (no C-interface wrapper). Errors carry
  /// MLIR's diagnostics or LLVM's error text.
  StatusOr<JitResult> compile(const std::string& mlir_text, const std::string& symbol);

  /// Compiles `mlir_modules` ahead of time into ONE relocatable object file (ELF bytes)
  /// for the host's triple and CPU `cpu` ("native": the host's CPU and features, as the
  /// JIT; or an LLVM CPU name such as "x86-64-v3" or "znver4"), with the same lowering
  /// and O3 optimization as the JIT. Each module's functions keep their names, so the
  /// object defines every kernel symbol; libm calls stay external (link with -lm).
  StatusOr<std::string> compile_object(const std::vector<std::string>& mlir_modules,
                                       const std::string& cpu = "native");

  /// Whether CPU `cpu` (as compile_object names it; "native": the host, which the JIT
  /// compiles for) converts f32 → bf16 in one instruction: AVX512_BF16's vcvtneps2bf16,
  /// with AVX512DQ's vfpclassps to find the denormal lanes it would flush, both on 8
  /// lanes too (AVX512VL) (emit_half.cc).
  bool native_bf16(const std::string& cpu = "native") const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::codegen

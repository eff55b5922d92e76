#pragma once
// Internal to codegen/: the lowering that the host JIT (jit.cc) and the PTX compiler
// (ptx.cc) share: parse a generated module, expand math (polynomial approximations for
// f32, LLVM intrinsics, libm for the rest), and lower func/arith/math/scf/vector/cf to
// the LLVM dialect. Includes MLIR headers: codegen/ only.

#include <string>

#include <memory>

#include "ir/status.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace weft::codegen {

/// Parses `mlir_text` in `ctx` (whose dialects must include every dialect the text
/// uses) and lowers it to the LLVM dialect; MLIR's diagnostics are appended to
/// `diagnostics` and included in the error.
StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> lower_to_llvm_dialect(mlir::MLIRContext& ctx,
                                                                  const std::string& mlir_text,
                                                                  std::string& diagnostics);

/// lower_to_llvm_dialect, then the translation to an LLVM IR module in `llvm_ctx`.
StatusOr<std::unique_ptr<llvm::Module>> translate_to_llvm_ir(mlir::MLIRContext& ctx,
                                                             const std::string& mlir_text,
                                                             llvm::LLVMContext& llvm_ctx);

}  // namespace weft::codegen

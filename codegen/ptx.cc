// The PTX compiler of ptx.h.

#include "codegen/ptx.h"

#include <memory>
#include <mutex>

#include "codegen/llvm_dialect.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace weft::codegen {
namespace {

constexpr char kTriple[] = "nvptx64-nvidia-cuda";

// Marks `f` as a kernel entry point both ways NVPTX reads: the PTX_Kernel calling
// convention and the classic `!nvvm.annotations` {f, "kernel", 1} entry.
void mark_kernel(llvm::Module& m, llvm::Function& f) {
  f.setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Metadata* entry[] = {
      llvm::ValueAsMetadata::get(&f), llvm::MDString::get(ctx, "kernel"),
      llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, entry));
}

}  // namespace

StatusOr<std::string> compile_ptx(const std::vector<std::string>& mlir_modules,
                                  const std::vector<std::string>& kernel_symbols,
                                  const PtxOptions& options) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr) return Error("codegen: no LLVM NVPTX target: " + error);
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, options.chip, options.features, llvm::TargetOptions(), std::nullopt,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (tm == nullptr) return Error("codegen: cannot create an NVPTX target for " + options.chip);

  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::NVVM::NVVMDialect, mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  ctx.disableMultithreading();

  llvm::LLVMContext llvm_ctx;
  std::unique_ptr<llvm::Module> linked = std::make_unique<llvm::Module>("weft_cuda", llvm_ctx);
  for (const std::string& text : mlir_modules) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, translate_to_llvm_ir(ctx, text, llvm_ctx));
    m->setTargetTriple(kTriple);
    m->setDataLayout(tm->createDataLayout());
    if (llvm::Linker::linkModules(*linked, std::move(m))) {
      return Error("codegen: linking the CUDA kernels' LLVM modules failed");
    }
  }
  linked->setTargetTriple(kTriple);
  linked->setDataLayout(tm->createDataLayout());
  for (const std::string& symbol : kernel_symbols) {
    llvm::Function* f = linked->getFunction(symbol);
    if (f == nullptr || f->isDeclaration()) {
      return Error("codegen: no generated module defines CUDA kernel " + symbol);
    }
    mark_kernel(*linked, *f);
  }
  auto optimize = mlir::makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, tm.get());
  if (llvm::Error e = optimize(linked.get())) {
    return Error("codegen: optimizing the CUDA kernels failed: " + llvm::toString(std::move(e)));
  }
  for (const llvm::Function& f : *linked) {
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty()) {
      return Error("codegen: CUDA kernels call " + f.getName().str() +
                   ", which PTX cannot resolve (gpu_supports should have kept that op out)");
    }
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager emit;
  if (tm->addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    return Error("codegen: the NVPTX target cannot emit PTX");
  }
  emit.run(*linked);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace weft::codegen

// The lowering pipeline and JIT of jit.h. Only the dialects and conversions the
// emitted kernels use are included (InitAll*.h would cost a minute per build).

#include "codegen/jit.h"
#include "codegen/llvm_dialect.h"

#include <cstdlib>
#include <functional>
#include <mutex>
#include <utility>

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace weft::codegen {
namespace {

class EngineModule : public JitModule {
 public:
  explicit EngineModule(std::unique_ptr<mlir::ExecutionEngine> e) : engine_(std::move(e)) {}

 private:
  std::unique_ptr<mlir::ExecutionEngine> engine_;
};

}  // namespace

StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> lower_to_llvm_dialect(mlir::MLIRContext& ctx,
                                                                  const std::string& mlir_text,
                                                                  std::string& diagnostics) {
  llvm::raw_string_ostream diag_os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
    diag_os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(mlir_text, &ctx);
  if (!module) return Error("codegen: the generated MLIR does not parse: " + diagnostics + mlir_text);

  // f32 tanh/exp/log/log1p/erf/sin/cos become polynomials on vectors.
  mlir::RewritePatternSet approximations(&ctx);
  mlir::populateMathPolynomialApproximationPatterns(approximations);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(*module, std::move(approximations)))) {
    return Error("codegen: math approximation failed: " + diagnostics);
  }
  mlir::PassManager pm(&ctx);
  // Math to LLVM intrinsics first (fma, fabs, sqrt, floor, f64 exp/log/sin/cos, pow):
  // MathToLibm would turn the approximations' vector fma and fabs into scalar libm
  // calls. Libm then takes what has no intrinsic (f64 tanh, erf, log1p), per lane.
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  if (mlir::failed(pm.run(*module))) {
    return Error("codegen: lowering to the LLVM dialect failed: " + diagnostics);
  }
  return module;
}

StatusOr<std::unique_ptr<llvm::Module>> translate_to_llvm_ir(mlir::MLIRContext& ctx,
                                                             const std::string& mlir_text,
                                                             llvm::LLVMContext& llvm_ctx) {
  std::string diagnostics;
  WEFT_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                        lower_to_llvm_dialect(ctx, mlir_text, diagnostics));
  std::unique_ptr<llvm::Module> m = mlir::translateModuleToLLVMIR(*module, llvm_ctx);
  if (!m) return Error("codegen: translation to LLVM IR failed: " + diagnostics);
  return m;
}

struct Jit::Impl {
  mlir::MLIRContext context;
  std::unique_ptr<llvm::TargetMachine> host;
};

Jit::Jit() : impl_(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  impl_->context.appendDialectRegistry(registry);
  impl_->context.loadAllAvailableDialects();
  impl_->context.disableMultithreading();
  // detectHost() takes the CPU name and features from llvm::sys (znver4 and AVX-512 here).
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (builder) {
    auto tm = builder->createTargetMachine();
    if (tm) impl_->host = std::move(*tm);
    else llvm::consumeError(tm.takeError());
  } else {
    llvm::consumeError(builder.takeError());
  }
}

Jit::~Jit() = default;

StatusOr<JitResult> Jit::compile(const std::string& mlir_text, const std::string& symbol) {
  mlir::MLIRContext& ctx = impl_->context;
  std::string diagnostics;
  WEFT_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                        lower_to_llvm_dialect(ctx, mlir_text, diagnostics));

  // WEFT_JIT_DUMP=1 prints the LLVM dialect module and the optimized LLVM IR.
  const bool dump = std::getenv("WEFT_JIT_DUMP") != nullptr;
  if (dump) module->print(llvm::errs());
  auto optimize = mlir::makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0,
                                                     impl_->host.get());
  mlir::ExecutionEngineOptions options;
  std::function<llvm::Error(llvm::Module*)> transformer = [&](llvm::Module* m) {
    llvm::Error e = optimize(m);
    if (dump) m->print(llvm::errs(), nullptr);
    return e;
  };
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, options);
  if (!engine) {
    return Error("codegen: JIT compilation failed: " + llvm::toString(engine.takeError()) +
                 diagnostics);
  }
  auto address = (*engine)->lookup(symbol);
  if (!address) {
    return Error("codegen: symbol " + symbol + " not found: " +
                 llvm::toString(address.takeError()));
  }
  JitResult result;
  result.address = *address;
  result.module = std::make_unique<EngineModule>(std::move(*engine));
  return result;
}

namespace {

/// The CPU name and feature string for `cpu` ("native" or empty: the host's CPU and
/// features, as the JIT uses; else the LLVM CPU name and its own features).
std::pair<std::string, std::string> cpu_and_features(const std::string& cpu) {
  if (!cpu.empty() && cpu != "native") return {cpu, ""};
  std::string features;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  }
  return {llvm::sys::getHostCPUName().str(), features};
}

}  // namespace

bool Jit::native_bf16(const std::string& cpu) const {
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) return false;
  const auto [cpu_name, features] = cpu_and_features(cpu);
  const std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, cpu_name, features));
  return subtarget && subtarget->isCPUStringValid(cpu_name) &&
         subtarget->checkFeatures("+avx512bf16,+avx512dq,+avx512vl");
}

StatusOr<std::string> Jit::compile_object(const std::vector<std::string>& mlir_modules,
                                          const std::string& cpu) {
  mlir::MLIRContext& ctx = impl_->context;
  // The target: the host's triple, and the named CPU ("native": the host's CPU and
  // features, as the JIT uses).
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) return Error("codegen: no LLVM target for " + triple + ": " + error);
  const auto [cpu_name, features] = cpu_and_features(cpu);
  // createMCSubtargetInfo hands over ownership (LeakSanitizer found it leaked here).
  const std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, cpu_name, ""));
  if (!subtarget->isCPUStringValid(cpu_name)) {
    return Error("codegen: unknown CPU '" + cpu + "' for " + triple +
                 " (try 'native', 'x86-64-v3', 'znver4', 'skylake-avx512')");
  }
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu_name, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));

  llvm::LLVMContext llvm_ctx;
  std::unique_ptr<llvm::Module> linked;
  for (const std::string& text : mlir_modules) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> m, translate_to_llvm_ir(ctx, text, llvm_ctx));
    if (!linked) {
      linked = std::move(m);
    } else if (llvm::Linker::linkModules(*linked, std::move(m))) {
      return Error("codegen: linking the kernels' LLVM modules failed");
    }
  }
  if (!linked) linked = std::make_unique<llvm::Module>("empty", llvm_ctx);
  linked->setTargetTriple(triple);
  linked->setDataLayout(tm->createDataLayout());
  auto optimize = mlir::makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, tm.get());
  if (llvm::Error e = optimize(linked.get())) {
    return Error("codegen: optimizing the kernels failed: " + llvm::toString(std::move(e)));
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager emit;
  if (tm->addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    return Error("codegen: " + triple + " cannot emit object files");
  }
  emit.run(*linked);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace weft::codegen

// MLIR/LLVM 19: parse a tiny module with the func and arith dialects and verify it.
#include <gtest/gtest.h>

#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

TEST(MlirSmoke, ParsesAndVerifies) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
    func.func @add(%a: f32, %b: f32) -> f32 {
      %c = arith.addf %a, %b : f32
      return %c : f32
    })",
                                                        &context);
  ASSERT_TRUE(module);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
}

// Emits the MLIR text of a CUDA elementwise kernel; see emit_gpu.h. The row and column
// of each element, the operand addresses and the op sequence are the CPU emitter's
// (emitter.h), at vector width 1.

#include "codegen/emit_gpu.h"

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {

std::string Emitter::gpu_module(const std::string& symbol) {
  const size_t buffers = g_.inputs().size() + g_.outputs().size();
  std::vector<std::string> ptr;
  os_ << "module {\n  func.func @" << symbol << "(";
  for (size_t k = 0; k < buffers; ++k) {
    ptr.push_back("%p" + std::to_string(k));
    os_ << (k ? ", " : "") << ptr.back() << ": !llvm.ptr";
  }
  os_ << ") {\n";
  const int64_t length = space_.row_length(), total = space_.rows() * length;
  if (total != 0) {
    auto sreg = [&](const std::string& reg) {
      return conv("arith.extui", emit("nvvm.read.ptx.sreg." + reg + " : i32"), DType::i32,
                  DType::i64, 1);
    };
    const std::string tid = sreg("tid.x"), block = sreg("ctaid.x"), block_size = sreg("ntid.x"),
                      blocks = sreg("nctaid.x");
    const std::string first = bi("arith.addi", bi("arith.muli", block, block_size, "i64"), tid, "i64");
    const std::string threads = bi("arith.muli", block_size, blocks, "i64");
    const std::string end = cst(DType::i64, static_cast<double>(total), 1);
    const std::string length_c = cst(DType::i64, static_cast<double>(length), 1);
    os_ << indent_ << "scf.for %e = " << first << " to " << end << " step " << threads
        << " : i64 {\n";
    indent_ += "  ";
    const std::string row = bi("arith.divui", "%e", length_c, "i64");
    const std::string column = bi("arith.remui", "%e", length_c, "i64");
    std::vector<std::string> bases, splats, outs;
    row_pointers(ptr, row, bases, splats, outs);
    body(/*w=*/1, column, bases, splats, outs);
    indent_.resize(indent_.size() - 2);
    os_ << indent_ << "}\n";
  }
  return footer();
}

}  // namespace emit_detail

bool gpu_supports(const Graph& g, const Node& node) {
  if (node.info().category != OpCategory::Elementwise || !emit_supports(g, node)) return false;
  if (node.op == Op::Pow) return false;  // math.powf has no NVPTX lowering.
  bool f64 = g.type(node.result()).dtype == DType::f64;
  for (ValueId o : node.operands) f64 = f64 || g.type(o).dtype == DType::f64;
  if (!f64) return true;
  switch (node.op) {
    case Op::Exp: case Op::Log: case Op::Log1p: case Op::Tanh: case Op::Sin: case Op::Cos:
    case Op::Erf: case Op::Sigmoid: case Op::Gelu:
      return false;  // f64 math needs libdevice (the CPU calls libm).
    default:
      return true;
  }
}

std::string emit_gpu_elementwise(const Graph& body, const std::string& symbol) {
  const CollapsedSpace space = collapse_space(body);
  return emit_detail::Emitter(body, space).gpu_module(symbol);
}

}  // namespace weft::codegen

#include "runtime/cpu/cost.h"

#include <algorithm>

namespace weft::cpu {
namespace {

double numel(const Type& t) { return static_cast<double>(t.numel()); }

// The multiply-adds of a contraction node with `operands` and result type `result`.
// The convolutions' are counted over any number of spatial dims S and kernel dims K
// (numel / dim 0 or 1 takes the product of the others; an empty dim contributes nothing
// either way), and the two backward ops count the forward's products, each of which they
// use once: an input gradient element near the border takes fewer than O/g·prod(K).
double products(const Node& n, const std::vector<BufferRef>& operands, const Type& result) {
  const Shape& a = operands[0].type.shape;
  switch (n.op) {
    case Op::Matmul: {
      if (a.rank() == 1) return numel(result) * static_cast<double>(a[0]);
      const bool ta = n.bool_attr("transpose_a");
      return numel(result) * static_cast<double>(ta ? a[a.rank() - 2] : a[a.rank() - 1]);
    }
    case Op::Conv: {  // x [N,C,*S], w [O, C/g, *K] -> y: each y element C/g · prod(K)
      const Shape& w = operands[1].type.shape;
      return w[0] == 0 ? 0.0 : numel(result) * static_cast<double>(w.numel() / w[0]);
    }
    case Op::ConvBackwardInput: {  // gy [N,O,*So], w [O, C/g, *K] -> gx: the forward's
      const Shape& w = operands[1].type.shape;
      return w[0] == 0 ? 0.0 : numel(operands[0].type) * static_cast<double>(w.numel() / w[0]);
    }
    case Op::ConvBackwardWeight: {  // x [N,C,*S], gy [N,O,*So] -> gw: each N · prod(So)
      const Shape& gy = operands[1].type.shape;
      return gy[1] == 0 ? 0.0 : numel(result) * static_cast<double>(gy.numel() / gy[1]);
    }
    default: return 0;
  }
}

}  // namespace

InvocationCost invocation_cost(const Program& program, const Invocation& inv) {
  InvocationCost c;
  for (const BufferRef& r : inv.operands) c.bytes += static_cast<double>(r.type.bytes());
  for (const BufferRef& r : inv.results) c.bytes += static_cast<double>(r.type.bytes());
  switch (inv.kind) {
    case Invocation::Kind::copy: return c;
    case Invocation::Kind::contraction: {
      // The GEMM (C has results[gemm_result]'s type), then the epilogue per element of C.
      const Type& product = inv.results[inv.gemm_result].type;
      const GeneratedKernel& k = program.kernels[inv.kernel];
      c.flops = 2.0 * products(inv.node, inv.operands, product) +
                numel(product) * static_cast<double>(k.body.nodes().size());
      return c;
    }
    case Invocation::Kind::generated: {
      const GeneratedKernel& k = program.kernels[inv.kernel];
      double elements = static_cast<double>(k.rows) * static_cast<double>(k.row_length);
      // A reduction kernel's iteration space is its output; its work is per input element.
      for (const BufferRef& r : inv.operands) elements = std::max(elements, numel(r.type));
      c.flops = elements * static_cast<double>(k.body.nodes().size());
      return c;
    }
    default: break;
  }
  const Node& n = inv.node;
  switch (n.info().category) {
    case OpCategory::Contraction:
      c.flops = 2.0 * products(n, inv.operands, inv.results[0].type);
      break;
    case OpCategory::Elementwise:
      c.flops = numel(inv.results[0].type);
      break;
    case OpCategory::Reduction:
      c.flops = numel(inv.operands[0].type);
      break;
    default:
      break;
  }
  return c;
}

double flops_between(const Program& program, size_t first, size_t last) {
  double flops = 0;
  for (size_t i = first; i < last && i < program.code.size(); ++i) flops += invocation_cost(program, program.code[i]).flops;
  return flops;
}

}  // namespace weft::cpu

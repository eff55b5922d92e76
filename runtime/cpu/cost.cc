#include "runtime/cpu/cost.h"

#include <algorithm>

namespace weft::cpu {
namespace {

double numel(const Type& t) { return static_cast<double>(t.numel()); }

// The number of products summed into each output element of a contraction node.
double reduction_length(const Node& n, const std::vector<BufferRef>& operands) {
  const Shape& a = operands[0].type.shape;
  switch (n.op) {
    case Op::Matmul: {
      if (a.rank() == 1) return static_cast<double>(a[0]);
      const bool ta = n.bool_attr("transpose_a");
      return static_cast<double>(ta ? a[a.rank() - 2] : a[a.rank() - 1]);
    }
    // Over any number of spatial dims S and kernel dims K (numel / dim 0 or 1 takes the
    // product of the others; an empty dim contributes nothing either way).
    case Op::Conv: {  // x [N,C,*S], w [O, C/g, *K]: C/g · prod(K)
      const Shape& w = operands[1].type.shape;
      return w[0] == 0 ? 0.0 : static_cast<double>(w.numel() / w[0]);
    }
    case Op::ConvBackwardInput: {  // gy [N,O,*So], w [O, C/g, *K] -> gx: O/g · prod(K)
      const Shape& w = operands[1].type.shape;
      return w[1] == 0 ? 0.0 : static_cast<double>(w.numel() / w[1] / n.int_attr("groups"));
    }
    case Op::ConvBackwardWeight: {  // x [N,C,*S], gy [N,O,*So] -> gw: N · prod(So)
      const Shape& gy = operands[1].type.shape;
      return gy[1] == 0 ? 0.0 : static_cast<double>(gy.numel() / gy[1]);
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
      c.flops = 2.0 * numel(product) * reduction_length(inv.node, inv.operands) +
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
      c.flops = 2.0 * numel(inv.results[0].type) * reduction_length(n, inv.operands);
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

}  // namespace weft::cpu

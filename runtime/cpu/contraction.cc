// Contraction-category library kernels: matmul (gemm.cc), the convolutions (conv.cc)
// and pooling (pool.cc). Each factory returns nullptr for a dtype it does not implement
// (f32 is fast; f64 uses plain loops; bf16 matmuls and convolutions use oneDNN's bf16
// primitives; f16 and the rest of bf16 go through f32, half.cc; integer dtypes fall back
// to the reference kernel).

#include "runtime/cpu/contraction_internal.h"

namespace weft::cpu {

KernelOr make_contraction_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                                 void* out) {
  switch (call.node.op) {
    case Op::Matmul: return make_matmul_kernel(call, in, out);
    case Op::Conv:
    case Op::ConvBackwardInput:
    case Op::ConvBackwardWeight: return make_conv_kernel(call, in, out);
    default: return make_pool_kernel(call, in, out);
  }
}

}  // namespace weft::cpu

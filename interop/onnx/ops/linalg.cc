// Matrix products: MatMul (NumPy's matmul) and Gemm (alpha·A'·B' + beta·C).
#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {

void matmul(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().matmul(n.input(0), n.input(1)));
}

void gemm(NodeContext& n) {
  n.expect_attrs({"alpha", "beta", "transA", "transB"});
  Emitter& e = n.e();
  ValueId a = n.input(0), b = n.input(1);
  if (e.rank(a) != 2 || e.rank(b) != 2) n.invalid("A and B must be matrices");
  const DType dt = e.type(a).dtype;
  ValueId y = e.op(Op::Matmul, {a, b},
                   {{"transpose_a", n.attr_int("transA", 0) != 0},
                    {"transpose_b", n.attr_int("transB", 0) != 0}});
  if (double alpha = n.attr_float("alpha", 1.0); alpha != 1.0) y = e.mul(y, e.constant(alpha, dt));
  if (n.has_input(2)) {
    ValueId c = n.input(2);
    if (double beta = n.attr_float("beta", 1.0); beta != 1.0) c = e.mul(c, e.constant(beta, dt));
    y = e.add(y, c);
  }
  n.set_output(0, y);
}

const OpConverter kOps[] = {
    {"MatMul", 1, matmul},
    {"Gemm", 7, gemm},
};

}  // namespace

std::span<const OpConverter> linalg_converters() { return kOps; }

}  // namespace weft::onnx_io

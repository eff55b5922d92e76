// Elementwise math and logic: ONNX's multidirectional (NumPy) broadcasting is weft's.
#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {

template <Op kOp>
void unary(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().op(kOp, {n.input(0)}));
}

template <Op kOp>
void binary(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().op(kOp, {n.input(0), n.input(1)}));
}

const OpConverter kOps[] = {
    {"Abs", 6, unary<Op::Abs>},
    {"Neg", 6, unary<Op::Neg>},
    {"Exp", 6, unary<Op::Exp>},
    {"Log", 6, unary<Op::Log>},
    {"Sqrt", 6, unary<Op::Sqrt>},
    {"Tanh", 6, unary<Op::Tanh>},
    {"Sigmoid", 6, unary<Op::Sigmoid>},
    {"Relu", 6, unary<Op::Relu>},
    {"Add", 7, binary<Op::Add>},
    {"Sub", 7, binary<Op::Sub>},
    {"Mul", 7, binary<Op::Mul>},
    {"Div", 7, binary<Op::Div>},
};

}  // namespace

std::span<const OpConverter> elementwise_converters() { return kOps; }

}  // namespace weft::onnx_io

#include "tests/aot/synthetic_program.h"

#include <limits>

namespace weft::testing {
namespace {

BufferRef arena(int64_t offset, Type type) { return {Space::arena, -1, offset, std::move(type)}; }
BufferRef input(int32_t index, Type type) { return {Space::input, index, 0, std::move(type)}; }

}  // namespace

Program synthetic_program() {
  const Type f32_2x3{DType::f32, Shape({2, 3})};
  const Type f64_6{DType::f64, Shape({6})};
  const Type scalar{DType::f32, Shape(std::vector<int64_t>{})};
  Program p;
  p.name = "synthetic \"step\"";
  p.inputs = {{"x", f32_2x3, InputKind::data},
              {"w.weight", f32_2x3, InputKind::param},
              {"bn.running_mean", f64_6, InputKind::state}};
  p.input_offsets = {0, 64, 128};
  p.inputs_bytes = 192;
  p.kernels.resize(2);
  p.kernels[0].name = "k0";
  p.kernels[0].rows = 2;
  p.kernels[0].row_length = 3;
  p.kernels[1].name = "k1";
  p.kernels[1].rows = 1;
  p.kernels[1].row_length = 6;

  Invocation matmul;
  matmul.kind = Invocation::Kind::contraction;
  matmul.node.op = Op::Matmul;
  matmul.node.attrs = {{"transpose_b", Attribute(true)}, {"transpose_a", Attribute(false)}};
  matmul.node.loc = Location{"models/net.cc", 12, 5, "encoder > Linear(3->3)"};
  matmul.kernel = 0;
  matmul.gemm_result = 1;
  matmul.operands = {input(0, f32_2x3), input(1, f32_2x3)};
  matmul.results = {arena(0, f32_2x3), arena(64, f32_2x3)};
  matmul.label = "7";

  Invocation every_kind;  // every attribute kind and the floats no decimal literal holds
  every_kind.kind = Invocation::Kind::library;
  every_kind.node.op = Op::Pad;
  every_kind.node.attrs = {
      {"int", Attribute(int64_t{-9007199254740993})},
      {"float", Attribute(0.1)},
      {"nan", Attribute(std::numeric_limits<double>::quiet_NaN())},
      {"inf", Attribute(-std::numeric_limits<double>::infinity())},
      {"str", Attribute(std::string("tab\there \"quoted\" back\\slash\nnewline\x01"))},
      {"empty_str", Attribute(std::string())},
      {"dtype", Attribute(DType::boolean)},
      {"ints", Attribute(IntList{1, -2, 3})},
      {"empty_ints", Attribute(IntList{})},
      {"floats", Attribute(FloatList{1e-300, -0.0, std::numeric_limits<double>::infinity()})},
  };
  every_kind.node.loc = Location{"", 0, 0, ""};
  every_kind.operands = {arena(64, f32_2x3)};
  every_kind.results = {arena(128, f64_6)};
  every_kind.label = "pad.0";

  Invocation fused;
  fused.kind = Invocation::Kind::generated;
  fused.node.op = Op::Fused;
  fused.node.loc = Location{"step.wir", 3, 9, ""};
  fused.kernel = 1;
  fused.operands = {arena(128, f64_6), input(2, f64_6)};
  fused.results = {arena(256, f64_6)};
  fused.clear = {arena(304, Type{DType::u8, Shape({16})}), arena(512, Type{DType::u8, Shape({8})})};
  fused.label = "3..5";

  Invocation copy;  // copies name their op (Node::op has no default: AddressSanitizer
  copy.kind = Invocation::Kind::copy;  // saw the indeterminate value this left here)
  copy.node.op = Op::Reshape;
  copy.operands = {arena(256, f64_6)};
  copy.results = {arena(0, scalar)};

  p.code = {matmul, every_kind, fused, copy};
  p.updates = {{2, arena(256, f64_6)}, {1, arena(64, f32_2x3)}};
  p.outputs = {arena(0, scalar), input(1, f32_2x3)};
  p.arena_bytes = 576;
  p.naive_bytes = 1024;
  p.lower_bound_bytes = 320;
  return p;
}

}  // namespace weft::testing

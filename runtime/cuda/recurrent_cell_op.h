#pragma once
// One instruction's op of a persistent loop's register program (recurrent_program.h,
// CellInstr) on f32 registers: what the device kernel computes
// (recurrent_kernel_device.inc) and the host oracle runs (recurrent_reference.h), defined
// once. Each op is ir/scalar_math.h's functor, so both compute exactly what the reference
// interpreter does; bools are 1.0f and 0.0f (comparisons give them, not/and/or read them),
// and select's condition is a != 0. gelu, whose `approximate` attribute picks its form,
// is two codes of its own (kGeluOp, kGeluTanhOp: recurrent_program.h), computed by
// ir/gelu.h's gelu_erf and gelu_tanh, which the reference interpreter's gelu kernel calls
// too (recurrent_plan_test's GeluFormsMatchTheInterpreter compares them bit for bit).
//
//   float y;
//   if (cell_op(static_cast<uint16_t>(Op::Tanh), x, 0, 0, &y)) ...   // y = tanh(x)
//   cell_op_arity(Op::Mul)                                            // 2

#include <cmath>
#include <cstdint>

#include "ir/gelu.h"
#include "ir/host_device.h"
#include "ir/op.h"
#include "ir/scalar_math.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda {

/// op(a, b, c) for `code`, a weft::Op or kGeluOp / kGeluTanhOp (unary ops read a, binary
/// a and b); false, and nothing written, for an op a program may not hold.
WEFT_HD inline bool cell_op(uint16_t code, float a, float b, float c, float* out) {
  if (code == kGeluOp || code == kGeluTanhOp) {
    *out = code == kGeluOp ? gelu_erf(a) : gelu_tanh(a);
    return true;
  }
  const Op op = static_cast<Op>(code);
  if (op == Op::Select) {
    *out = a != 0.0f ? b : c;
    return true;
  }
  bool known = false;
  const auto as_float = [](bool x) { return x ? 1.0f : 0.0f; };
  scalar::visit_unary_math(op, [&](auto math) {
    using M = decltype(math);
    if constexpr ((M::kTypes & scalar::kFloats) != 0) {
      *out = M::template apply<float>(a), known = true;
    } else if constexpr ((M::kTypes & scalar::kBool) != 0) {
      *out = as_float(M::template apply<bool>(a != 0.0f)), known = true;
    }
  });
  scalar::visit_binary_math(op, [&](auto math) {
    using M = decltype(math);
    if constexpr (M::kCompare) {
      *out = as_float(M::template apply<float>(a, b)), known = true;
    } else if constexpr ((M::kTypes & scalar::kFloats) != 0) {
      *out = M::template apply<float>(a, b), known = true;
    } else if constexpr ((M::kTypes & scalar::kBool) != 0) {
      *out = as_float(M::template apply<bool>(a != 0.0f, b != 0.0f)), known = true;
    }
  });
  return known;
}

/// How many registers `op` reads in a program (1, 2 or 3), or 0 when cell_op does not
/// compute it.
WEFT_HD inline int cell_op_arity(Op op) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= kNumOps) return 0;
  float out = 0.0f;
  if (!cell_op(static_cast<uint16_t>(op), 0.0f, 0.0f, 0.0f, &out)) return 0;
  if (op == Op::Select) return 3;
  return scalar::visit_binary_math(op, [](auto) {}) ? 2 : 1;
}

/// How many registers instruction code `code` (a weft::Op or kGeluOp / kGeluTanhOp)
/// reads, or 0 when cell_op does not compute it.
WEFT_HD inline int cell_code_arity(uint16_t code) {
  if (code == kGeluOp || code == kGeluTanhOp) return 1;
  return code < kNumOps ? cell_op_arity(static_cast<Op>(code)) : 0;
}

}  // namespace weft::cuda

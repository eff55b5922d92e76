#include "runtime/cuda/epilogue_match.h"

#include <string>
#include <vector>

#include "ir/text_util.h"

namespace weft::cuda {
namespace {

LtEpilogueDecision refuse(std::string why) { return {std::nullopt, std::move(why)}; }

bool lt_dtype(DType d) { return d == DType::f32 || is_half(d); }

// The bias's shape: N elements laid out as a row of C ([N], or [1, ..., 1, N]).
bool bias_row(const Shape& s, int64_t n) {
  if (s.rank() == 0 || s[s.rank() - 1] != n) return false;
  for (int i = 0; i + 1 < s.rank(); ++i) {
    if (s[i] != 1) return false;
  }
  return true;
}

// The body's ops as cuBLASLt sees them. The CUDA lowering computes a half epilogue in
// f32 (round-at-stores): C and the bias widened by a cast each, the ops in f32, one cast
// rounding the result to C's dtype — cuBLASLt's own arithmetic (f32 accumulator, bias
// and activation in f32, one rounding), so those casts are looked through. Any other
// cast is refused.
struct BodyOps {
  std::vector<const Node*> math;      ///< The ops other than those casts, in order.
  std::vector<ValueId> widened_from;  ///< A widened input's cast result -> the input.
  bool widened = false;               ///< Whether the ops compute in f32 on a half C.
  ValueId rounded = kNoValue;         ///< The final rounding's result, if any.
  std::string refused;
};


BodyOps body_ops(const Graph& body, DType c_dtype) {
  BodyOps ops;
  ops.widened_from.resize(static_cast<size_t>(body.num_values()));
  for (int v = 0; v < body.num_values(); ++v) ops.widened_from[static_cast<size_t>(v)] = v;
  for (const Node& n : body.nodes()) {
    if (n.op != Op::Cast) {
      ops.math.push_back(&n);
      continue;
    }
    const ValueId from = n.operands[0];
    const DType source = body.type(from).dtype, target = n.dtype_attr("dtype");
    if (is_half(c_dtype) && body.input_index(from) >= 0 && source == c_dtype && target == DType::f32) {
      ops.widened_from[static_cast<size_t>(n.result())] = from;
      ops.widened = true;
    } else if (is_half(c_dtype) && ops.rounded == kNoValue && !ops.math.empty() &&
               from == ops.math.back()->result() && source == DType::f32 && target == c_dtype) {
      ops.rounded = n.result();
    } else {
      ops.refused = "a cast from " + std::string(dtype_name(source)) + " to " + std::string(dtype_name(target)) +
                    " in the epilogue: cuBLASLt rounds once, from f32 to C's dtype";
      break;
    }
  }
  return ops;
}

// What the invocation and its plan must be before the body is looked at.
std::string refuse_invocation(const Invocation& inv, const MatmulPlan& plan) {
  if (inv.node.op != Op::Matmul) return "the contraction is " + std::string(op_name(inv.node.op)) + ", not a matmul";
  if (inv.results.size() != 1 || inv.gemm_result != 0) {
    return "the fused node has " + std::to_string(inv.results.size()) +
           " results (values of the epilogue read elsewhere): cuBLASLt writes one";
  }
  if (inv.operands.size() != 3) {
    return "the epilogue reads " + std::to_string(inv.operands.size() - 2) +
           " operands besides C: cuBLASLt's epilogues read one bias vector";
  }
  const DType d = inv.results[0].type.dtype;
  if (!lt_dtype(d)) {
    return "C is " + std::string(dtype_name(d)) +
           ": cuBLASLt's epilogues are used for f32, f16 and bf16 only (f64 stays on cublasDgemm)";
  }
  if (inv.operands[0].type.dtype != d || inv.operands[1].type.dtype != d) {
    return "A, B and C differ in dtype";
  }
  if (plan.zero_fill || plan.calls.empty()) return "the product is empty (k = 0 or no element)";
  if (plan.calls.size() != 1) {
    return "the plan has " + std::to_string(plan.calls.size()) +
           " cuBLAS calls (a batch broadcast entry by entry): cuBLASLt takes one strided batch";
  }
  // B of one row or one column (a matrix-vector product, a Linear to one feature):
  // cuBLASLt's heuristic answers CUBLAS_STATUS_INVALID_VALUE there rather than offering no
  // algorithm, which bind would report as an error; PyTorch's addmm keeps such products
  // off cuBLASLt for the same reason (its mat2 sizes > 1).
  if (plan.n == 1 || plan.k == 1) {
    return "B is " + std::to_string(plan.k) + " x " + std::to_string(plan.n) +
           " (N or K of 1): cuBLASLt's heuristic rejects a matrix-vector product";
  }
  return "";
}

}  // namespace

uint32_t lt_alignment(uintptr_t first, const LtMatrix& m, size_t element_bytes) {
  const uint64_t stride_bytes = m.count > 1 ? static_cast<uint64_t>(m.stride) * element_bytes : 0;
  uint32_t a = 256;
  while (a > 1 && (first % a != 0 || stride_bytes % a != 0)) a /= 2;
  return a;
}

LtLayouts lt_layouts(const CublasGemm& g) {
  LtLayouts l;
  l.first = {g.trans_first ? g.k : g.m, g.trans_first ? g.m : g.k, g.ld_first, g.count, g.stride_first};
  l.second = {g.trans_second ? g.n : g.k, g.trans_second ? g.k : g.n, g.ld_second, g.count, g.stride_second};
  l.c = {g.m, g.n, g.ldc, g.count, g.stride_c};
  return l;
}

const char* lt_epilogue_name(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::bias: return "bias";
    case LtEpilogue::relu_bias: return "relu_bias";
    case LtEpilogue::gelu_bias: return "gelu_bias";
  }
  return "?";
}

LtEpilogueDecision match_lt_epilogue(const Invocation& inv, const Graph& body,
                                     const MatmulPlan& plan) {
  if (std::string why = refuse_invocation(inv, plan); !why.empty()) return refuse(why);
  const Type& c_type = inv.results[0].type;
  const Type& bias_type = inv.operands[2].type;
  if (!bias_row(bias_type.shape, plan.n)) {
    return refuse("the epilogue's operand " + bias_type.to_string() + " is not a bias of " +
                  counted(plan.n, "element") + " broadcast along C's rows");
  }
  if (bias_type.dtype != c_type.dtype) {
    return refuse("the bias is " + bias_type.to_string() + ", C " + c_type.to_string() +
                  ": cuBLASLt's bias has C's dtype (a cast in the epilogue is not its)");
  }
  if (body.inputs().size() != 2 || body.outputs().size() != 1) return refuse("the epilogue's body is not C and one bias");
  const ValueId c = body.inputs()[0].value, bias = body.inputs()[1].value;
  const BodyOps ops = body_ops(body, c_type.dtype);
  if (!ops.refused.empty()) return refuse(ops.refused);
  const std::vector<const Node*>& nodes = ops.math;
  if (nodes.empty() || nodes.size() > 2) {
    return refuse("the epilogue has " + std::to_string(nodes.size()) +
                  " ops besides casts: cuBLASLt's are a bias add and at most one activation");
  }
  const Node& add = *nodes[0];
  const auto seen = [&](ValueId v) { return ops.widened_from[static_cast<size_t>(v)]; };
  const bool c_plus_bias = add.op == Op::Add && add.operands.size() == 2 &&
                           ((seen(add.operands[0]) == c && seen(add.operands[1]) == bias) ||
                            (seen(add.operands[0]) == bias && seen(add.operands[1]) == c));
  if (!c_plus_bias) return refuse("the epilogue does not start with C + bias (it starts with " + std::string(op_name(add.op)) + ")");
  const Type math_type{ops.widened ? DType::f32 : c_type.dtype, c_type.shape};
  for (const Node* n : nodes) {
    if (body.type(n->result()) != math_type) {
      return refuse(std::string(op_name(n->op)) + " gives " + body.type(n->result()).to_string() + ", not " +
                    math_type.to_string());
    }
  }
  const ValueId last = ops.rounded != kNoValue ? ops.rounded : nodes.back()->result();
  if (body.outputs()[0] != last) return refuse("the epilogue's result is not its last op");
  if (nodes.size() == 1) return {LtEpilogueMatch{LtEpilogue::bias, 2}, ""};
  const Node& act = *nodes[1];
  if (act.operands.size() != 1 || act.operands[0] != add.result()) return refuse("the activation does not read C + bias");
  if (act.op == Op::Relu) return {LtEpilogueMatch{LtEpilogue::relu_bias, 2}, ""};
  if (act.op == Op::Gelu) {
    // cuBLASLt's GELU is the tanh approximation, 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
    // The erf form, 0.5x(1 + erf(x/√2)), differs from it by up to 4.7e-4 (at x ≈ -2.7):
    // far past the 2e-5 the GPU cases hold f32 to, and not the function the model asked
    // for, so it keeps the generated epilogue.
    if (act.str_attr("approximate") == "tanh") return {LtEpilogueMatch{LtEpilogue::gelu_bias, 2}, ""};
    return refuse("gelu with approximate=\"" + act.str_attr("approximate") +
                  "\" (erf): cuBLASLt's GELU is the tanh approximation");
  }
  return refuse(std::string(op_name(act.op)) + " after the bias: cuBLASLt's activations are relu and gelu (tanh)");
}

}  // namespace weft::cuda

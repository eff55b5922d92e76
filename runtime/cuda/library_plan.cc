#include "runtime/cuda/library_plan.h"

#include <cstring>

#include "runtime/tensor.h"

namespace weft::cuda {
namespace {

// A map over the whole of `result` (contiguous) with every element inside.
StridedMap box(const Shape& dims) {
  StridedMap m;
  m.rank = dims.rank();
  m.count = dims.numel();
  const std::vector<int64_t> strides = dims.strides();
  for (int d = 0; d < m.rank; ++d) {
    m.dims[d] = dims[d];
    m.out_strides[d] = strides[d];
    m.hi[d] = dims[d];
  }
  return m;
}

int axis_of(const Node& node, int rank) {
  std::optional<int> axis = normalize_axis(node.int_attr("axis"), rank);
  WEFT_CHECK(axis.has_value(), "plan: " + std::string(op_name(node.op)) + " axis out of range");
  return *axis;
}

}  // namespace

StridedMap broadcast_map(const Shape& operand, const Shape& result) {
  StridedMap m = box(result);
  const std::vector<int64_t> strides = operand.strides();
  const int lead = result.rank() - operand.rank();
  for (int d = 0; d < operand.rank(); ++d) {
    m.in_strides[lead + d] = operand[d] == 1 ? 0 : strides[d];
  }
  return m;
}

StatusOr<std::vector<StridedMap>> plan_strided_copy(const Node& node,
                                                    const std::vector<Type>& operands,
                                                    const Type& result) {
  for (const Type& t : operands) {
    if (t.shape.rank() > kMaxRank) {
      return Error{std::string(op_name(node.op)) + ": rank " + std::to_string(t.shape.rank()) +
                   " is above the CUDA kernels' " + std::to_string(kMaxRank)};
    }
  }
  if (result.shape.rank() > kMaxRank) {
    return Error{std::string(op_name(node.op)) + ": rank above " + std::to_string(kMaxRank)};
  }
  const Shape& x = operands[0].shape;
  const std::vector<int64_t> in_strides = x.strides();
  StridedMap m = box(result.shape);
  switch (node.op) {
    case Op::Reshape: {
      // Contiguous to contiguous: the element index is the same on both sides.
      m = box(Shape{result.numel()});
      m.in_strides[0] = 1;
      return std::vector<StridedMap>{m};
    }
    case Op::Transpose: {
      const IntList& perm = node.ints_attr("perm");
      for (int d = 0; d < m.rank; ++d) m.in_strides[d] = in_strides[perm[d]];
      return std::vector<StridedMap>{m};
    }
    case Op::BroadcastTo:
      return std::vector<StridedMap>{broadcast_map(x, result.shape)};
    case Op::Slice: {
      // As the reference: Python's clamping of start, then start + i * step.
      const IntList& start = node.ints_attr("start");
      IntList step(x.rank(), 1);
      if (node.has_attr("step")) step = node.ints_attr("step");
      for (int d = 0; d < m.rank; ++d) {
        const int64_t dim = x[d];
        int64_t s = start[d] < 0 ? start[d] + dim : start[d];
        s = s < 0 ? 0 : s > dim ? dim : s;
        m.in_base += s * in_strides[d];
        m.in_strides[d] = result.shape[d] > 1 ? in_strides[d] * step[d] : 0;
      }
      return std::vector<StridedMap>{m};
    }
    case Op::Pad: {
      const IntList& low = node.ints_attr("low");
      for (int d = 0; d < m.rank; ++d) {
        m.lo[d] = low[d];
        m.hi[d] = low[d] + x[d];
        m.in_strides[d] = in_strides[d];
      }
      return std::vector<StridedMap>{m};
    }
    case Op::Concat: {
      const int axis = axis_of(node, result.shape.rank());
      const std::vector<int64_t> out_strides = result.shape.strides();
      std::vector<StridedMap> maps;
      int64_t at = 0;
      for (const Type& t : operands) {
        StridedMap part = box(t.shape);
        const std::vector<int64_t> s = t.shape.strides();
        for (int d = 0; d < part.rank; ++d) {
          part.out_strides[d] = out_strides[d];
          part.in_strides[d] = s[d];
        }
        part.out_base = at * out_strides[axis];
        at += t.shape[axis];
        maps.push_back(part);
      }
      return maps;
    }
    default:
      break;
  }
  WEFT_CHECK(false, std::string("plan_strided_copy: not a movement op: ") + std::string(op_name(node.op)));
  return std::vector<StridedMap>{};
}

GatherGeometry plan_gather(const Node& node, const Shape& data, int64_t n) {
  const int axis = axis_of(node, data.rank());
  GatherGeometry g;
  g.dim = data[axis];
  g.n = n;
  for (int d = 0; d < axis; ++d) g.outer *= data[d];
  for (int d = axis + 1; d < data.rank(); ++d) g.inner *= data[d];
  return g;
}

IndexType index_type(DType dtype) {
  switch (dtype) {
    case DType::i32: return kIndexI32;
    case DType::i64: return kIndexI64;
    case DType::u8: return kIndexU8;
    default: break;
  }
  WEFT_CHECK(false, std::string("index_type: not an index dtype: ") + std::string(dtype_name(dtype)));
  return kIndexI64;
}

std::optional<ElementwiseOp> library_elementwise_op(Op op) {
  switch (op) {
    case Op::Pow: return kPow;
    case Op::Exp: return kExp;
    case Op::Log: return kLog;
    case Op::Log1p: return kLog1p;
    case Op::Tanh: return kTanh;
    case Op::Sin: return kSin;
    case Op::Cos: return kCos;
    case Op::Erf: return kErf;
    case Op::Sigmoid: return kSigmoid;
    default: return std::nullopt;
  }
}

ElementwiseOp elementwise_op(Op op) {
  const std::optional<ElementwiseOp> e = library_elementwise_op(op);
  WEFT_CHECK(e.has_value(), std::string("elementwise_op: no CUDA library kernel for ") + std::string(op_name(op)));
  return *e;
}

uint64_t dtype_bits(DType dtype, double value) {
  const Tensor t = Tensor::scalar(dtype, value);
  uint64_t bits = 0;
  std::memcpy(&bits, t.raw_data(), t.bytes());
  return bits;
}

namespace {

// attention's and attention_grad's plan from q, k, v (operands 0-2) and the mask at
// operands[mask_at] when there is one: the one shape logic both kernels share.
StatusOr<AttentionPlan> plan_attention_problem(const Node& node, const std::vector<Type>& operands,
                                               size_t mask_at) {
  const std::string op(op_name(node.op));
  if (operands.size() < 3) return Error{op + ": fewer than three operands"};
  const Type& q = operands[0];
  const int rank = q.shape.rank();
  for (size_t i = 0; i < 3; ++i) {
    if (operands[i].dtype != DType::f32) {
      return Error{op + ": the CUDA attention kernels take f32 only, not " +
                   std::string(dtype_name(operands[i].dtype))};
    }
    if (operands[i].shape.rank() != rank) return Error{op + ": q, k and v of different ranks"};
  }
  if (rank < 2 || rank > kMaxRank) {
    return Error{op + ": rank " + std::to_string(rank) + " is outside the CUDA kernels' 2 to " +
                 std::to_string(kMaxRank)};
  }
  AttentionPlan plan;
  AttentionShape& s = plan.shape;
  for (int i = 0; i < rank - 2; ++i) s.batch *= q.shape[i];
  s.sq = q.shape[rank - 2];
  s.sk = operands[1].shape[rank - 2];
  const int64_t d = q.shape[rank - 1], dv = operands[2].shape[rank - 1];
  if (d < 1 || dv < 1 || d > kAttentionMaxDim || dv > kAttentionMaxDim) {
    return Error{op + ": head dims " + std::to_string(d) + " and " + std::to_string(dv) +
                 " must be 1 to kAttentionMaxDim (" + std::to_string(kAttentionMaxDim) + ")"};
  }
  s.d = static_cast<int>(d);
  s.dv = static_cast<int>(dv);
  if (operands.size() > mask_at) {
    Shape scores = q.shape;
    scores.dims[rank - 1] = s.sk;
    plan.masked = true;
    plan.mask_map = broadcast_map(operands[mask_at].shape, scores);
  }
  plan.scale = static_cast<float>(node.float_attr("scale"));
  plan.causal = node.bool_attr("causal");
  return plan;
}

}  // namespace

std::optional<AttentionPlan> plan_attention(const Node& node, const std::vector<Type>& operands) {
  if (node.op != Op::Attention) return std::nullopt;
  StatusOr<AttentionPlan> plan = plan_attention_problem(node, operands, /*mask_at=*/3);
  if (!plan.ok()) return std::nullopt;
  return *plan;
}

StatusOr<AttentionPlan> plan_attention_grad(const Node& node, const std::vector<Type>& operands) {
  WEFT_CHECK(node.op == Op::AttentionGrad, "plan_attention_grad: not an attention_grad node");
  if (operands.size() < 5) return Error{"attention_grad: fewer than five operands"};
  WEFT_ASSIGN_OR_RETURN(AttentionPlan plan, plan_attention_problem(node, operands, /*mask_at=*/5));
  // y and dy: the forward's result, [..., sq, dv] with q's leading dims, in f32.
  Shape y = operands[0].shape;
  y.dims[y.rank() - 1] = plan.shape.dv;
  for (size_t i : {size_t{3}, size_t{4}}) {
    if (operands[i].dtype != DType::f32 || operands[i].shape != y) {
      return Error{std::string("attention_grad: ") + (i == 3 ? "y" : "dy") + " is " +
                   operands[i].to_string() + ", the kernel takes f32" + y.to_string()};
    }
  }
  return plan;
}

}  // namespace weft::cuda

#include "runtime/cuda/conv_plan.h"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <span>
#include <string>

#include "ir/checked_math.h"
#include "runtime/conv_geometry.h"
#include "runtime/pool_geometry.h"

namespace weft::cuda {
namespace {

Error op_error(const Node& node, const std::string& message) {
  return Error{std::string(op_name(node.op)) + ": " + message, node.loc};
}

std::string types_string(const std::vector<Type>& operands, const Type& result) {
  std::string s;
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + operands[i].to_string();
  return s + " -> " + result.to_string();
}

// One dtype for every operand and the result, one of `dtypes`.
bool same_dtype_of(const std::vector<Type>& operands, const Type& result,
                   std::initializer_list<DType> dtypes) {
  if (std::find(dtypes.begin(), dtypes.end(), result.dtype) == dtypes.end()) return false;
  for (const Type& t : operands) {
    if (t.dtype != result.dtype) return false;
  }
  return true;
}

// f32 or f64, the same for every operand and the result (the pooling kernels).
bool float_types(const std::vector<Type>& operands, const Type& result) {
  return same_dtype_of(operands, result, {DType::f32, DType::f64});
}

// The product of dims, when it fits int64.
std::optional<int64_t> extent(const Shape& s) {
  Checked n = 1;
  for (int64_t d : s.dims) n = n * d;
  return n.get();
}

// "[a,b,c]" (or "axbxc" with `sep` "x") of the first n entries of d.
std::string join(const int* d, int n, const char* open, const char* sep, const char* close) {
  std::string s = open;
  for (int i = 0; i < n; ++i) s += (i ? sep : "") + std::to_string(d[i]);
  return s + close;
}

}  // namespace

std::string ConvPlan::describe() const {
  const char* name = call == ConvCall::forward         ? "forward"
                     : call == ConvCall::backward_data ? "backward_data"
                                                       : "backward_filter";
  const int n = rank - 2;
  std::string s = std::string(name) + " " + std::string(dtype_name(dtype)) + " x" +
                  join(x, rank, "[", ",", "]") + " w" + join(w, rank, "[", ",", "]") + " y" +
                  join(y, rank, "[", ",", "]") + " stride " + join(stride, n, "", "x", "") +
                  " pad " + join(pad, n, "", "x", "") + " dilation " +
                  join(dilation, n, "", "x", "") + " groups " + std::to_string(groups);
  if (zero_fill) s += " (empty: zeros)";
  if (math == ContractionMath::tensor_f32) s += " (tensor cores, f32 accumulation)";
  if (math == ContractionMath::tf32) s += " (tf32 tensor cores)";
  return s;
}

StatusOr<ConvPlan> plan_convolution(const Node& node, const std::vector<Type>& operands,
                                    const Type& result) {
  const std::string types = types_string(operands, result);
  if (operands.size() != 2) return op_error(node, "expects two operands, got " + types);
  if (!same_dtype_of(operands, result, {DType::f32, DType::f64, DType::f16, DType::bf16})) {
    return op_error(node, "cuDNN runs f32, f64, f16 and bf16 convolutions of one dtype, not " +
                              types);
  }
  ConvPlan plan;
  plan.dtype = result.dtype;
  plan.math = contraction_math(plan.dtype, /*tf32=*/false);
  Shape x, w, y;
  switch (node.op) {
    case Op::Conv:
      plan.call = ConvCall::forward;
      x = operands[0].shape, w = operands[1].shape, y = result.shape;
      plan.x_at = ConvBuffer::operand0, plan.w_at = ConvBuffer::operand1,
      plan.y_at = ConvBuffer::result;
      break;
    case Op::ConvBackwardInput:
      plan.call = ConvCall::backward_data;
      x = Shape(node.ints_attr("input_shape")), w = operands[1].shape, y = operands[0].shape;
      plan.y_at = ConvBuffer::operand0, plan.w_at = ConvBuffer::operand1,
      plan.x_at = ConvBuffer::result;
      if (result.shape != x) return op_error(node, "result should have input_shape: " + types);
      break;
    case Op::ConvBackwardWeight:
      plan.call = ConvCall::backward_filter;
      x = operands[0].shape, w = Shape(node.ints_attr("weight_shape")), y = operands[1].shape;
      plan.x_at = ConvBuffer::operand0, plan.y_at = ConvBuffer::operand1,
      plan.w_at = ConvBuffer::result;
      if (result.shape != w) return op_error(node, "result should have weight_shape: " + types);
      break;
    default:
      return op_error(node, "is not a convolution");
  }
  StatusOr<ConvGeometry> geometry = conv_geometry(node, x, w);
  if (!geometry.ok()) return Error{geometry.error().message + ": " + types, node.loc};
  const ConvGeometry& g = *geometry;
  if (y != g.y_shape()) {
    return op_error(node, "output gradient or result " + y.to_string() +
                              " does not match the convolution of " + x.to_string() + " by " +
                              w.to_string());
  }
  bool empty = false;
  for (const Shape* s : {&x, &w, &y}) {
    const std::optional<int64_t> n = extent(*s);
    if (!n || *n > INT_MAX) {
      return op_error(node, s->to_string() + " is beyond cuDNN's int: " + types);
    }
    if (*n == 0) empty = true;
  }
  // The canonical [D, H, W] geometry as cuDNN's 4-D (D = 1) or 5-D tensors.
  plan.rank = g.spatial == 3 ? 5 : 4;
  const int64_t xs[] = {g.n, g.c, g.d, g.h, g.w}, ws[] = {g.o, g.cg(), g.kd, g.kh, g.kw},
                ys[] = {g.n, g.o, g.od, g.oh, g.ow};
  const int64_t strides[] = {g.sd, g.sh, g.sw}, pads[] = {g.pd, g.ph, g.pw},
                dilations[] = {g.dd, g.dh, g.dw};
  const int skip = 5 - plan.rank;  // Leave D out of a 4-D plan.
  for (int i = 0; i < plan.rank; ++i) {
    const int from = i < 2 ? i : i + skip;
    plan.x[i] = static_cast<int>(xs[from]);
    plan.w[i] = static_cast<int>(ws[from]);
    plan.y[i] = static_cast<int>(ys[from]);
  }
  for (int a = 0; a < plan.rank - 2; ++a) {
    const int64_t st = strides[a + skip], pa = pads[a + skip], di = dilations[a + skip];
    if (st > INT_MAX || pa > INT_MAX || di > INT_MAX) {
      return op_error(node, "stride, dilation or padding out of cuDNN's range: " + types);
    }
    plan.stride[a] = static_cast<int>(st);
    plan.pad[a] = static_cast<int>(pa);
    plan.dilation[a] = static_cast<int>(di);
  }
  if (g.groups > INT_MAX) return op_error(node, "groups beyond cuDNN's int: " + types);
  plan.groups = static_cast<int>(g.groups);
  plan.zero_fill = empty;
  return plan;
}

int choose_conv_algorithm(const std::vector<ConvAlgorithm>& offered, size_t limit,
                          ConvPolicy policy, bool tensor_ops) {
  // Classes in order of preference; within one, cuDNN's order (fastest first).
  struct Want {
    bool deterministic, exact, within_limit;
  };
  constexpr Want kExact[] = {
      {true, true, true},  {false, true, true},  {true, false, true},  {false, false, true},
      {true, true, false}, {false, true, false}, {true, false, false}, {false, false, false},
  };
  constexpr Want kDeterministic[] = {
      {true, false, true}, {false, false, true}, {true, false, false}, {false, false, false}};
  constexpr Want kFastest[] = {{false, false, true}, {false, false, false}};
  const std::span<const Want> order = policy == ConvPolicy::fastest ? std::span<const Want>(kFastest)
                                      : policy == ConvPolicy::deterministic
                                          ? std::span<const Want>(kDeterministic)
                                          : std::span<const Want>(kExact);
  for (const Want& want : order) {
    for (size_t i = 0; i < offered.size(); ++i) {
      const ConvAlgorithm& a = offered[i];
      if (!a.supported || (a.tensor_ops && !tensor_ops)) continue;
      if (want.deterministic && !a.deterministic) continue;
      if (want.exact && a.approximate) continue;
      if (want.within_limit && a.workspace > limit) continue;
      return static_cast<int>(i);
    }
  }
  return -1;
}

StatusOr<PoolWindow> plan_pooling(const Node& node, const std::vector<Type>& operands,
                                  const Type& result) {
  const std::string types = types_string(operands, result);
  if (!float_types(operands, result)) {
    return op_error(node, "the pooling kernels run f32 and f64 only, not " + types);
  }
  const size_t arity = node.op == Op::MaxPool2dBackward || node.op == Op::MaxPool2dSelect ? 2 : 1;
  if (operands.size() != arity) return op_error(node, "wrong number of operands: " + types);
  // The pooled input: the first operand, or avg_pool2d_backward's input_shape.
  const Shape x = node.op == Op::AvgPool2dBackward ? Shape(node.ints_attr("input_shape"))
                                                   : operands[0].shape;
  // The window is runtime/pool_geometry.h's (the reference's and the CPU's too); pool.cu
  // takes it as its plain PoolWindow.
  WEFT_ASSIGN_OR_RETURN(PoolGeometry geo, pool_geometry(node, x));
  PoolWindow g;
  g.planes = geo.planes, g.h = geo.h, g.w = geo.w;
  g.kh = geo.kh, g.kw = geo.kw, g.sh = geo.sh, g.sw = geo.sw, g.ph = geo.ph, g.pw = geo.pw;
  g.oh = geo.oh, g.ow = geo.ow;
  const Shape pooled = pooled_shape(x, geo);
  bool ok = false;
  switch (node.op) {
    case Op::MaxPool2d: case Op::AvgPool2d:
      ok = result.shape == pooled;
      break;
    case Op::MaxPool2dBackward:
      ok = operands[1].shape == pooled && result.shape == x;
      break;
    case Op::AvgPool2dBackward:
      ok = operands[0].shape == pooled && result.shape == x;
      break;
    case Op::MaxPool2dSelect:
      ok = operands[1].shape == x && result.shape == pooled;
      break;
    default:
      return op_error(node, "is not a pooling");
  }
  if (!ok) return op_error(node, "types do not match pooling " + x.to_string() + ": " + types);
  return g;
}

PoolOp pool_op(Op op) {
  switch (op) {
    case Op::MaxPool2d: return kMaxPool;
    case Op::AvgPool2d: return kAvgPool;
    case Op::MaxPool2dBackward: return kMaxPoolBackward;
    case Op::AvgPool2dBackward: return kAvgPoolBackward;
    case Op::MaxPool2dSelect: return kMaxPoolSelect;
    default: break;
  }
  WEFT_CHECK(false, "pool_op: " + std::string(op_name(op)) + " is not a pooling");
  return kMaxPool;
}

}  // namespace weft::cuda

#include "runtime/cuda/library.h"

#include "ir/kernel_support.h"
#include "runtime/ab_switch.h"
#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/index_maps.h"
#include "runtime/cuda/library_plan.h"
#include "runtime/cuda/plan.h"

namespace weft::cuda {

const char* library_kind_name(LibraryKind kind) {
  switch (kind) {
    case LibraryKind::matmul: return "matmul";
    case LibraryKind::all_reduce: return "all_reduce";
    case LibraryKind::constant: return "constant";
    case LibraryKind::strided_copy: return "strided_copy";
    case LibraryKind::gather: return "gather";
    case LibraryKind::scatter_add: return "scatter_add";
    case LibraryKind::one_hot: return "one_hot";
    case LibraryKind::cross_entropy: return "cross_entropy";
    case LibraryKind::mse: return "mse";
    case LibraryKind::elementwise: return "elementwise";
    case LibraryKind::random: return "random";
    case LibraryKind::convolution: return "convolution";
    case LibraryKind::pooling: return "pooling";
    case LibraryKind::attention: return "attention";
    case LibraryKind::attention_grad: return "attention_grad";
    case LibraryKind::host: return "host";
  }
  return "?";
}

namespace {

bool is_f32_or_f64(DType d) { return d == DType::f32 || d == DType::f64; }
bool is_index(DType d) { return d == DType::i32 || d == DType::i64 || d == DType::u8; }
bool all_f32_or_f64(const std::vector<Type>& types, const Type& result) {
  for (const Type& t : types) {
    if (!is_f32_or_f64(t.dtype) || t.dtype != result.dtype) return false;
  }
  return is_f32_or_f64(result.dtype);
}

// What the generated kernels lack (ir/kernel_support.h) and the library has a kernel for:
// pow in f32 and f64, and transcendental math in f64.
bool library_elementwise(const Node& node, const std::vector<Type>& operands, const Type& result) {
  if (!all_f32_or_f64(operands, result)) return false;
  return generated_code_gap(node.op, operands, result.dtype, CodeTarget::gpu).has_value() &&
         library_elementwise_op(node.op).has_value();
}

}  // namespace

LibraryKind library_kind(const Node& node, const std::vector<Type>& operands, const Type& result) {
  if (node.op == Op::AllReduce) return LibraryKind::all_reduce;
  if (operands.empty() && node.info().category == OpCategory::Creation) {
    return LibraryKind::constant;
  }
  for (const Type& t : operands) {
    if (t.shape.rank() > kMaxRank) return LibraryKind::host;
  }
  if (result.shape.rank() > kMaxRank) return LibraryKind::host;
  switch (node.op) {
    case Op::Matmul: {
      // A contraction invocation's epilogue operands follow the GEMM's two (host_invocations
      // plans the first two alone): attention_grad's dq, (dS·k)·scale, is one.
      if (operands.size() < 2) return LibraryKind::host;
      MatmulPlan plan;
      StatusOr<bool> planned = plan_matmul(node, operands[0], operands[1], plan);
      return planned.ok() && *planned ? LibraryKind::matmul : LibraryKind::host;
    }
    case Op::Reshape: case Op::Transpose: case Op::BroadcastTo: case Op::Slice: case Op::Pad:
    case Op::Concat:
      return LibraryKind::strided_copy;
    case Op::Gather:
      return is_index(operands[1].dtype) ? LibraryKind::gather : LibraryKind::host;
    case Op::ScatterAdd:
      return is_index(operands[1].dtype) &&
                     (is_f32_or_f64(result.dtype) || result.dtype == DType::i32 ||
                      result.dtype == DType::i64)
                 ? LibraryKind::scatter_add
                 : LibraryKind::host;
    case Op::OneHot:
      return is_index(operands[0].dtype) ? LibraryKind::one_hot : LibraryKind::host;
    case Op::CrossEntropy:
      return is_f32_or_f64(operands[0].dtype) && is_index(operands[1].dtype)
                 ? LibraryKind::cross_entropy
                 : LibraryKind::host;
    case Op::Mse:
      return all_f32_or_f64(operands, result) ? LibraryKind::mse : LibraryKind::host;
    case Op::RandomUniform:
      return result.dtype == DType::f32 || result.dtype == DType::f64 ? LibraryKind::random
                                                                     : LibraryKind::host;
    case Op::RandomBernoulli:
      return LibraryKind::random;
    case Op::Conv: case Op::ConvBackwardInput: case Op::ConvBackwardWeight:
      return plan_convolution(node, operands, result).ok() ? LibraryKind::convolution
                                                           : LibraryKind::host;
    case Op::Attention:
      return plan_attention(node, operands) ? LibraryKind::attention : LibraryKind::host;
    case Op::AttentionGrad:
      return !switched_off(kAttentionGradSwitch) && plan_attention_grad(node, operands).ok()
                 ? LibraryKind::attention_grad
                 : LibraryKind::host;
    case Op::MaxPool2d: case Op::AvgPool2d: case Op::MaxPool2dBackward:
    case Op::AvgPool2dBackward: case Op::MaxPool2dSelect:
      return plan_pooling(node, operands, result).ok() ? LibraryKind::pooling
                                                       : LibraryKind::host;
    default:
      break;
  }
  if (library_elementwise(node, operands, result)) return LibraryKind::elementwise;
  return LibraryKind::host;
}

namespace {

// The reason a library invocation of an op of `category` runs on the host, given that
// library_kind said `host` (library_gap).
std::string_view category_gap(const Node& node, const std::vector<Type>& operands,
                              const Type& result) {
  switch (node.info().category) {
    case OpCategory::Reduction:
      if (node.op == Op::Argmax) {
        return "no CUDA argmax kernel: the generated reductions compute sum, mean, max and "
               "min, and the library has none";
      }
      return "reductions run as generated kernels (codegen gpu_supports), which compute "
             "float dtypes only; the library has no reduction kernel";
    case OpCategory::Contraction:
      if (node.op == Op::Matmul) {
        return "cuBLAS does not plan this matmul (plan_matmul: f32, f64, f16 or bf16 operands "
               "of one dtype, no scalar or transposed 1-D operand, dimensions within int)";
      }
      if (node.op == Op::Conv || node.op == Op::ConvBackwardInput ||
          node.op == Op::ConvBackwardWeight) {
        return "cuDNN does not plan this convolution (plan_convolution: f32, f64, f16 or "
               "bf16, 1-3 spatial dims)";
      }
      return "the pooling kernels take float dtypes only (plan_pooling)";
    case OpCategory::Composite:
      // The op table's CUDA column (ir/kernel_support.h), then what a kernel it states
      // refuses.
      if (auto gap = library_composite_gap(node.op, operands[0].dtype, CodeTarget::gpu)) {
        return *gap;
      }
      if (node.op == Op::Attention) {
        return "the attention kernel takes head dims up to 128 (plan_attention); the CUDA "
               "lowering decomposes the others";
      }
      if (node.op == Op::AttentionGrad) {
        if (switched_off(kAttentionGradSwitch)) {
          return "WEFT_ATTENTION_GRAD_KERNEL=0 turns the attention_grad kernel off; the CUDA "
                 "lowering decomposes attention_grad";
        }
        return "the attention_grad kernel takes head dims up to 128 and q, k, v, y, dy of one "
               "rank (plan_attention_grad says which); the CUDA lowering decomposes the "
               "others";
      }
      return "the loss kernels take i32, i64 or u8 labels and operands of one dtype";
    case OpCategory::Creation:
      return "random_uniform draws f32 and f64 only on the device";
    case OpCategory::Elementwise:
      if (auto gap = generated_code_gap(node.op, operands, result.dtype, CodeTarget::gpu)) {
        return *gap;
      }
      return "the generated code runs it fused; alone the library has no kernel for it";
    default: break;
  }
  if (node.op == Op::Gather || node.op == Op::OneHot) {
    return "the index operand must be i32, i64 or u8";
  }
  if (node.op == Op::ScatterAdd) {
    return "scatter_add's atomic adds take f32, f64, i32 and i64 (and i32, i64 or u8 "
           "indices)";
  }
  return "no CUDA library kernel for this op";
}

}  // namespace

std::optional<std::string_view> library_gap(const Node& node, const std::vector<Type>& operands,
                                            const Type& result) {
  if (library_kind(node, operands, result) != LibraryKind::host) return std::nullopt;
  for (const Type& t : operands) {
    if (t.shape.rank() > kMaxRank) return "a rank above kMaxRank (index_maps.h)";
  }
  if (result.shape.rank() > kMaxRank) return "a rank above kMaxRank (index_maps.h)";
  return category_gap(node, operands, result);
}

std::vector<int> host_invocations(const Program& program) {
  std::vector<int> out;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Invocation& inv = program.code[i];
    std::vector<Type> types;
    for (const BufferRef& r : inv.operands) types.push_back(r.type);
    bool host = false;
    if (inv.kind == Invocation::Kind::library) {
      host = library_kind(inv.node, types, inv.results[0].type) == LibraryKind::host;
    } else if (inv.kind == Invocation::Kind::contraction) {
      MatmulPlan plan;
      StatusOr<bool> planned = plan_matmul(inv.node, types[0], types[1], plan);
      host = !planned.ok() || !*planned;
    }
    if (host) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string describe_host_invocation(const Invocation& inv) {
  std::string s(op_name(inv.node.op));
  if (inv.node.loc.known()) s += " at " + inv.node.loc.to_string();
  s += " (%" + inv.label + "): ";
  for (size_t i = 0; i < inv.operands.size(); ++i) {
    s += (i ? ", " : "") + inv.operands[i].type.to_string();
  }
  return s + " -> " + inv.results[0].type.to_string();
}

Status check_device_only(const Program& program) {
  // The root's invocations, then each loop body's (bodies share the root's kernels).
  std::vector<const Invocation*> host;
  const auto collect = [&](const Program& p) {
    for (int i : host_invocations(p)) host.push_back(&p.code[static_cast<size_t>(i)]);
  };
  collect(program);
  for (const Program& body : program.bodies) collect(body);
  if (host.empty()) return Status::ok_status();
  std::string message = "program @" + program.name + " would run " + std::to_string(host.size()) +
                        (host.size() == 1 ? " op" : " ops") +
                        " on the host (no CUDA kernel for it):";
  for (const Invocation* inv : host) message += "\n  " + describe_host_invocation(*inv);
  message += "\nset allow_host_fallback to run them on the reference interpreter on the host "
             "(a debugging path: a synchronize and two copies each)";
  return Error{message, host[0]->node.loc};
}

}  // namespace weft::cuda

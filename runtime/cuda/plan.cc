#include "runtime/cuda/plan.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <sstream>
#include <utility>

#include "ir/text_util.h"
#include "runtime/matmul_geometry.h"

namespace weft::cuda {
namespace {

Error matmul_error(const Node& node, const std::string& message) {
  return Error{std::string(op_name(node.op)) + ": " + message, node.loc};
}


// The step s when entries[e] == e * s for every e (one strided-batched operand).
std::optional<int64_t> constant_step(const std::vector<int64_t>& entries) {
  const int64_t step = entries.size() > 1 ? entries[1] : 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    if (entries[e] != static_cast<int64_t>(e) * step) return std::nullopt;
  }
  return step;
}

bool fits_int(const CublasGemm& g) {
  for (int64_t v : {g.m, g.n, g.k, g.ld_first, g.ld_second, g.ldc, g.count}) {
    if (v > INT_MAX) return false;
  }
  return true;
}


/// `a` and `b` as matmul_geometry takes them: f16/bf16 operands (of one dtype) planned as
/// f32 ones of the same shapes, which the geometry is about; nullopt when the dtypes
/// are halves that differ or a half beside another dtype.
std::optional<std::pair<Type, Type>> geometry_types(const Type& a, const Type& b) {
  if (!is_half(a.dtype) && !is_half(b.dtype)) return std::pair{a, b};
  if (a.dtype != b.dtype) return std::nullopt;
  return std::pair{Type{DType::f32, a.shape}, Type{DType::f32, b.shape}};
}

}  // namespace

ContractionMath contraction_math(DType dtype, bool tf32) {
  if (is_half(dtype)) return ContractionMath::tensor_f32;
  return tf32 && dtype == DType::f32 ? ContractionMath::tf32 : ContractionMath::pedantic;
}

std::string MatmulPlan::describe(DType dtype) const {
  std::string out = dtype == DType::f64    ? "d"
                    : dtype == DType::f16  ? "h"
                    : dtype == DType::bf16 ? "bf16"
                                           : "s";
  const bool strided = calls.size() == 1 && calls[0].count > 1;
  out += strided ? "gemm_strided_batched " : "gemm ";
  out += std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (batch > 1) out += " batch " + std::to_string(batch);
  if (calls.size() > 1) out += " in " + std::to_string(calls.size()) + " calls";
  if (zero_fill) out += " (k = 0: zeros)";
  if (math == ContractionMath::tensor_f32) out += " (tensor cores, f32 accumulation)";
  if (math == ContractionMath::tf32) out += " (tf32 tensor cores)";
  return out;
}

StatusOr<bool> plan_matmul(const Node& node, const Type& a_type, const Type& b_type,
                           MatmulPlan& plan) {
  const std::optional<std::pair<Type, Type>> types = geometry_types(a_type, b_type);
  if (!types) return false;
  StatusOr<std::optional<MatmulGeometry>> geometry =
      matmul_geometry(node, types->first, types->second);
  if (!geometry.ok()) {
    // The message names the operands' own types, not the f32 ones planned for halves.
    std::string message = geometry.error().message;
    for (const auto& [planned, own] : {std::pair{types->first, a_type}, std::pair{types->second, b_type}}) {
      const size_t at = message.find(planned.to_string());
      if (at != std::string::npos) message.replace(at, planned.to_string().size(), own.to_string());
    }
    return matmul_error(node, message);
  }
  if (!geometry->has_value()) return false;
  const MatmulGeometry& geo = **geometry;
  const bool trans_a = geo.trans_a, trans_b = geo.trans_b;
  const int64_t m = geo.m, k = geo.k, n = geo.n;
  const Shape& batch = geo.batch;
  plan = MatmulPlan{};
  plan.math = contraction_math(a_type.dtype, /*tf32=*/false);
  plan.m = m;
  plan.n = n;
  plan.k = k;
  plan.batch = batch.numel();
  if (plan.batch == 0 || m == 0 || n == 0) return true;  // C has no elements
  if (k == 0) {
    plan.zero_fill = true;
    return true;
  }

  // One GEMM C = op(A)·op(B), row-major, as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
  CublasGemm g;
  g.trans_first = trans_b;
  g.trans_second = trans_a;
  g.m = n;
  g.n = m;
  g.k = k;
  g.ld_first = trans_b ? k : n;   // B is stored [n, k] or [k, n]
  g.ld_second = trans_a ? m : k;  // A is stored [k, m] or [m, k]
  g.ldc = n;

  const std::vector<int64_t>& ea = geo.a_entries;
  const std::vector<int64_t>& eb = geo.b_entries;
  const std::optional<int64_t> sa = constant_step(ea), sb = constant_step(eb);
  if (sb && *sb == 0 && sa && *sa == 1 && !trans_a) {
    // [..., m, k] x [k, n]: the batch folds into the rows of one GEMM (cuBLAS's n).
    g.n = plan.batch * m;
  } else if (sa && sb) {
    g.count = plan.batch;
    g.stride_first = *sb * k * n;
    g.stride_second = *sa * m * k;
    g.stride_c = m * n;
  } else {
    if (!fits_int(g)) return false;
    for (int64_t e = 0; e < plan.batch; ++e) {
      CublasGemm one = g;
      one.first_offset = eb[e] * k * n;
      one.second_offset = ea[e] * m * k;
      one.c_offset = e * m * n;
      plan.calls.push_back(one);
    }
    return true;
  }
  if (!fits_int(g)) return false;
  plan.calls.push_back(g);
  return true;
}


std::optional<double> gemm_flops(const Invocation& inv) {
  const bool gemm = inv.node.op == Op::Matmul && inv.operands.size() >= 2 &&
                    (inv.kind == Invocation::Kind::library ||
                     inv.kind == Invocation::Kind::contraction);
  if (!gemm) return std::nullopt;
  MatmulPlan plan;
  StatusOr<bool> planned = plan_matmul(inv.node, inv.operands[0].type, inv.operands[1].type, plan);
  if (!planned.ok() || !*planned) return std::nullopt;
  return plan.flops();
}

}  // namespace weft::cuda

// The iteration space of a kernel body and which nodes the emitter implements
// (declared in emit_elementwise.h).

#include <optional>

#include "codegen/emit_elementwise.h"

namespace weft::codegen {
namespace {

/// An operand's element stride along each output dimension (0 where it is broadcast).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.rank(), 0);
  const std::vector<int64_t> contiguous = in.strides();
  for (int d = 0; d < out.rank(); ++d) {
    const int id = d - (out.rank() - in.rank());
    if (id >= 0 && in[id] != 1) st[d] = contiguous[id];
  }
  return st;
}

bool is_int_like(DType d) { return is_integer(d) || d == DType::boolean; }

}  // namespace

int64_t CollapsedSpace::rows() const {
  int64_t r = 1;
  for (size_t j = 0; j + 1 < dims.size(); ++j) r *= dims[j];
  return r;
}

CollapsedSpace collapse_space(const Graph& body) {
  const Shape& out = body.type(body.outputs()[0]).shape;
  std::vector<std::vector<int64_t>> full;
  for (const Input& in : body.inputs()) full.push_back(broadcast_strides(body.type(in.value).shape, out));
  CollapsedSpace s;
  s.strides.resize(full.size());
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !s.dims.empty();
    for (size_t k = 0; k < full.size() && merge; ++k) {
      merge = s.strides[k].back() == full[k][d] * out[d];
    }
    if (merge) {
      s.dims.back() *= out[d];
      for (size_t k = 0; k < full.size(); ++k) s.strides[k].back() = full[k][d];
    } else {
      s.dims.push_back(out[d]);
      for (size_t k = 0; k < full.size(); ++k) s.strides[k].push_back(full[k][d]);
    }
  }
  if (s.dims.empty()) {  // Rank 0, or every dimension is 1.
    s.dims.push_back(1);
    for (auto& st : s.strides) st.push_back(0);
  }
  // A long row (an all-contiguous body collapses to one) is cut into rows of `c`
  // elements, c a divisor of it, so the runtime can split the rows over its threads.
  // Each operand's row stride is 0 or 1, so it becomes (0 or c, then 0 or 1).
  const int64_t n = s.dims.back();
  constexpr int64_t kLongRow = 16384;
  if (n > kLongRow) {
    int64_t c = 0;
    for (int64_t d = 4096; d >= 256 && c == 0; d -= 16) {
      if (n % d == 0) c = d;
    }
    for (int64_t d = 4096; d >= 256 && c == 0; --d) {
      if (n % d == 0) c = d;
    }
    if (c > 0) {
      s.dims.back() = n / c;
      s.dims.push_back(c);
      for (auto& st : s.strides) {
        const int64_t inner = st.back();
        st.back() = inner * c;
        st.push_back(inner);
      }
    }
  }
  return s;
}

bool emit_supports(const Graph& g, const Node& node) {
  if (node.info().category != OpCategory::Elementwise || node.results.size() != 1) return false;
  auto known = [&](ValueId v) { return g.value(v).type.has_value(); };
  if (!known(node.result())) return false;
  for (ValueId o : node.operands) {
    if (!known(o)) return false;
  }
  auto ok_dtype = [](DType d) { return d != DType::f16 && d != DType::bf16; };
  const DType rd = g.type(node.result()).dtype;
  if (!ok_dtype(rd)) return false;
  for (ValueId o : node.operands) {
    if (!ok_dtype(g.type(o).dtype)) return false;
  }
  const DType d = g.type(node.operands[0]).dtype;
  const DType last = g.type(node.operands.back()).dtype;
  const bool fl = is_floating(d), num = fl || is_integer(d);
  switch (node.op) {
    case Op::Neg: case Op::Abs: case Op::Relu: case Op::Sign: case Op::Floor:
      return num && rd == d;
    case Op::Exp: case Op::Log: case Op::Log1p: case Op::Sqrt: case Op::Rsqrt: case Op::Tanh:
    case Op::Sigmoid: case Op::Sin: case Op::Cos: case Op::Erf:
      return fl && rd == d;
    case Op::Gelu: {
      const std::string& mode = node.str_attr("approximate");
      return fl && rd == d && (mode == "none" || mode == "tanh");
    }
    case Op::Not: return d == DType::boolean && rd == d;
    case Op::Cast: return true;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Maximum: case Op::Minimum:
      return num && last == d && rd == d;
    case Op::Div: case Op::Pow:  // Integer div and pow need runtime errors: not here.
      return fl && last == d && rd == d;
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return is_int_like(d) || fl ? last == d && rd == DType::boolean : false;
    case Op::And: case Op::Or:
      return d == DType::boolean && last == d && rd == d;
    case Op::Select:
      return d == DType::boolean && g.type(node.operands[1]).dtype == rd && last == rd;
    default: return false;
  }
}

}  // namespace weft::codegen

// The iteration space of a kernel body and which nodes the emitter implements
// (declared in emit_elementwise.h).

#include <algorithm>
#include <optional>
#include <utility>

#include "codegen/emit_elementwise.h"
#include "ir/shape_rules.h"

namespace weft::codegen {

namespace {
int count_reductions(const Graph& body) {
  int n = 0;
  for (const Node& node : body.nodes()) n += node.info().category == OpCategory::Reduction;
  return n;
}
}  // namespace

const Node* body_reduction(const Graph& body) {
  if (body.outputs().size() != 1) return nullptr;
  const int p = body.value(body.outputs()[0]).node;
  if (p < 0 || body.node(p).info().category != OpCategory::Reduction) return nullptr;
  return count_reductions(body) == 1 ? &body.node(p) : nullptr;
}

bool is_row_body(const Graph& body) {
  return body_reduction(body) == nullptr && count_reductions(body) > 0;
}

const Node* first_reduction(const Graph& body) {
  for (const Node& node : body.nodes()) {
    if (node.info().category == OpCategory::Reduction) return &node;
  }
  return nullptr;
}

int body_width(const Graph& body) {
  for (ValueId v = 0; v < body.num_values(); ++v) {
    if (body.value(v).type && dtype_size(body.type(v).dtype) == 8) return 8;
  }
  return 16;
}

int64_t ReductionSpace::reduced_size() const {
  int64_t n = 1;
  for (size_t j = 0; j < reduced.size(); ++j) n *= reduced[j] ? space.dims[j] : 1;
  return n;
}

int64_t ReductionSpace::rows() const {
  int64_t r = 1;
  for (size_t j = 0; j + 1 < reduced.size(); ++j) r *= reduced[j] ? 1 : space.dims[j];
  if (!column()) return r;
  const int64_t n = space.dims.back();
  return r * (n / width + n % width);
}

int64_t ReductionSpace::row_length() const { return reduced_size() * (column() ? width : 1); }

ReductionSpace collapse_reduction_space(const Graph& body, FusedKind kind) {
  const Node& red = kind == FusedKind::row ? *first_reduction(body) : *body_reduction(body);
  const Shape& in = body.type(red.operands[0]).shape;
  std::vector<bool> mask(in.rank(), !red.has_attr("axes"));
  if (red.has_attr("axes")) {
    for (int64_t a : red.ints_attr("axes")) mask[*normalize_axis(a, in.rank())] = true;
  }
  ReductionSpace r;
  r.space = merge_dims(body, in, mask, &r.reduced);
  if (r.space.dims.empty() || !std::count(r.reduced.begin(), r.reduced.end(), true)) {
    r.space.dims.push_back(1);  // Nothing left to reduce: a reduced dim of size 1.
    r.reduced.push_back(true);
    for (auto& st : r.space.strides) st.push_back(0);
  }
  r.width = body_width(body);
  return r;
}

bool emit_supports(const Graph& g, const Node& node) {
  if (node.info().category == OpCategory::Reduction) {
    // sum, mean, max, min (argmax has an i64 result): float in, the same float out, in a
    // dtype the table (generated_reduction_gap) says the CPU generates.
    if (node.results.size() != 1 || node.operands.size() != 1) return false;
    if (!g.value(node.result()).type || !g.value(node.operands[0]).type) return false;
    const Type& in = g.type(node.operands[0]);
    const DType d = in.dtype;
    if (g.type(node.result()).dtype != d || generated_reduction_gap(d, CodeTarget::cpu)) return false;
    switch (node.op) {
      case Op::Sum: case Op::Mean: return true;
      case Op::Max: case Op::Min: return in.shape.numel() > 0;  // Empty: the reference's error.
      default: return false;
    }
  }
  if (node.info().category != OpCategory::Elementwise || node.results.size() != 1) return false;
  auto known = [&](ValueId v) { return g.value(v).type.has_value(); };
  if (!known(node.result())) return false;
  for (ValueId o : node.operands) {
    if (!known(o)) return false;
  }
  // Only a well-typed node (the shape rule's verdict on its operands and result): the
  // table's facts are about those.
  std::vector<Type> operands;
  for (ValueId o : node.operands) operands.push_back(g.type(o));
  StatusOr<Type> typed = infer_node_type(node, operands);
  if (!typed.ok() || *typed != g.type(node.result())) return false;
  return !elementwise_gap(g, node, CodeTarget::cpu).has_value();
}

std::optional<std::string_view> elementwise_gap(const Graph& g, const Node& node,
                                                CodeTarget target) {
  std::vector<Type> operands;
  for (ValueId o : node.operands) operands.push_back(g.type(o));
  return generated_code_gap(node.op, operands, g.type(node.result()).dtype, target);
}

}  // namespace weft::codegen

// A loop's const gradient terms moved after the loop: see scan_moved_terms.h.

#include "autodiff/scan_moved_terms.h"

#include <utility>
#include <variant>

namespace weft::grad_rules {
namespace {

/// Term `v` of const `constant`'s gradient as a MovedTerm, or nullopt where it is not a
/// product of two per-iteration values or a reduction of one under reshapes and transposes.
std::optional<MovedTerm> movable_term(const BodyGradient& body, const std::vector<bool>& per_iteration,
                                      int constant, ValueId v) {
  const Graph& grad = body.graph;
  MovedTerm m{constant, {}, nullptr, {}, {}, {}};
  ValueId c = v;
  for (const Node* p = body.backward_node(c); p && (p->op == Op::Reshape || p->op == Op::Transpose);
       p = body.backward_node(c)) {
    m.peeled.push_back(p);
    c = p->operands[0];
  }
  const Node* core = body.backward_node(c);
  const bool product = core && core->op == Op::Matmul && !core->bool_attr("transpose_a") &&
                       !core->bool_attr("transpose_b") && grad.type(core->operands[0]).shape.rank() == 2 &&
                       grad.type(core->operands[1]).shape.rank() == 2 &&
                       per_iteration[core->operands[0]] && per_iteration[core->operands[1]];
  const bool reduction = core && core->op == Op::Sum && per_iteration[core->operands[0]];
  if (!product && !reduction) return std::nullopt;
  m.core = core;
  for (ValueId o : core->operands) {
    const Node* t = body.backward_node(o);
    const bool flip = product && t && t->op == Op::Transpose && t->ints_attr("perm") == IntList{1, 0};
    m.operands.push_back(flip ? t->operands[0] : o);
    m.transposed.push_back(flip);
  }
  return m;
}

/// A's stacked slots side by side along the contracted axis: A_t [m, k] stacked [T, m, k]
/// -> [m, T·k]. A transposed operand is stacked untransposed: A_t = P_tᵀ, P stacked
/// [T, k, m] is [T·k, m], transposed.
ValueId slots_as_lhs(GradBuilder& outer, ValueId stacked, bool transposed) {
  const Shape s = outer.shape(stacked);
  if (transposed) {
    return outer.op(Op::Transpose, {outer.op(Op::Reshape, {stacked}, {{"shape", IntList{s[0] * s[1], s[2]}}})},
                    {{"perm", IntList{1, 0}}});
  }
  return outer.op(Op::Reshape, {outer.op(Op::Transpose, {stacked}, {{"perm", IntList{1, 0, 2}}})},
                  {{"shape", IntList{s[1], s[0] * s[2]}}});
}

/// B's stacked slots one above the other along the contracted axis: B_t [k, n] stacked
/// [T, k, n] -> [T·k, n]. Transposed: B_t = Q_tᵀ, Q stacked [T, n, k] is [n, T·k], transposed.
ValueId slots_as_rhs(GradBuilder& outer, ValueId stacked, bool transposed) {
  const Shape s = outer.shape(stacked);
  if (transposed) {
    return outer.op(Op::Transpose,
                    {outer.op(Op::Reshape, {outer.op(Op::Transpose, {stacked}, {{"perm", IntList{1, 0, 2}}})},
                              {{"shape", IntList{s[1], s[0] * s[2]}}})},
                    {{"perm", IntList{1, 0}}});
  }
  return outer.op(Op::Reshape, {stacked}, {{"shape", IntList{s[0] * s[1], s[2]}}});
}

// sum(G_t, axes) over the slots: the slot axis too.
ValueId summed_over_slots(GradBuilder& outer, const Graph& grad, const MovedTerm& m) {
  const ValueId x = m.stacked[0];
  const int rank = outer.shape(x).rank() - 1;
  IntList axes = {0};
  if (const Attribute* given = m.core->attr("axes")) {
    for (int64_t a : std::get<IntList>(*given)) axes.push_back((a < 0 ? a + rank : a) + 1);
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a + 1);
  }
  ValueId v = outer.op(Op::Sum, {x}, {{"axes", axes}, {"keepdims", m.core->bool_attr("keepdims")}});
  if (m.core->bool_attr("keepdims")) {
    v = outer.op(Op::Reshape, {v}, {{"shape", grad.type(m.core->result()).shape.dims}});
  }
  return v;
}

}  // namespace

void split_const_gradient(const BodyGradient& body, const std::vector<bool>& per_iteration, int constant,
                          ValueId v, std::vector<MovedTerm>& moved, std::vector<ValueId>& kept) {
  const Graph& grad = body.graph;
  const Node* n = body.backward_node(v);
  if (n != nullptr && n->op == Op::Add && grad.type(n->operands[0]) == grad.type(v) &&
      grad.type(n->operands[1]) == grad.type(v)) {
    split_const_gradient(body, per_iteration, constant, n->operands[0], moved, kept);
    split_const_gradient(body, per_iteration, constant, n->operands[1], moved, kept);
    return;
  }
  if (std::optional<MovedTerm> m = movable_term(body, per_iteration, constant, v)) {
    moved.push_back(std::move(*m));
  } else {
    kept.push_back(v);
  }
}

// Σ_t A_t·B_t = [A_0 … A_T-1]·[B_0; …; B_T-1] (the slots side by side along the
// contracted axis), Σ_t sum(G_t) = sum over the slots too.
ValueId summed_over_iterations(GradBuilder& outer, const Graph& grad, const MovedTerm& m) {
  const Type term = grad.type(m.peeled.empty() ? m.core->result() : m.peeled.front()->result());
  ValueId v;
  if (m.core->op == Op::Matmul) {
    const ValueId lhs = slots_as_lhs(outer, m.stacked[0], m.transposed[0]);
    const ValueId rhs = slots_as_rhs(outer, m.stacked[1], m.transposed[1]);
    v = outer.op(Op::Matmul, {lhs, rhs});
  } else {
    v = summed_over_slots(outer, grad, m);
  }
  for (auto p = m.peeled.rbegin(); p != m.peeled.rend(); ++p) v = outer.op((*p)->op, {v}, (*p)->attrs);
  if (outer.type(v) != term) v = outer.op(Op::Reshape, {v}, {{"shape", term.shape.dims}});
  return v;
}

}  // namespace weft::grad_rules

#include "passes/fold_slices.h"

#include <memory>
#include <utility>
#include <vector>

#include "codegen/operand_layout.h"
#include "ir/fused_kind.h"
#include "ir/scan.h"

namespace weft {
namespace {

// A slice with unit steps that takes less than all of its source.
bool is_window(const Graph& g, const Node& n) {
  if (n.op != Op::Slice) return false;
  if (const Attribute* step = n.attr("step")) {
    for (int64_t s : std::get<IntList>(*step)) {
      if (s != 1) return false;
    }
  }
  return g.type(n.result()).shape.numel() < g.type(n.operands[0]).shape.numel();
}

// The slice node producing operand `v` of kernel `k` when it can be folded into it, else
// nullptr: a window whose source has none of the kernel's result shapes, so the memory
// plan never writes a result in place over the source the kernel reads elsewhere, and
// which the kernel's innermost loop reads with stride 0 or 1 (codegen/operand_layout.h:
// a rule of the generated kernels, asked, not restated here).
const Node* foldable_slice(const Graph& g, const Node& k, ValueId v) {
  const int p = g.value(v).node;
  if (p < 0 || !is_window(g, g.node(p))) return nullptr;
  const Shape& source = g.type(g.node(p).operands[0]).shape;
  for (ValueId r : k.results) {
    if (g.type(r).shape == source) return nullptr;
  }
  if (!codegen::innermost_contiguous(g.type(k.results[0]).shape, g.type(v).shape, source)) return nullptr;
  return &g.node(p);
}

// `k`'s body with input j read through `slices[j]` where it is set: the input takes the
// slice's source type and the body starts with the slice.
std::shared_ptr<Graph> windowed_body(const Graph& g, const Node& k, const std::vector<const Node*>& slices) {
  const Graph& body = *k.body;
  BodyRebuilder rebuilt(body);
  std::vector<ValueId> source(body.inputs().size(), kNoValue);
  for (size_t j = 0; j < body.inputs().size(); ++j) {
    source[j] = slices[j] ? rebuilt.input(j, g.type(slices[j]->operands[0])) : rebuilt.input(j);
  }
  for (size_t j = 0; j < slices.size(); ++j) {
    if (slices[j] == nullptr) continue;
    const ValueId v = body.inputs()[j].value;
    rebuilt.read_as(v, rebuilt.graph().add_node(Op::Slice, {source[j]}, slices[j]->attrs, slices[j]->loc, body.type(v)));
  }
  rebuilt.copy_nodes();
  return std::make_shared<Graph>(std::move(rebuilt).finish());
}

// Folds the slices kernel `k` reads; true when there were any.
bool fold_into(Graph& g, Node& k) {
  std::vector<const Node*> slices;
  bool any = false;
  for (ValueId v : k.operands) {
    slices.push_back(foldable_slice(g, k, v));
    any = any || slices.back() != nullptr;
  }
  if (!any) return false;
  k.body = windowed_body(g, k, slices);
  for (size_t j = 0; j < slices.size(); ++j) {
    if (slices[j]) k.operands[j] = slices[j]->operands[0];
  }
  return true;
}

// Removes the slices nothing reads any more.
void remove_unread_slices(Graph& g) {
  const std::vector<int> uses = g.use_counts();
  std::vector<bool> keep(g.nodes().size(), true);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    keep[i] = g.node(static_cast<int>(i)).op != Op::Slice || uses[g.node(static_cast<int>(i)).result()] > 0;
  }
  g.remove_nodes(keep);
}

}  // namespace

StatusOr<bool> FoldSlicesPass::run(Graph& g) {
  bool changed = false;
  for (Node& n : g.mutable_nodes()) {
    if (n.op == Op::Fused && n.body && fused_kind(n) == FusedKind::elementwise) {
      changed = fold_into(g, n) || changed;
    }
  }
  if (changed) remove_unread_slices(g);
  return changed;
}

}  // namespace weft

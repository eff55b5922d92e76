#include "passes/weight_copies.h"

#include <map>
#include <vector>

#include "training/derived_state.h"

namespace weft {
namespace {

// The value each param input is assigned at the top level, by the input's value.
std::map<ValueId, ValueId> assigned_params(const Graph& g) {
  std::map<ValueId, ValueId> assigned;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Assign) continue;
    const int input = g.input_index(n.operands[0]);
    if (input >= 0 && g.inputs()[input].kind == InputKind::param) assigned[n.operands[0]] = n.operands[1];
  }
  return assigned;
}

bool is_low_precision_cast(const Node& n) {
  if (n.op != Op::Cast) return false;
  const DType to = n.dtype_attr("dtype");
  return is_half(to);
}

}  // namespace

StatusOr<bool> WeightCopiesPass::run(Graph& g) {
  copies_.clear();
  const std::map<ValueId, ValueId> assigned = assigned_params(g);
  std::map<std::pair<ValueId, DType>, ValueId> made;  // (parameter, dtype) -> its copy input
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> keep(n, true);  // the replaced casts go; the new nodes come after n
  for (int i = 0; i < n; ++i) {
    if (!is_low_precision_cast(g.node(i))) continue;
    const Node cast = g.node(i);  // a copy: add_node may move the node vector
    auto it = assigned.find(cast.operands[0]);
    if (it == assigned.end()) continue;
    const Type type = g.type(cast.result());
    keep[i] = false;
    if (auto done = made.find({it->first, type.dtype}); done != made.end()) {
      g.replace_all_uses(cast.result(), done->second);
      continue;
    }
    const std::string param = g.value(it->first).name;
    const ValueId copy = g.add_input(weight_copy_name(param), type, InputKind::state, cast.loc);
    made[{it->first, type.dtype}] = copy;
    g.replace_all_uses(cast.result(), copy);
    const ValueId updated = g.add_node(Op::Cast, {it->second}, cast.attrs, cast.loc, type);
    g.add_node(Op::Assign, {copy, updated}, {}, cast.loc);
    copies_.emplace_back(weight_copy_name(param), param);
  }
  if (copies_.empty()) return false;
  keep.resize(g.nodes().size(), true);
  g.remove_nodes(keep);
  return true;
}

}  // namespace weft

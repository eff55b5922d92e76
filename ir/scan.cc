#include "ir/scan.h"

#include <utility>

#include "ir/shape_rules.h"

namespace weft {

void copy_node(Graph& out, const Graph& src, const Node& n, std::vector<ValueId>& map,
               const std::function<std::string(ValueId)>& name) {
  std::vector<ValueId> args;
  args.reserve(n.operands.size());
  for (ValueId o : n.operands) args.push_back(map[o]);
  const int at = static_cast<int>(out.nodes().size());
  const ValueId first = out.add_node(n.op, std::move(args), n.attrs, n.loc,
                                     n.results.empty() ? std::nullopt : src.value(n.result()).type,
                                     n.results.empty() ? std::string() : name(n.result()));
  out.node(at).body = n.body;
  for (size_t k = 0; k < n.results.size(); ++k) {
    map[n.results[k]] = k == 0 ? first : out.add_result(at, name(n.results[k]), src.value(n.results[k]).type);
  }
}

Attrs scan_attrs(const ScanShape& shape) {
  Attrs attrs{{"length", shape.length}, {"carries", shape.carries}};
  if (shape.consts != 0) attrs["consts"] = shape.consts;
  if (shape.reverse) attrs["reverse"] = true;
  if (shape.remat) attrs["remat"] = true;
  return attrs;
}

StatusOr<std::vector<ValueId>> add_scan(Graph& g, std::vector<ValueId> operands,
                                        const ScanShape& shape,
                                        std::shared_ptr<const Graph> body, Location loc) {
  Node probe{Op::Scan, operands, scan_attrs(shape), {}, loc};
  probe.body = body;
  std::vector<Type> types;
  types.reserve(operands.size());
  for (ValueId v : operands) types.push_back(g.type(v));
  WEFT_ASSIGN_OR_RETURN(Type first, infer_node_type(probe, types));
  const int index = static_cast<int>(g.nodes().size());
  std::vector<ValueId> results{
      g.add_node(Op::Scan, std::move(operands), probe.attrs, std::move(loc), first)};
  g.node(index).body = body;
  for (size_t k = 1; k < body->outputs().size(); ++k) {
    results.push_back(g.add_result(index, "", result_type(g.node(index), k, first)));
  }
  return results;
}

}  // namespace weft

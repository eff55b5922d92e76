#include "ir/scan.h"

#include <algorithm>
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

void copy_loop(Graph& out, const Graph& src, const Node& n, std::vector<ValueId> operands, Attrs attrs,
               std::shared_ptr<const Graph> body, const std::vector<size_t>& keep, std::vector<ValueId>& map) {
  const int at = static_cast<int>(out.nodes().size());
  const auto result = [&](size_t k) -> const Value& { return src.value(n.results[keep[k]]); };
  map[n.results[keep[0]]] =
      out.add_node(n.op, std::move(operands), std::move(attrs), n.loc, result(0).type, result(0).name);
  out.node(at).body = std::move(body);
  for (size_t k = 1; k < keep.size(); ++k) map[n.results[keep[k]]] = out.add_result(at, result(k).name, result(k).type);
}

BodyRebuilder::BodyRebuilder(const Graph& src, bool renumber)
    : src_(src),
      renumber_(renumber),
      out_(src.name()),
      map_(src.num_values(), kNoValue),
      dropped_(src.nodes().size(), false) {
  out_.set_loc(src.loc());
}

std::string BodyRebuilder::name(ValueId v) const {
  const std::string& n = src_.value(v).name;
  const bool numeric = std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
  return renumber_ && numeric ? std::string() : n;
}

ValueId BodyRebuilder::input(size_t k, std::optional<DType> dtype) {
  Type t = src_.type(src_.inputs()[k].value);
  if (dtype) t.dtype = *dtype;
  return input(k, std::move(t));
}

ValueId BodyRebuilder::input(size_t k, Type type) {
  const Input& in = src_.inputs()[k];
  return map_[in.value] = out_.add_input(name(in.value), std::move(type), in.kind, in.loc);
}

void BodyRebuilder::inputs(size_t from, size_t to) {
  for (size_t k = from; k < to; ++k) input(k);
}

ValueId BodyRebuilder::input_for(ValueId v, InputKind kind, Location loc) {
  return map_[v] = out_.add_input(name(v), src_.type(v), kind, std::move(loc));
}

void BodyRebuilder::replace(int node, ValueId v) {
  dropped_[node] = true;
  map_[src_.node(node).result()] = v;
}

void BodyRebuilder::skip(int node) { dropped_[node] = true; }

void BodyRebuilder::copy_nodes() {
  const auto kept = [&](ValueId v) { return name(v); };
  for (size_t j = 0; j < src_.nodes().size(); ++j) {
    if (!dropped_[j]) copy_node(out_, src_, src_.node(static_cast<int>(j)), map_, kept);
  }
}

Graph BodyRebuilder::finish() && {
  for (ValueId o : src_.outputs()) out_.add_output(map_[o]);
  out_.set_declared_output_types(src_.declared_output_types());
  return std::move(out_);
}

Graph rebuild_inputs(const Graph& g, std::vector<ValueId>& map) {
  Graph out(g.name());
  out.set_loc(g.loc());
  map.assign(g.num_values(), kNoValue);
  for (const Input& in : g.inputs()) {
    map[in.value] = out.add_input(g.value(in.value).name, g.type(in.value), in.kind, in.loc);
  }
  return out;
}

void rebuild_outputs(Graph& g, Graph out, const std::vector<ValueId>& map) {
  for (ValueId v : g.outputs()) out.add_output(map[v]);
  out.set_declared_output_types(g.declared_output_types());
  g = std::move(out);
}

Attrs scan_attrs(const ScanShape& shape) {
  Attrs attrs{{"length", shape.length}, {"carries", shape.carries}};
  if (shape.consts != 0) attrs["consts"] = shape.consts;
  if (shape.reverse) attrs["reverse"] = true;
  if (shape.remat) attrs["remat"] = true;
  if (shape.stop >= 0) attrs["stop"] = shape.stop;
  if (shape.active >= 0) attrs["active"] = shape.active;
  return attrs;
}

ScanExit scan_exit(const Node& n) {
  ScanExit e;
  e.stop_carry = n.int_attr("stop");
  if (const int64_t a = n.int_attr("active"); a >= 0) e.active_operand = n.int_attr("consts") + n.int_attr("carries") + a;
  return e;
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
